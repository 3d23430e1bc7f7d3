import Foundation
import Glibc
import ReconcileSystem
import Synchronization
import TestSupport
import Testing

/// Calls `body` with `path` as a Unix socket address (for `bind` and `connect`).
func withUnixAddress(_ path: String, _ body: (UnsafePointer<sockaddr>, socklen_t) -> Int32) -> Int32 {
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    withUnsafeMutableBytes(of: &address.sun_path) { buffer in
        for (index, byte) in path.utf8.enumerated() { buffer[index] = byte }
    }
    return withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
    }
}

/// A raw client, so the tests can misbehave in ways `ControlSocketClient` never would.
final class RawConnection: Sendable {
    let descriptor: Int32

    init(_ path: String, receiveTimeout seconds: Int = 10) throws {
        descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        let descriptor = descriptor
        let connected = withUnixAddress(path) { connect(descriptor, $0, $1) }
        guard connected == 0 else {
            let failure = errno
            close(descriptor)
            throw POSIXError(POSIXErrorCode(rawValue: failure) ?? .EIO)
        }
        var timeout = timeval(tv_sec: seconds, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { close(descriptor) }

    func send(_ text: String) {
        send(Array(text.utf8))
    }

    func send(_ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
            if written <= 0 { return }  // the server may close on us; the test looks at what it read
            offset += written
        }
    }

    func closeWriting() {
        shutdown(descriptor, Int32(SHUT_WR))
    }

    /// Everything up to and including the next newline; nil at end of stream or time-out.
    func readLine() -> String? {
        var line: [UInt8] = []
        var byte: UInt8 = 0
        while true {
            let count = recv(descriptor, &byte, 1, 0)
            if count < 0 && errno == EINTR { continue }
            guard count == 1 else { return nil }
            if byte == 0x0A { return String(decoding: line, as: UTF8.self) }
            line.append(byte)
        }
    }

    /// Whether nothing has come from the server yet: no answer, no end of stream (looks, never
    /// waits).
    var isQuietNow: Bool {
        var probe = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)  // an answer or end of stream
        return poll(&probe, 1, 0) == 0
    }

    /// Whether the server has closed the connection (reads until end of stream or the time-out).
    func isClosedByPeer() -> Bool {
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            if count < 0 && errno == EINTR { continue }
            if count > 0 { continue }
            return count == 0 || errno == ECONNRESET
        }
    }
}

/// A flag a test opens once.
final class Gate: @unchecked Sendable {
    // @unchecked: both fields only under `condition`'s lock.
    private let condition = NSCondition()
    private var isOpen: Bool
    private var waiting = 0

    init(open: Bool = false) { isOpen = open }

    func open() {
        condition.withLock {
            isOpen = true
            condition.broadcast()
        }
    }

    /// Blocks the calling thread until the gate opens (at most `limit` seconds).
    func pass(within limit: TimeInterval = 10) {
        condition.withLock {
            waiting += 1
            condition.broadcast()
            let deadline = Date(timeIntervalSinceNow: limit)
            while !isOpen && condition.wait(until: deadline) {}
        }
    }

    /// Blocks the calling thread until someone waits at the gate (at most `limit` seconds).
    @discardableResult
    func awaitWaiter(within limit: TimeInterval = 10) -> Bool {
        condition.withLock {
            let deadline = Date(timeIntervalSinceNow: limit)
            while waiting == 0 && condition.wait(until: deadline) {}
            return waiting > 0
        }
    }
}

/// Counts the requests a handler saw.
final class Counter: Sendable {
    private let count = Atomic<Int>(0)
    func add() { count.add(1, ordering: .relaxed) }
    var value: Int { count.load(ordering: .relaxed) }
}

@Suite("Control socket server")
struct ControlSocketServerTests {
    let directory = TemporaryDirectory(prefix: "control")
    var path: String { directory.file("run/control.sock") }

    /// Answers `uid=<peer uid> write=<mayWrite> line=<request>`, counting the requests it saw.
    /// The request `slow` is answered only once `gate` opens (or after 10 s).
    static func echo(_ seen: Counter, gate: Gate = Gate(open: true)) -> ControlSocketServer.Handler {
        { line, peer in
            seen.add()
            if line == Array("slow".utf8) { gate.pass() }
            return "uid=\(peer.uid) write=\(peer.mayWrite) line=\(String(decoding: line, as: UTF8.self))"
        }
    }

