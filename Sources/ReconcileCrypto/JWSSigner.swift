import Foundation

/// Signs payloads the way the App Store does: a compact JWS, ES256, with the signing
/// certificate chain in the `x5c` header (leaf first). For mock servers and tests.
public struct JWSSigner: Sendable {
    private let key: ES256PrivateKey
    private let encodedHeader: String

    /// `certificateChainDER`: leaf (whose public key matches `key`), intermediate, root.
    public init(key: ES256PrivateKey, certificateChainDER: [[UInt8]]) {
        self.key = key
        let header = Header(alg: "ES256", x5c: certificateChainDER.map { Data($0).base64EncodedString() })
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let json = try? encoder.encode(header) else { fatalError("cannot encode a JWS header of strings") }
        encodedHeader = Base64URL.encode(json)
    }

    /// `header.payload.signature`, each part base64url; `payload` is sent as given (normally
    /// JSON).
    public func sign(payload: [UInt8]) throws(ES256KeyError) -> String {
        let signingInput = encodedHeader + "." + Base64URL.encode(payload)
        return signingInput + "." + Base64URL.encode(try key.sign(Array(signingInput.utf8)))
    }

    private struct Header: Encodable {
        let alg: String
        let x5c: [String]
    }
}
