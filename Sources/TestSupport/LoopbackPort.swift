import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Ports for the servers tests start themselves on loopback.
public enum LoopbackPort {
    /// A TCP port on 127.0.0.1 that nothing listens on now (the kernel's pick, not a random
    /// guess that may land on another test's server).
    public static func free() throws -> Int {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw LoopbackPortError("cannot open a socket: \(String(cString: strerror(errno)))") }
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0 else { throw LoopbackPortError("cannot find a free port: \(String(cString: strerror(errno)))") }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}

/// Why no free port was found.
public struct LoopbackPortError: Error, CustomStringConvertible {
    public var description: String
    init(_ description: String) { self.description = description }
}
