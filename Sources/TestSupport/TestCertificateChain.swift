import Foundation
import Synchronization

/// A throwaway certificate chain shaped like the App Store's (root → intermediate → EC P-256
/// leaf, with Apple's marker extensions), made with the `openssl` command line tool.
///
/// The crypto tests check the verifier with it; the end-to-end tests give it to the mock, which
/// signs its App Store answers with the leaf.
public struct TestCertificateChain: Sendable {
    public let rootDER: [UInt8]
    public let intermediateDER: [UInt8]
    public let leafDER: [UInt8]
    /// The leaf's private key, PKCS#8 PEM.
    public let leafKeyPEM: String

    /// Leaf, intermediate, root: the order of a JWS `x5c` header.
    public var x5c: [[UInt8]] { [leafDER, intermediateDER, rootDER] }

    public static let leafMarkerOID = "1.2.840.113635.100.6.11.1"
    public static let intermediateMarkerOID = "1.2.840.113635.100.6.2.1"

    /// A new chain, valid from now for `days`. `leafMarker` / `intermediateMarker`: whether the
    /// leaf and intermediate carry Apple's marker extensions (an ASN.1 NULL, as Apple's do).
    /// `leafSignedByRoot`: the leaf is issued by the root directly (the intermediate is made
    /// anyway, unrelated to it).
    public static func make(
        leafMarker: Bool = true, intermediateMarker: Bool = true, leafSignedByRoot: Bool = false, days: Int = 30
    ) async throws -> TestCertificateChain {
        try await offPool {
            if leafMarker, intermediateMarker, !leafSignedByRoot, days == 30, let shared = standard.withLock({ $0 }) { return shared }
            let chain = try makeBlocking(leafMarker: leafMarker, intermediateMarker: intermediateMarker, leafSignedByRoot: leafSignedByRoot, days: days)
            if leafMarker, intermediateMarker, !leafSignedByRoot, days == 30 { standard.withLock { $0 = $0 ?? chain } }
            return chain
        }
    }

    /// The first App Store-shaped chain made, handed out again: a dozen openssl runs each, and
    /// the tests that only need a good chain do not need a new one.
    private static let standard = Mutex<TestCertificateChain?>(nil)

    /// A chain no other test shares (for a second, untrusted chain).
    public static func makeUnshared() async throws -> TestCertificateChain {
        try await offPool {
            try makeBlocking(leafMarker: true, intermediateMarker: true, leafSignedByRoot: false, days: 30)
        }
    }

    static func makeBlocking(leafMarker: Bool, intermediateMarker: Bool, leafSignedByRoot: Bool, days: Int) throws -> TestCertificateChain {
        let directory = try OpenSSLCommand.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let config = """
            [req]
            distinguished_name = dn
            prompt = no
            [dn]
            CN = unused
            [root]
            basicConstraints = critical, CA:true
            keyUsage = critical, keyCertSign, cRLSign
            subjectKeyIdentifier = hash
            [intermediate]
            basicConstraints = critical, CA:true, pathlen:0
            keyUsage = critical, keyCertSign, cRLSign
            subjectKeyIdentifier = hash
            authorityKeyIdentifier = keyid
            \(intermediateMarker ? "\(intermediateMarkerOID) = ASN1:NULL" : "")
            [leaf]
            basicConstraints = critical, CA:false
            keyUsage = critical, digitalSignature
            subjectKeyIdentifier = hash
            authorityKeyIdentifier = keyid
            \(leafMarker ? "\(leafMarkerOID) = ASN1:NULL" : "")

            """
        try Data(config.utf8).write(to: directory.appendingPathComponent("chain.cnf"))
        @discardableResult
        func run(_ arguments: [String]) throws -> [UInt8] {
            try OpenSSLCommand.runBlocking(arguments, in: directory)
        }
        for name in ["root", "intermediate", "leaf"] {
            try run(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", "\(name).key"])
        }
        try run([
            "req", "-config", "chain.cnf", "-new", "-x509", "-key", "root.key", "-subj", "/O=reconcile test/CN=Test Root",
            "-days", "\(days)", "-extensions", "root", "-out", "root.pem",
        ])
        let issuers = ["intermediate": "root", "leaf": leafSignedByRoot ? "root" : "intermediate"]
        for (serial, name) in ["intermediate", "leaf"].enumerated() {
            let subject = name == "leaf" ? "/O=reconcile test/CN=Test Leaf" : "/O=reconcile test/CN=Test Intermediate"
            try run(["req", "-config", "chain.cnf", "-new", "-key", "\(name).key", "-subj", subject, "-out", "\(name).csr"])
            try run([
                "x509", "-req", "-in", "\(name).csr", "-CA", "\(issuers[name]!).pem", "-CAkey", "\(issuers[name]!).key",
                "-set_serial", "\(serial + 2)", "-days", "\(days)", "-extfile", "chain.cnf", "-extensions", name, "-out", "\(name).pem",
            ])
        }
        func der(_ name: String) throws -> [UInt8] {
            try run(["x509", "-in", "\(name).pem", "-outform", "DER"])
        }
        let key = try String(contentsOf: directory.appendingPathComponent("leaf.key"), encoding: .utf8)
        return TestCertificateChain(rootDER: try der("root"), intermediateDER: try der("intermediate"), leafDER: try der("leaf"), leafKeyPEM: key)
    }

    /// A new EC P-256 private key, PKCS#8 PEM (as App Store Connect's In-App Purchase keys are).
    public static func newKeyPEM() async throws -> String {
        let directory = try OpenSSLCommand.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let pem = try await OpenSSLCommand.run(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"], in: directory)
        return String(decoding: pem, as: UTF8.self)
    }
}