    @Test("one request, one answer; the socket is 0660; the peer is who the kernel says")
    func roundTrip() async throws {
        let server = try ControlSocketServer(path: path, handler: Self.echo(Counter()))
        defer { server.stop() }
        var info = stat()
        #expect(stat(path, &info) == 0)
        #expect(info.st_mode & 0o777 == 0o660)
        #expect((info.st_mode & S_IFMT) == S_IFSOCK)
        let path = path
        let answer = try await offPool { try ControlSocketClient.request(#"{"v":1,"op":"status"}"#, path: path) }
        #expect(answer == #"uid=\#(geteuid()) write=true line={"v":1,"op":"status"}"#)
    }

    @Test("several requests on one connection; a last request without a newline is still answered")
    func pipelined() async throws {
        let seen = Counter()
        let server = try ControlSocketServer(path: path, handler: Self.echo(seen))
        defer { server.stop() }
        let connection = try RawConnection(path)
        let (lines, closed) = try await offPool {
            connection.send("one\ntwo\nthree")
            connection.closeWriting()
            return ([connection.readLine(), connection.readLine(), connection.readLine()], connection.isClosedByPeer())
        }
        #expect(lines.map { $0?.split(separator: " ").last } == ["line=one", "line=two", "line=three"])
        #expect(closed)
        #expect(seen.value == 3)
    }

    @Test("a request over 64 KiB gets an error and the connection is closed; the handler never sees it")
    func oversized() async throws {
        let seen = Counter()
        let server = try ControlSocketServer(path: path, handler: Self.echo(seen))
        defer { server.stop() }
        let path = path
        let connection = try RawConnection(path)
        let (answer, closed, after) = try await offPool {
            connection.send([UInt8](repeating: UInt8(ascii: "x"), count: 70 * 1024))
            return (connection.readLine(), connection.isClosedByPeer(), try ControlSocketClient.request("after", path: path))
        }
        #expect(answer == #"{"v":1,"ok":false,"error":"request larger than 64 KiB"}"#)
        #expect(closed)
        #expect(after.hasSuffix("line=after"))  // the server still answers others
        #expect(seen.value == 1)
    }

    @Test("a silent peer is dropped when the clock reaches the request time-out, while others are served")
    func silentPeer() async throws {
        let seen = Counter()
        let clock = ManualClock()
        let server = try ControlSocketServer(path: path, requestTimeout: 1, clock: clock, handler: Self.echo(seen))
        defer { server.stop() }
        let path = path
        let silent = try RawConnection(path, receiveTimeout: 10)
        let half = try RawConnection(path, receiveTimeout: 10)
        await clock.waitForTimers(2)  // both connections taken, their deadlines set
        half.send(#"{"v":1,"op":"sta"#)  // half a request, then nothing
        let meanwhile = try await offPool { try ControlSocketClient.request("meanwhile", path: path) }
        #expect(meanwhile.hasSuffix("line=meanwhile"))
        clock.advance(by: .milliseconds(999))
        #expect(silent.isQuietNow && half.isQuietNow, "dropped before the request time-out")
        clock.advance(by: .milliseconds(1))
        let (halfAnswer, silentClosed, halfClosed) = try await offPool { (half.readLine(), silent.isClosedByPeer(), half.isClosedByPeer()) }
        #expect(halfAnswer == #"{"v":1,"ok":false,"error":"the request did not arrive whole within 1 s"}"#)
        #expect(silentClosed && halfClosed)
        #expect(seen.value == 1)
    }

    @Test("a peer that trickles its request a byte at a time is dropped at the request's deadline, not kept for as long as it likes")
    func tricklingPeer() async throws {
        let seen = Counter()
        let clock = ManualClock()
        let server = try ControlSocketServer(path: path, requestTimeout: 1, clock: clock, handler: Self.echo(seen))
        defer { server.stop() }
        let slow = try RawConnection(path, receiveTimeout: 10)
        await clock.waitForTimers(1)
        // A byte every 199 ms, five of them (995 ms): never silent for long, never done. The
        // deadline is absolute: the bytes do not move it.
        let bytes = Array(#"{"v":"#.utf8)
        #expect(bytes.count == 5)
        for byte in bytes {
            slow.send([byte])
            clock.advance(by: .milliseconds(199))
        }
        #expect(slow.isQuietNow, "dropped before the request's deadline")
        clock.advance(by: .milliseconds(5))
        let (answer, closed) = try await offPool { (slow.readLine(), slow.isClosedByPeer()) }
        #expect(answer == #"{"v":1,"ok":false,"error":"the request did not arrive whole within 1 s"}"#)
        #expect(closed)
        #expect(seen.value == 0)
    }

    @Test("a request in by its deadline is answered, and the next one has a deadline of its own")
    func deadlineMovesWithEachAnswer() async throws {
        let seen = Counter()
        let clock = ManualClock()
        let server = try ControlSocketServer(path: path, requestTimeout: 1, clock: clock, handler: Self.echo(seen))
        defer { server.stop() }
        let connection = try RawConnection(path, receiveTimeout: 10)
        await clock.waitForTimers(1)
        clock.advance(by: .milliseconds(900))
        connection.send("first\n")
        let first = try await offPool { connection.readLine() }
        #expect(first?.hasSuffix("line=first") == true)
        // 1.8 s after the connection, 0.9 s after the answer: still within the second request's time.
        clock.advance(by: .milliseconds(900))
        connection.send("second\n")
        let second = try await offPool { connection.readLine() }
        #expect(second?.hasSuffix("line=second") == true)
        #expect(seen.value == 2)
    }

    @Test("a slow answer to one peer does not hold up another")
    func slowHandler() async throws {
        // The slow request is answered only after the quick one is: a server that served one
        // request at a time would leave the quick one unanswered until the client gave up.
        let gate = Gate()
        let server = try ControlSocketServer(path: path, handler: Self.echo(Counter(), gate: gate))
        defer { server.stop() }
        let path = path
        let slow = try RawConnection(path, receiveTimeout: 20)
        let (quick, slowAnswer) = try await offPool {
            slow.send("slow\n")
            gate.awaitWaiter()
            let quick = try? ControlSocketClient.request("quick", path: path, timeout: .seconds(8))
            gate.open()
            return (quick, slow.readLine())
        }
        #expect(quick?.hasSuffix("line=quick") == true)
        #expect(slowAnswer?.hasSuffix("line=slow") == true)
    }

    @Test("more than 32 peers at once: the next is told to try again, and served once others leave")
    func tooManyPeers() async throws {
        let server = try ControlSocketServer(path: path, requestTimeout: 30, handler: Self.echo(Counter()))
        defer { server.stop() }
        let path = path
        var held: [RawConnection] = []
        for _ in 0..<ControlSocketServer.maximumConnections { held.append(try RawConnection(path)) }
        let extra = try RawConnection(path)
        let refusal = try await offPool { extra.readLine() }
        #expect(refusal == #"{"v":1,"ok":false,"error":"too many connections; try again","busy":true}"#)
        held.removeAll()
        #expect(await eventually(timeout: .seconds(10)) { server.connectionCount == 0 }, "\(server.connectionCount) connections left")
        let again = try await offPool { try ControlSocketClient.request("again", path: path) }
        #expect(again.hasSuffix("line=again"))
    }

    @Test("stop answers the request in hand, reads no further one, and returns once the handler is done")
    func stopWaitsForRequestsInHand() async throws {
        let gate = Gate()
        let server = try ControlSocketServer(path: path, handler: Self.echo(Counter(), gate: gate))
        let connection = try RawConnection(path, receiveTimeout: 10)
        let path = path
        let stopped = Counter()
        let stopping = Thread {
            server.stop(timeout: .seconds(120))  // however slow the machine, the handler's end is what ends it
            stopped.add()
        }
        try await offPool { connection.send("slow\n"); gate.awaitWaiter() }
        stopping.start()
        // Stop has begun (it removes the socket file first) while the handler is held.
        #expect(await eventually(timeout: .seconds(10)) { !FileManager.default.fileExists(atPath: path) })
        #expect(stopped.value == 0, "stop returned with a request in hand")
        gate.open()
        let (answer, closed) = try await offPool {
            let answer = connection.readLine()
            connection.send("after-stop\n")
            return (answer, connection.isClosedByPeer())
        }
        #expect(answer?.hasSuffix("line=slow") == true)
        #expect(closed)  // "after-stop" was never read
        #expect(await eventually(timeout: .seconds(10)) { stopped.value == 1 })
        #expect(server.connectionCount == 0)
    }

    @Test("a stale socket file from a crash is replaced; a live one is not taken over")
    func staleAndLive() async throws {
        let path = path
        // A socket file nobody listens on, as a killed daemon leaves it.
        try FileManager.default.createDirectory(atPath: directory.file("run"), withIntermediateDirectories: true)
        let orphan = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        let bound = withUnixAddress(path) { bind(orphan, $0, $1) }
        #expect(bound == 0)
        close(orphan)
        #expect(FileManager.default.fileExists(atPath: path))
        #expect(throws: ControlSocketClient.Failure.notRunning(path: path)) { try ControlSocketClient.request("x", path: path) }

        let seen = Counter()
        let server = try ControlSocketServer(path: path, handler: Self.echo(seen))
        defer { server.stop() }
        #expect(try await offPool { try ControlSocketClient.request("first", path: path) }.hasSuffix("line=first"))

        #expect {
            _ = try ControlSocketServer(path: path, handler: Self.echo(seen))
        } throws: { error in
            String(describing: error).contains("another process answers on the control socket")
        }
        #expect(try await offPool { try ControlSocketClient.request("still", path: path) }.hasSuffix("line=still"))
        server.stop()
        #expect(!FileManager.default.fileExists(atPath: path))
    }
}
