import CLinux
import Dispatch
import Foundation
import Glibc
import ReconcileFoundation
import Synchronization

/// The daemon's control socket (DESIGN §10): a Unix stream socket, mode 0660 in the daemon's
/// group, one JSON request per line and one answer per line.
///
/// Defensive: at most 32 connections at once, the last of them kept for root and the daemon's own
/// user (so that a crowd of other clients never locks out `status`, `reload` or `retry` from an
/// administrator); a request over 64 KiB gets an error and the connection is closed; each request
/// must arrive whole within 5 s of the connection or of the previous answer — an absolute
/// deadline, so a peer that sends a byte every few seconds is dropped like a silent one; the
/// peer's credentials (`SO_PEERCRED`) are read by the kernel, not claimed by the client. A stale
/// socket file left by a crash is replaced; a live one (another daemon) is not.
///
/// The request deadline is kept on the daemon's clock (``DaemonClock``): its timer wakes the
/// connection's `poll` through an eventfd, so a test moves the clock past it instead of waiting.
///
/// Each connection has a thread of its own, and the handler runs on it: a handler may block (on
/// the store) without taking a thread from Swift's small cooperative pool.
public final class ControlSocketServer: @unchecked Sendable {
    // @unchecked: `listener` and `path` are immutable; `connections` is a mutex, `stopped` atomic.

    /// Who is on the other end.
    public struct Peer: Sendable, Hashable {
        public var pid: Int32
        public var uid: UInt32
        public var gid: UInt32
        /// The user's name, when the system knows it.
        public var userName: String?
        /// Root, the daemon's own user, or a member of the daemon's group.
        public var mayWrite: Bool
    }

    /// Answers one request line; returns the answer line (without the newline). Called on the
    /// connection's own thread.
    public typealias Handler = @Sendable ([UInt8], Peer) -> String

    public let path: String
    private let listener: Int32
    private let handler: Handler
    /// The connections being served.
    private let connections = Mutex<Set<Int32>>([])
    private let stopped = Atomic<Bool>(false)
    public static let maximumConnections = 32
    /// Connections kept for root and the daemon's own user, out of ``maximumConnections``.
    public static let reservedConnections = 1
    public static let maximumRequestSize = 64 * 1024
    /// Seconds a request may take to arrive whole, counted from the connection or the previous
    /// answer.
    public let requestTimeout: Int
    /// The clock the request deadlines are kept on.
    private let clock: any DaemonClock

