import Foundation

/// A Google service account's JSON key file (`docs/protocols/google-play.md` §1), reduced to what the
/// JWT bearer grant needs: `client_email` (the issuer), `private_key` (RS256), `private_key_id`
/// (the header's `kid`) and `token_uri`. The key never appears in a description or error.
public struct GoogleServiceAccount: Sendable {
    public var clientEmail: String
    public var privateKeyID: String?
    /// Where the grant is posted; Google's default when the file names none.
    public var tokenURI: String
    public var projectID: String?
    public var key: RS256PrivateKey

    /// Google's token endpoint (golang/oauth2's default when `token_uri` is empty).
    public static let defaultTokenURI = "https://oauth2.googleapis.com/token"

    public init(clientEmail: String, privateKeyID: String?, tokenURI: String, projectID: String? = nil, key: RS256PrivateKey) {
        self.clientEmail = clientEmail
        self.privateKeyID = privateKeyID
        self.tokenURI = tokenURI
        self.projectID = projectID
        self.key = key
    }

    /// Reads a key file's JSON.
    public init(json: [UInt8]) throws(GoogleServiceAccountError) {
        let file: File
        do {
            file = try JSONDecoder().decode(File.self, from: Data(json))
        } catch DecodingError.typeMismatch(_, let context) where !context.codingPath.isEmpty {
            throw .wrongType(context.codingPath.map(\.stringValue).joined(separator: "."))
        } catch {
            throw .notJSON
        }
        guard let type = file.type else { throw .missingField("type") }
        guard type == "service_account" else { throw .notServiceAccount(String(type.prefix(40))) }
        guard let email = file.client_email, !email.isEmpty else { throw .missingField("client_email") }
        guard let pem = file.private_key, !pem.isEmpty else { throw .missingField("private_key") }
        let key: RS256PrivateKey
        do { key = try RS256PrivateKey(pem: pem) } catch { throw .key(error) }
        let tokenURI = (file.token_uri?.isEmpty ?? true) ? Self.defaultTokenURI : file.token_uri!
        self.init(clientEmail: email, privateKeyID: file.private_key_id, tokenURI: tokenURI, projectID: file.project_id, key: key)
    }

    /// The fields of a key file that are read; others are ignored.
    private struct File: Decodable {
        // swiftlint:disable identifier_name
        let type: String?
        let client_email: String?
        let private_key: String?
        let private_key_id: String?
        let token_uri: String?
        let project_id: String?
        // swiftlint:enable identifier_name
    }
}
