import Foundation
import Glibc
import ReconcileCore
import Synchronization
import ReconcileFoundation

/// A small HTTP/1.1 server on loopback for tests and benchmarks: one thread per connection,
/// keep-alive, `Content-Length` bodies. Each reply may carry a fault (delay, reset, truncated or
/// slow body) so that clients can be tried against a misbehaving server.
public final class MockHTTPServer: @unchecked Sendable {
    // @unchecked: `listener` is immutable after init; `stopped` is atomic; connections are
    // owned by their threads.
    public let port: UInt16
    private let listener: Int32
    private let stopped = Atomic<Bool>(false)
    private let handler: @Sendable (ServerRequest) -> ServerReply
    private let openConnections = Atomic<Int>(0)
    /// Connections beyond this are closed at once.
    public let maximumConnections: Int

    /// Listens on `host:port` (port 0 picks a free one; see ``port``).
    public init(
        host: String = "127.0.0.1", port: UInt16 = 0, maximumConnections: Int = 1024,
        handler: @escaping @Sendable (ServerRequest) -> ServerReply
    ) throws {
        guard LoopbackAddress.isLoopback(host: host) else {
            throw MockServerError("the mock listens on loopback only, not \(host)")
        }
        let ipv6 = host.contains(":")
        let descriptor = socket(ipv6 ? AF_INET6 : AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw MockServerError("socket: \(String(cString: strerror(errno)))") }
        var yes: Int32 = 1
        setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var bound: Int32
        var actualPort: UInt16 = 0
        if ipv6 {
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_port = port.bigEndian
            address.sin6_addr = in6addr_loopback
            bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) }
            }
            var length = socklen_t(MemoryLayout<sockaddr_in6>.size)
            _ = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
            }
            actualPort = UInt16(bigEndian: address.sin6_port)
        } else {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = port.bigEndian
            address.sin_addr.s_addr = inet_addr(host == "localhost" ? "127.0.0.1" : host)
            bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            _ = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
            }
            actualPort = UInt16(bigEndian: address.sin_port)
        }
        guard bound == 0, listen(descriptor, 512) == 0 else {
            let reason = String(cString: strerror(errno))
            close(descriptor)
            throw MockServerError("cannot listen on \(host):\(port): \(reason)")
        }
        self.listener = descriptor
        self.port = actualPort
        self.handler = handler
        self.maximumConnections = maximumConnections
        let thread = Thread { [self] in self.acceptLoop() }
        thread.name = "mock-accept"
        thread.start()
    }

    /// Stops accepting; open connections end when their clients close them.
    public func stop() {
        guard !stopped.exchange(true, ordering: .sequentiallyConsistent) else { return }
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
    }

    private func acceptLoop() {
        while !stopped.load(ordering: .relaxed) {
            let connection = accept(listener, nil, nil)
            if connection < 0 {
                if errno == EINTR || errno == ECONNABORTED { continue }
                if errno == EMFILE || errno == ENFILE {
                    usleep(10_000)
                    continue
                }
                return
            }
            if openConnections.add(1, ordering: .relaxed).newValue > maximumConnections {
                openConnections.subtract(1, ordering: .relaxed)
                close(connection)
                continue
            }
            _ = fcntl(connection, F_SETFD, FD_CLOEXEC)
            var yes: Int32 = 1
            setsockopt(connection, Int32(IPPROTO_TCP), TCP_NODELAY, &yes, socklen_t(MemoryLayout<Int32>.size))
            let thread = Thread { [self] in
                self.serve(connection)
                self.openConnections.subtract(1, ordering: .relaxed)
            }
            thread.stackSize = 256 * 1024
            thread.start()
        }
    }

    /// Serves requests on one connection until the client closes it or a fault ends it.
    private func serve(_ connection: Int32) {
        var reader = ConnectionReader(descriptor: connection)
        defer { close(connection) }
        while true {
            guard let request = reader.nextRequest() else { return }
            let reply = handler(request)
            if reply.delay > .zero { Thread.sleep(forTimeInterval: reply.delay.inSeconds) }
            guard write(reply, to: connection) else { return }
            if request.header("connection")?.lowercased() == "close" { return }
        }
    }

    /// Writes a reply with its fault; false when the connection must end.
    private func write(_ reply: ServerReply, to connection: Int32) -> Bool {
        var head = "HTTP/1.1 \(reply.status) \(Self.reason(reply.status))\r\n"
        var headers = reply.headers
        if !headers.contains(where: { $0.name.lowercased() == "content-type" }) {
            headers.append(HTTPHeader("Content-Type", "application/json"))
        }
        headers.append(HTTPHeader("Content-Length", String(reply.body.count)))
        for header in headers { head += "\(header.name): \(header.value)\r\n" }
        head += "\r\n"
        switch reply.fault {
        case .none:
            return send(connection, Array(head.utf8) + reply.body)
        case .reset:
            var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
            setsockopt(connection, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
            return false
        case .resetMidBody:
            _ = send(connection, Array(head.utf8) + reply.body.prefix(reply.body.count / 2))
            var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
            setsockopt(connection, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
            return false
        case .truncated:
            _ = send(connection, Array(head.utf8) + reply.body.prefix(max(1, reply.body.count / 2)))
            return false
        case .slowBody(let pause):
            guard send(connection, Array(head.utf8)) else { return false }
            for chunk in stride(from: 0, to: reply.body.count, by: 8) {
                Thread.sleep(forTimeInterval: pause.inSeconds)
                guard send(connection, Array(reply.body[chunk..<min(chunk + 8, reply.body.count)])) else { return false }
            }
            return true
        }
    }

    private func send(_ connection: Int32, _ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { Glibc.send(connection, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
            if written < 0 {
                if errno == EINTR { continue }
                return false
            }
            offset += written
        }
        return true
    }

    static func reason(_ status: Int) -> String {
        switch status {
        case 200: "OK"
        case 202: "Accepted"
        case 302: "Found"
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 408: "Request Timeout"
        case 409: "Conflict"
        case 422: "Unprocessable Content"
        case 425: "Too Early"
        case 429: "Too Many Requests"
        case 500: "Internal Server Error"
        case 502: "Bad Gateway"
        case 503: "Service Unavailable"
        case 504: "Gateway Timeout"
        default: "Status"
        }
    }
}

/// A request as the mock's handler sees it.
public struct ServerRequest: Sendable {
    public var method: String
    /// The path without the query.
    public var path: String
    public var query: String
    /// Header names lower-cased.
    public var headers: [HTTPHeader]
    public var body: [UInt8]

    public func header(_ name: String) -> String? {
        headers.first { $0.name == name.lowercased() }?.value
    }
}

/// The handler's answer, and how to misbehave while giving it.
public struct ServerReply: Sendable {
    /// A way to break the exchange.
    public enum Fault: Sendable, Hashable {
        case none
        /// Reset the connection without answering.
        case reset
        /// Send the head and half the body, then reset.
        case resetMidBody
        /// Send half the body and close (the length promised more).
        case truncated
        /// Send the body eight bytes at a time with a pause between.
        case slowBody(Duration)
    }

    public var status: Int
    public var headers: [HTTPHeader]
    public var body: [UInt8]
    public var delay: Duration
    public var fault: Fault

    public init(status: Int, headers: [HTTPHeader] = [], body: [UInt8] = [], delay: Duration = .zero, fault: Fault = .none) {
        self.status = status
        self.headers = headers
        self.body = body
        self.delay = delay
        self.fault = fault
    }

    public static func json(_ status: Int, _ value: JSONValue, headers: [HTTPHeader] = []) -> ServerReply {
        ServerReply(status: status, headers: headers, body: JSONWriter.bytes(value))
    }
}

/// A mock that cannot start.
public struct MockServerError: Error, CustomStringConvertible {
    public var description: String
    init(_ description: String) { self.description = description }
}

/// Reads HTTP/1.1 requests from a connection, with limits (64 KiB of head, 16 MiB of body).
struct ConnectionReader {
    let descriptor: Int32
    var buffer: [UInt8] = []

    init(descriptor: Int32) {
        self.descriptor = descriptor
    }

    mutating func nextRequest() -> ServerRequest? {
        guard let headEnd = readUntilHeadEnd() else { return nil }
        let head = String(decoding: buffer[0..<headEnd], as: UTF8.self)
        buffer.removeFirst(headEnd + 4)
        var lines = head.split(separator: "\r\n", omittingEmptySubsequences: false).map(String.init)
        guard !lines.isEmpty else { return nil }
        let requestLine = lines.removeFirst().split(separator: " ")
        guard requestLine.count >= 2 else { return nil }
        var headers: [HTTPHeader] = []
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers.append(HTTPHeader(line[..<colon].lowercased(), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)))
        }
        let length = headers.first { $0.name == "content-length" }.flatMap { Int($0.value) } ?? 0
        guard length >= 0, length <= 16 << 20, readBody(length) else { return nil }
        let body = Array(buffer.prefix(length))
        buffer.removeFirst(length)
        let target = String(requestLine[1])
        let path = target.split(separator: "?", maxSplits: 1).first.map(String.init) ?? target
        let query = target.contains("?") ? String(target.split(separator: "?", maxSplits: 1)[1]) : ""
        return ServerRequest(method: String(requestLine[0]), path: path, query: query, headers: headers, body: body)
    }

    mutating func readUntilHeadEnd() -> Int? {
        while true {
            if let end = find([13, 10, 13, 10]) { return end }
            guard buffer.count < 64 * 1024, fill() else { return nil }
        }
    }

    mutating func readBody(_ length: Int) -> Bool {
        while buffer.count < length {
            guard fill() else { return false }
        }
        return true
    }

    mutating func fill() -> Bool {
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            let count = chunk.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { return false }
            buffer.append(contentsOf: chunk[0..<count])
            return true
        }
    }

    func find(_ pattern: [UInt8]) -> Int? {
        guard buffer.count >= pattern.count else { return nil }
        for start in 0...(buffer.count - pattern.count) where buffer[start] == pattern[0] {
            if buffer[start..<start + pattern.count].elementsEqual(pattern) { return start }
        }
        return nil
    }
}
