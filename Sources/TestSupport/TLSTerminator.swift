import CCurl
import Foundation
import Glibc
import Synchronization

/// A TLS front for a plain test server, on loopback: each TLS connection (OpenSSL, a certificate
/// of the test's own) is relayed byte for byte to the backend over one TCP connection of its own,
/// for as long as the client keeps it — so a keep-alive HTTP server behind it serves HTTPS with
/// kept-alive connections, which is what trust-anchor tests need (`openssl s_server` closes after
/// each answer).
public final class TLSTerminator: Sendable {
    private let relay: Relay
    private let listener: LoopbackListener

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// - Parameters:
    ///   - certificate: the server's PEM chain (leaf first).
    ///   - key: its PEM private key.
    public init(certificate: String, key: String, backendPort: UInt16) throws {
        // OpenSSL writes to its socket with write(2): a client that hangs up mid-answer would
        // kill the whole test process with SIGPIPE. The daemon ignores SIGPIPE too.
        signal(SIGPIPE, SIG_IGN)
        guard let context = SSL_CTX_new(TLS_server_method()) else { throw Failure(description: "SSL_CTX_new failed") }
        guard SSL_CTX_use_certificate_chain_file(context, certificate) == 1, SSL_CTX_use_PrivateKey_file(context, key, SSL_FILETYPE_PEM) == 1 else {
            SSL_CTX_free(context)
            throw Failure(description: "cannot load \(certificate) and \(key)")
        }
        let relay = Relay(context: context, backendPort: backendPort)
        self.relay = relay
        listener = try LoopbackListener(name: "tls-accept") { relay.serve($0) }
    }

    deinit { stop() }

    public var port: UInt16 { listener.port }

    /// TLS handshakes completed so far: how many connections clients opened and trusted.
    public var handshakes: Int { relay.handshakes.load(ordering: .relaxed) }

    /// Stops accepting; open connections end with their clients.
    public func stop() {
        relay.stopped.store(true, ordering: .sequentiallyConsistent)
        listener.stop()
    }
}

/// What the connection threads share: the server's TLS context, where to relay to, counters.
private final class Relay: @unchecked Sendable {
    // @unchecked: `context` is immutable after init, and OpenSSL lets threads share an SSL_CTX.
    let context: OpaquePointer
    let backendPort: UInt16
    let stopped = Atomic<Bool>(false)
    let handshakes = Atomic<Int>(0)

    init(context: OpaquePointer, backendPort: UInt16) {
        self.context = context
        self.backendPort = backendPort
    }

    deinit { SSL_CTX_free(context) }

    /// One client: the handshake, then bytes both ways until either side closes.
    func serve(_ client: Int32) {
        guard let ssl = SSL_new(context) else { return }
        defer { SSL_free(ssl) }
        SSL_set_fd(ssl, client)
        guard SSL_accept(ssl) == 1 else { return }  // the client did not trust the certificate
        handshakes.add(1, ordering: .relaxed)
        let backend = connectBackend()
        guard backend >= 0 else { return }
        defer { close(backend) }
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        var descriptors = [pollfd(fd: client, events: Int16(POLLIN), revents: 0), pollfd(fd: backend, events: Int16(POLLIN), revents: 0)]
        while !stopped.load(ordering: .relaxed) {
            if SSL_pending(ssl) == 0 {
                guard poll(&descriptors, 2, 200) >= 0 || errno == EINTR else { return }
            }
            if SSL_pending(ssl) > 0 || descriptors[0].revents != 0 {
                let count = buffer.withUnsafeMutableBytes { SSL_read(ssl, $0.baseAddress, Int32($0.count)) }
                if count <= 0 {
                    let error = SSL_get_error(ssl, count)
                    if error == SSL_ERROR_WANT_READ || error == SSL_ERROR_WANT_WRITE { continue }
                    return
                }
                guard sendAll(backend, buffer.prefix(Int(count))) else { return }
            }
            if descriptors[1].revents != 0 {
                let count = buffer.withUnsafeMutableBytes { read(backend, $0.baseAddress, $0.count) }
                guard count > 0 else {
                    SSL_shutdown(ssl)
                    return
                }
                let written = buffer.withUnsafeBytes { SSL_write(ssl, $0.baseAddress, Int32(count)) }
                guard written == count else { return }
            }
            descriptors[0].revents = 0
            descriptors[1].revents = 0
        }
    }

    private func connectBackend() -> Int32 {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = backendPort.bigEndian
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
        guard connected else {
            close(descriptor)
            return -1
        }
        return descriptor
    }

    private func sendAll(_ descriptor: Int32, _ bytes: ArraySlice<UInt8>) -> Bool {
        var offset = bytes.startIndex
        while offset < bytes.endIndex {
            let written = bytes[offset...].withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if written < 0 {
                if errno == EINTR { continue }
                return false
            }
            offset += written
        }
        return true
    }
}
