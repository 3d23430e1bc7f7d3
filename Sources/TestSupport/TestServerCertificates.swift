import Foundation

/// A throwaway certificate authority and a TLS server certificate it signed for 127.0.0.1, made
/// with the `openssl` command line as PEM files in a directory: for a ``TLSTerminator``, and for
/// a `CAFile=` that trusts it.
public struct TestServerCertificates: Sendable {
    /// The authority's certificate: what a `CAFile=` names.
    public let authority: String
    /// The server's certificate (for 127.0.0.1) and its key.
    public let certificate: String
    public let key: String

    /// Makes `<name>-ca.pem`, `<name>-server.pem` and `<name>-server.key` in `directory`.
    public static func make(in directory: String, name: String = "test") async throws -> TestServerCertificates {
        let folder = URL(fileURLWithPath: directory)
        try Data("""
            [authority]
            basicConstraints = critical, CA:true
            keyUsage = critical, keyCertSign, cRLSign
            [server]
            basicConstraints = critical, CA:false
            keyUsage = critical, digitalSignature
            extendedKeyUsage = serverAuth
            subjectAltName = IP:127.0.0.1

            """.utf8).write(to: folder.appendingPathComponent("\(name)-extensions.cnf"))
        let authority = "\(name)-ca", server = "\(name)-server"
        for key in [authority, server] {
            try await OpenSSLCommand.run(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", "\(key).key"], in: folder)
        }
        try await OpenSSLCommand.run([
            "req", "-new", "-x509", "-key", "\(authority).key", "-subj", "/O=reconcile test/CN=\(name) CA", "-days", "2",
            "-config", "\(name)-extensions.cnf", "-extensions", "authority", "-out", "\(authority).pem",
        ], in: folder)
        try await OpenSSLCommand.run(["req", "-new", "-key", "\(server).key", "-subj", "/CN=127.0.0.1", "-config", "\(name)-extensions.cnf", "-out", "\(server).csr"], in: folder)
        try await OpenSSLCommand.run([
            "x509", "-req", "-in", "\(server).csr", "-CA", "\(authority).pem", "-CAkey", "\(authority).key", "-set_serial", "2", "-days", "2",
            "-extfile", "\(name)-extensions.cnf", "-extensions", "server", "-out", "\(server).pem",
        ], in: folder)
        return TestServerCertificates(
            authority: "\(directory)/\(authority).pem", certificate: "\(directory)/\(server).pem", key: "\(directory)/\(server).key")
    }
}
