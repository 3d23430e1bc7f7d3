import Foundation
import Glibc
import Synchronization

/// A Unix datagram socket a test binds in place of systemd's: `NOTIFY_SOCKET` or journald's
/// native socket. A thread of its own collects every datagram with its arrival time until
/// ``close()``.
public final class DatagramListener: Sendable {
    /// One datagram as it arrived.
    public struct Datagram: Sendable {
        public var bytes: [UInt8]
        public var arrived: ContinuousClock.Instant
        public var text: String { String(decoding: bytes, as: UTF8.self) }
    }

    public let path: String
    private let descriptor: Int32
    private let received = Mutex<[Datagram]>([])
    private let closed = Atomic<Bool>(false)

    /// Binds `path` (which must not exist) and starts collecting.
    public init(path: String) throws {
        self.path = path
        let descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw ListenerError("socket: \(String(cString: strerror(errno)))") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { throw ListenerError("path too long: \(path)") }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0 else {
            let reason = String(cString: strerror(errno))
            Glibc.close(descriptor)
            throw ListenerError("bind \(path): \(reason)")
        }
        chmod(path, 0o777)  // a daemon running as another user sends here too
        // Wake the reading thread now and then, so that close() is noticed.
        var timeout = timeval(tv_sec: 0, tv_usec: 100_000)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        self.descriptor = descriptor
        let thread = Thread { [self] in self.collect() }
        thread.start()
    }

    private func collect() {
        var buffer = [UInt8](repeating: 0, count: 256 * 1024)
        while !closed.load(ordering: .relaxed) {
            let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            if count > 0 {
                let datagram = Datagram(bytes: Array(buffer[0..<count]), arrived: .now)
                received.withLock { $0.append(datagram) }
            }
        }
        Glibc.close(descriptor)
    }

    /// What arrived so far, in order.
    public var datagrams: [Datagram] { received.withLock { $0 } }

    /// Stops collecting and removes the socket file.
    public func close() {
        closed.store(true, ordering: .relaxed)
        unlink(path)
    }

    deinit {
        if !closed.load(ordering: .relaxed) {
            closed.store(true, ordering: .relaxed)
            unlink(path)
        }
    }
}

/// A listener that could not be set up.
public struct ListenerError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}
