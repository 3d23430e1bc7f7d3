import Foundation
import ReconcileCore
import Synchronization
import ReconcileFoundation

/// A throwaway Google service account key file, its RSA key made with the `openssl` command line
/// tool (never a real account's). The end-to-end tests give it to the daemon and to the mock,
/// which checks the grants signed with it.
public struct TestServiceAccount: Sendable {
    /// The key, PKCS#8 PEM.
    public let privateKeyPEM: String
    public let clientEmail: String
    public let privateKeyID: String
    public let tokenURI: String

    /// A new key; the first few are handed out again to tests that do not need a fresh one
    /// (`index` picks which).
    public static func make(index: Int = 0, tokenURI: String = "https://oauth2.googleapis.com/token") async throws -> TestServiceAccount {
        let pem = try await offPool { () throws -> String in
            if let known = keys.withLock({ $0[index] }) { return known }
            let directory = try OpenSSLCommand.temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: directory) }
            try OpenSSLCommand.runBlocking(
                ["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", "key.pem"], in: directory)
            let text = try String(contentsOf: directory.appendingPathComponent("key.pem"), encoding: .utf8)
            keys.withLock { $0[index] = $0[index] ?? text }
            return keys.withLock { $0[index]! }
        }
        return TestServiceAccount(
            privateKeyPEM: pem, clientEmail: "reconciled-\(index)@reconcile-test.iam.gserviceaccount.com",
            privateKeyID: String(format: "%040x", index + 1), tokenURI: tokenURI)
    }

    private static let keys = Mutex<[Int: String]>([:])

    /// The key file's JSON, as Google hands it out.
    public var json: String {
        JSONWriter.string(.object(JSONObject([
            "type": .string("service_account"), "project_id": .string("reconcile-test"), "private_key_id": .string(privateKeyID),
            "private_key": .string(privateKeyPEM), "client_email": .string(clientEmail), "client_id": .string("100000000000000000001"),
            "auth_uri": .string("https://accounts.google.com/o/oauth2/auth"), "token_uri": .string(tokenURI),
        ])))
    }

    /// The body of the PEM key (what a leak of the key would show), without its armour lines.
    public var keyBody: String {
        privateKeyPEM.split(separator: "\n").filter { !$0.hasPrefix("-----") }.joined()
    }
}
