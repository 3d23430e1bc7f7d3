import Foundation
import Glibc

/// `reconcilectl`'s side of the control socket: one request line, one answer line.
public enum ControlSocketClient {
    /// Why the daemon could not be asked.
    public enum Failure: Error, Sendable, Hashable, CustomStringConvertible {
        /// Nothing listens: the daemon is not running.
        case notRunning(path: String)
        /// The socket exists but this user may not connect.
        case permissionDenied(path: String)
        /// The daemon did not answer in time.
        case timedOut(path: String)
        case failed(String)

        public var description: String {
            switch self {
            case .notRunning(let path): "reconciled is not running (nothing answers on \(path))"
            case .permissionDenied(let path): "permission denied on \(path); run as root or as a member of the daemon's group"
            case .timedOut(let path): "reconciled did not answer on \(path) in time"
            case .failed(let reason): reason
            }
        }
    }

    /// Connects to the socket.
    static func connect(_ path: String) throws(Failure) -> Int32 {
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw .failed("socket: \(String(cString: strerror(errno)))") }
        guard var address = try? ControlSocketServer.address(path) else {
            close(descriptor)
            throw .failed("the socket path is too long: \(path)")
        }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard connected == 0 else {
            let failure = errno
            close(descriptor)
            switch failure {
            case ENOENT, ECONNREFUSED, ENOTDIR: throw .notRunning(path: path)
            case EACCES, EPERM: throw .permissionDenied(path: path)
            default: throw .failed("connect \(path): \(String(cString: strerror(failure)))")
            }
        }
        return descriptor
    }

    /// Sends one request line and waits (up to `timeout`) for the answer line.
    public static func request(_ line: String, path: String, timeout: Duration = .seconds(30)) throws(Failure) -> String {
        let descriptor = try connect(path)
        defer { close(descriptor) }
        var interval = timeval(tv_sec: Int(timeout.components.seconds), tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &interval, socklen_t(MemoryLayout<timeval>.size))
        // A server that refuses the connection (every slot taken) answers and closes at once,
        // perhaps before the request is written: its answer still counts.
        let sendFailure = sendLine(descriptor, line)
        var answer: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while !answer.contains(0x0A) {
            let count = chunk.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            if count < 0 {
                if errno == EINTR { continue }
                if errno == EAGAIN || errno == EWOULDBLOCK { throw .timedOut(path: path) }
                if let sendFailure { throw .failed("sending to \(path): \(String(cString: strerror(sendFailure)))") }
                throw .failed("reading from \(path): \(String(cString: strerror(errno)))")
            }
            if count == 0 { break }
            answer.append(contentsOf: chunk[0..<count])
            if answer.count > 16 << 20 { throw .failed("the answer from \(path) is too large") }
        }
        guard let newline = answer.firstIndex(of: 0x0A) else {
            if let sendFailure { throw .failed("sending to \(path): \(String(cString: strerror(sendFailure)))") }
            throw .failed("reconciled closed the connection without answering")
        }
        return String(decoding: answer[..<newline], as: UTF8.self)
    }

    /// Sends `line` and a newline, all of it; the errno on failure. Never raises SIGPIPE.
    static func sendLine(_ descriptor: Int32, _ line: String) -> Int32? {
        let bytes = Array((line + "\n").utf8)
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { send(descriptor, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
            if written < 0 {
                if errno == EINTR { continue }
                return errno
            }
            offset += written
        }
        return nil
    }
}
