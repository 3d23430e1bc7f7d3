import Foundation
import Glibc
import Synchronization

/// A TCP listener on 127.0.0.1 (a free port) that hands each accepted connection to `serve` on
/// a thread of its own, which closes it after; the test servers' common part.
public final class LoopbackListener: @unchecked Sendable {
    // @unchecked: `descriptor` is immutable after init; `stopped` is atomic.
    public let port: UInt16
    private let descriptor: Int32
    private let stopped = Atomic<Bool>(false)

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    public init(name: String, serve: @escaping @Sendable (Int32) -> Void) throws {
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
            throw Failure(description: "cannot listen on loopback: \(String(cString: strerror(errno)))")
        }
        self.descriptor = descriptor
        self.port = UInt16(bigEndian: address.sin_port)
        let thread = Thread { [self] in
            while !stopped.load(ordering: .relaxed) {
                let connection = accept(descriptor, nil, nil)
                if connection < 0 {
                    if errno == EINTR || errno == ECONNABORTED { continue }
                    return
                }
                let worker = Thread {
                    serve(connection)
                    close(connection)
                }
                worker.stackSize = 256 * 1024
                worker.start()
            }
        }
        thread.name = name
        thread.start()
    }

    deinit { stop() }

    /// Stops accepting; connections being served end with their clients.
    public func stop() {
        guard !stopped.exchange(true, ordering: .sequentiallyConsistent) else { return }
        shutdown(descriptor, Int32(SHUT_RDWR))
        close(descriptor)
    }
}
