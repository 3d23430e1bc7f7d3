import Foundation
import Glibc
import Synchronization

/// A TCP listener on loopback that records what each connection sends first (up to the end of
/// the request head) and answers `502 Bad Gateway`: a proxy that must, or must not, be used.
public final class ConnectionRecorder: Sendable {
    private let listener: LoopbackListener
    private let log = Log()

    /// What the connections sent, shared with their threads.
    private final class Log: Sendable {
        let heads = Mutex<[String]>([])
    }

    public init() throws {
        let log = log
        listener = try LoopbackListener(name: "recorder-accept") { connection in
            var timeout = timeval(tv_sec: 2, tv_usec: 0)
            setsockopt(connection, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            var head: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 4096)
            while head.count < 64 * 1024, !String(decoding: head, as: UTF8.self).contains("\r\n\r\n") {
                let count = buffer.withUnsafeMutableBytes { read(connection, $0.baseAddress, $0.count) }
                guard count > 0 else { break }
                head += buffer.prefix(count)
            }
            log.heads.withLock { $0.append(String(decoding: head, as: UTF8.self)) }
            let answer = Array("HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".utf8)
            _ = answer.withUnsafeBytes { Glibc.send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        }
    }

    deinit { stop() }

    public var port: UInt16 { listener.port }

    /// `http://127.0.0.1:<port>`.
    public var url: String { "http://127.0.0.1:\(port)" }

    /// What each connection sent before its head ended (or it closed), in arrival order.
    public var requests: [String] { log.heads.withLock { $0 } }

    public func stop() {
        listener.stop()
    }
}