    /// Binds and listens.
    ///
    /// - Throws: ``SystemError`` when the path is taken by a live socket or cannot be bound.
    public init(
        path: String, requestTimeout: Int = 5, clock: any DaemonClock = SystemClock(), handler: @escaping Handler
    ) throws(SystemError) {
        self.path = path
        self.requestTimeout = requestTimeout
        self.clock = clock
        self.handler = handler
        try FileSystem.makeDirectory(FileSystem.parentDirectory(of: path), mode: 0o755)
        if FileSystem.exists(path) {
            if Self.isListening(path) {
                throw SystemError(errno: EADDRINUSE, operation: "bind (another process answers on the control socket)", path: path)
            }
            unlink(path)  // stale, from a crash
        }
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw SystemError.current("socket", path: path) }
        var address = try Self.address(path)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0 else {
            let error = SystemError.current("bind", path: path)
            close(descriptor)
            throw error
        }
        // 0660 in the daemon's group: operators in the group may connect, others may not.
        chmod(path, 0o660)
        guard listen(descriptor, 64) == 0 else {
            let error = SystemError.current("listen", path: path)
            close(descriptor)
            unlink(path)
            throw error
        }
        listener = descriptor
        let thread = Thread { [self] in self.acceptLoop() }
        thread.name = "reconcile-control"
        thread.start()
    }

    /// Stops listening, removes the socket file, reads no further request on open connections,
    /// and waits (up to `timeout`) for the requests in hand to be answered, so that nothing the
    /// handler uses is closed under it.
    public func stop(timeout: Duration = .seconds(5)) {
        guard !stopped.exchange(true, ordering: .sequentiallyConsistent) else { return }
        // Shut down, not closed: that wakes the accept loop, which closes it on its way out.
        // Closed here, its number could be reused (by another server in the process) before
        // the loop's next accept, which would take that one's connections.
        shutdown(listener, Int32(SHUT_RDWR))
        unlink(path)
        connections.withLock { open in
            for connection in open { shutdown(connection, Int32(SHUT_RD)) }
        }
        let deadline = ContinuousClock.now + timeout
        while connections.withLock({ !$0.isEmpty }) && ContinuousClock.now < deadline {
            usleep(5_000)
        }
    }

    /// How many connections are being served.
    public var connectionCount: Int { connections.withLock { $0.count } }

    deinit {
        stop()
    }

    static func address(_ path: String) throws(SystemError) -> sockaddr_un {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            throw SystemError(errno: ENAMETOOLONG, operation: "bind", path: path)
        }
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            for (index, byte) in bytes.enumerated() { buffer[index] = byte }
        }
        return address
    }

    /// Whether something answers on `path`.
    public static func isListening(_ path: String) -> Bool {
        guard let descriptor = try? ControlSocketClient.connect(path) else { return false }
        close(descriptor)
        return true
    }

    private func acceptLoop() {
        defer { close(listener) }
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
            _ = fcntl(connection, F_SETFD, FD_CLOEXEC)
            // The last slot is root's and the daemon's own user's: from the kernel, at once.
            var credentials = reconcile_peer_credentials()
            let administrator = reconcile_get_peer_credentials(connection, &credentials) == 0
                && (credentials.uid == 0 || credentials.uid == geteuid())
            let admitted = connections.withLock { open -> Bool in
                let limit = Self.maximumConnections - (administrator ? 0 : Self.reservedConnections)
                guard open.count < limit, !stopped.load(ordering: .sequentiallyConsistent) else { return false }
                open.insert(connection)
                return true
            }
            guard admitted else {
                if !stopped.load(ordering: .relaxed) { _ = Self.send(connection, ControlResponseLine.busy) }
                close(connection)
                continue
            }
            // The first request's deadline counts from here, before the connection is served.
            let alarm = RequestAlarm(clock: clock)
            alarm.arm(at: clock.instant() + .seconds(requestTimeout))
            let thread = Thread { [self] in
                self.serve(connection, alarm: alarm)
                alarm.close()
                self.connections.withLock { open in
                    open.remove(connection)
                    close(connection)  // under the lock: `stop` never shuts down a reused descriptor
                }
            }
            thread.stackSize = 256 * 1024
            thread.start()
        }
    }

    private func serve(_ connection: Int32, alarm: RequestAlarm) {
        var sendTimeout = timeval(tv_sec: requestTimeout, tv_usec: 0)
        setsockopt(connection, SOL_SOCKET, SO_SNDTIMEO, &sendTimeout, socklen_t(MemoryLayout<timeval>.size))
        guard let peer = Self.peer(of: connection) else { return }
        var buffer: [UInt8] = []
        // The whole of the next request must be in by the alarm, however it trickles in.
        while true {
            if let newline = buffer.firstIndex(of: 0x0A) {
                let line = Array(buffer[..<newline])
                buffer.removeFirst(newline + 1)
                let answer = respond(line, peer: peer)
                guard Self.send(connection, answer) else { return }
                alarm.arm(at: clock.instant() + .seconds(requestTimeout))
                continue
            }
            if buffer.count > Self.maximumRequestSize {
                _ = Self.send(connection, ControlResponseLine.tooLarge)
                return
            }
            var descriptors = [
                pollfd(fd: connection, events: Int16(POLLIN), revents: 0),
                pollfd(fd: alarm.descriptor, events: Int16(POLLIN), revents: 0),
            ]
            let ready = poll(&descriptors, 2, -1)
            if ready < 0 && errno != EINTR { return }
            guard ready > 0 else { continue }
            // What is in the socket now arrived in time, even when the alarm woke us too: a
            // whole request (or one too large) is dealt with above.
            let input = Self.readAvailable(connection, into: &buffer)
            if buffer.contains(0x0A) || buffer.count > Self.maximumRequestSize { continue }
            switch input {
            case .failed:
                return
            case .ended:
                // End of input: a last request without a newline still counts.
                if !buffer.isEmpty { _ = Self.send(connection, respond(buffer, peer: peer)) }
                return
            case .open:
                guard alarm.hasRung else { continue }
                if !buffer.isEmpty { _ = Self.send(connection, ControlResponseLine.tooSlow(requestTimeout)) }
                return
            }
        }
    }

    /// What became of a connection's input after ``readAvailable(_:into:)``.
    private enum Input {
        /// Nothing more to read for now.
        case open
        /// The peer closed its end.
        case ended
        /// The connection failed.
        case failed
    }

    /// Appends what the socket holds now, without waiting (and no more once the buffer is past
    /// the size limit).
    private static func readAvailable(_ connection: Int32, into buffer: inout [UInt8]) -> Input {
        var chunk = [UInt8](repeating: 0, count: 4096)
        while buffer.count <= maximumRequestSize {
            let count = chunk.withUnsafeMutableBytes { recv(connection, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if count > 0 {
                buffer.append(contentsOf: chunk[0..<count])
                continue
            }
            if count == 0 { return .ended }
            if errno == EINTR { continue }
            return errno == EAGAIN || errno == EWOULDBLOCK ? .open : .failed
        }
        return .open
    }

    private func respond(_ line: [UInt8], peer: Peer) -> String {
        handler(line, peer)
    }

    static func send(_ connection: Int32, _ line: String) -> Bool {
        ControlSocketClient.sendLine(connection, line) == nil
    }

    /// The peer's credentials, from the kernel.
    static func peer(of connection: Int32) -> Peer? {
        var credentials = reconcile_peer_credentials()
        guard reconcile_get_peer_credentials(connection, &credentials) == 0 else { return nil }
        let name = UserDatabase.userName(of: credentials.uid)
        let mayWrite = credentials.uid == 0 || credentials.uid == geteuid() || credentials.gid == getegid()
            || (name.map { UserDatabase.groups(of: $0, primary: credentials.gid).contains(getegid()) } ?? false)
        return Peer(pid: credentials.pid, uid: credentials.uid, gid: credentials.gid, userName: name, mayWrite: mayWrite)
    }
}

/// Fixed answers the server gives on its own.
enum ControlResponseLine {
    static let busy = #"{"v":1,"ok":false,"error":"too many connections; try again","busy":true}"#
    static let tooLarge = #"{"v":1,"ok":false,"error":"request larger than 64 KiB"}"#
    static func tooSlow(_ seconds: Int) -> String {
        #"{"v":1,"ok":false,"error":"the request did not arrive whole within \#(seconds) s"}"#
    }
}
