import Foundation
import Glibc
import Synchronization

/// A TCP listener on loopback that records what each connection sends first (up to the end of
/// the request head) and answers `502 Bad Gateway`: a proxy that must, or must not, be used.
public final class ConnectionRecorder: @unchecked Sendable {
    // @unchecked: `listener` is immutable after init; `heads` is behind a mutex.
    public let port: UInt16
    private let listener: Int32
    private let stopped = Atomic<Bool>(false)
    private let heads = Mutex<[String]>([])

    public init() throws {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, length) == 0 && getsockname(descriptor, $0, &length) == 0 }
        }
        guard descriptor >= 0, bound, listen(descriptor, 64) == 0 else {
            if descriptor >= 0 { close(descriptor) }
            throw POSIXError(.EADDRNOTAVAIL)
        }
        listener = descriptor
        port = UInt16(bigEndian: address.sin_port)
        let thread = Thread { [self] in acceptLoop() }
        thread.name = "recorder-accept"
        thread.start()
    }

    deinit { stop() }

    /// `http://127.0.0.1:<port>`.
    public var url: String { "http://127.0.0.1:\(port)" }

    /// What each connection sent before its head ended (or it closed), in arrival order.
    public var requests: [String] { heads.withLock { $0 } }

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
                return
            }
            let thread = Thread { [self] in
                defer { close(connection) }
                var timeout = timeval(tv_sec: 2, tv_usec: 0)
                setsockopt(connection, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
                var head: [UInt8] = []
                var buffer = [UInt8](repeating: 0, count: 4096)
                while head.count < 64 * 1024, !String(decoding: head, as: UTF8.self).contains("\r\n\r\n") {
                    let count = buffer.withUnsafeMutableBytes { read(connection, $0.baseAddress, $0.count) }
                    guard count > 0 else { break }
                    head += buffer.prefix(count)
                }
                heads.withLock { $0.append(String(decoding: head, as: UTF8.self)) }
                let answer = Array("HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".utf8)
                _ = answer.withUnsafeBytes { Glibc.send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            }
            thread.start()
        }
    }
}
