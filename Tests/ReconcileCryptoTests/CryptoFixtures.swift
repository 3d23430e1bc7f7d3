import Foundation

/// The files in `Fixtures/` (copied into the test bundle; see `Fixtures/README.md`).
enum CryptoFixtures {
    static func bytes(_ name: String) -> [UInt8] {
        guard let url = Bundle.module.url(forResource: name, withExtension: nil, subdirectory: "Fixtures"),
            let data = FileManager.default.contents(atPath: url.path)
        else { fatalError("missing fixture \(name)") }
        return Array(data)
    }

    /// The file as text, without its trailing newline.
    static func text(_ name: String) -> String {
        var text = String(decoding: bytes(name), as: UTF8.self)
        while text.last?.isNewline == true { text.removeLast() }
        return text
    }

    static var testSigningKey: String { text("asapi-certs-testSigningKey.p8") }
    /// ES256 compact JWS; payload `{"environment":"Sandbox","bundleId":"com.example","signedDate":1672956154000}`.
    static var signedTransaction: String { text("asapi-signed-transaction-test-vector.jws") }
    static var testCA: [UInt8] { bytes("asapi-signed-transaction-test-vector-ca.der") }
    static var appleRootG3: [UInt8] { bytes("apple-root-ca-g3.pem") }
}
