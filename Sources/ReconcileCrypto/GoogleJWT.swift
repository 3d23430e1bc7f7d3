import Foundation

/// The assertion of Google's OAuth 2.0 JWT bearer grant (`docs/protocols/google-play.md` §1): an RS256
/// JWT signed with a service account's key, and its check, for a mock token endpoint.
///
/// Header `{"alg":"RS256","kid":<private_key_id>,"typ":"JWT"}`; claims `iss` (the client email),
/// `scope` (androidpublisher), `aud` (the token URI), `iat` ten seconds before now and `exp` an
/// hour after `iat` (Google's maximum).
public enum GoogleJWT {
    public static let scope = "https://www.googleapis.com/auth/androidpublisher"
    /// Cloud Pub/Sub's scope, asked for beside ``scope`` when a subscription is pulled.
    public static let pubSubScope = "https://www.googleapis.com/auth/pubsub"
    /// golang/oauth2 backdates `iat` so that a server whose clock is behind ours does not see a
    /// token issued in the future.
    public static let backdate: TimeInterval = 10
    /// Google refuses assertions that live longer than an hour.
    public static let lifetime: TimeInterval = 3600

    /// What an assertion says.
    public struct Claims: Equatable, Sendable {
        public let keyID: String?
        public let issuer: String
        public let scope: String
        public let audience: String
        public let issuedAt: Date
        public let expiresAt: Date
    }

    /// A signed assertion for `account`, for `audience` (the key's `token_uri`), asking for
    /// `scopes` (space-separated in the claim, as Google reads it).
    public static func assertion(
        for account: GoogleServiceAccount, audience: String? = nil, scopes: [String] = [scope], now: Date
    ) throws(RS256KeyError) -> String {
        let iat = Int64(now.addingTimeInterval(-backdate).timeIntervalSince1970.rounded(.down))
        let header = Header(alg: "RS256", kid: account.privateKeyID, typ: "JWT")
        let claims = Payload(
            iss: account.clientEmail, scope: scopes.joined(separator: " "), aud: audience ?? account.tokenURI, iat: iat,
            exp: iat + Int64(lifetime))
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let headerJSON = try? encoder.encode(header), let claimsJSON = try? encoder.encode(claims) else {
            throw .openSSL("cannot encode the JWT's JSON")
        }
        let signingInput = Base64URL.encode(headerJSON) + "." + Base64URL.encode(claimsJSON)
        return signingInput + "." + Base64URL.encode(try account.key.sign(Array(signingInput.utf8)))
    }

    /// Checks an assertion as Google would: header `alg` RS256 and `typ` JWT; the signature with
    /// `key`; `iss` and `scope` present (the scope holding androidpublisher's); `aud` equal to
    /// `audience`; `iat` no later than `now + allowedSkew`; `exp` after `now` and at most an hour
    /// after `iat`.
    public static func verify(
        _ token: String, with key: RS256PublicKey, audience: String, now: Date, allowedSkew: TimeInterval = 60
    ) throws(GoogleJWTError) -> Claims {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else { throw .malformed("expected 3 dot-separated parts, found \(parts.count)") }
        let header: DecodedHeader = try decode(parts[0], part: "header")
        let claims: DecodedClaims = try decode(parts[1], part: "payload")
        let signature: [UInt8]
        do { signature = try Base64URL.decode(parts[2]) } catch { throw .malformed("signature: \(error)") }
        guard header.alg == "RS256" else { throw .unsupportedHeader("alg") }
        guard header.typ == nil || header.typ == "JWT" else { throw .unsupportedHeader("typ") }
        let signingInput = Array(token.utf8.prefix(parts[0].utf8.count + 1 + parts[1].utf8.count))
        guard key.isValidSignature(signature, for: signingInput) else { throw .badSignature }
        guard let iss = claims.iss, !iss.isEmpty else { throw .missingField("iss") }
        guard let scope = claims.scope, scope.split(separator: " ").contains(Substring(Self.scope)) else { throw .missingField("scope") }
        guard let aud = claims.aud else { throw .missingField("aud") }
        guard aud == audience else { throw .wrongAudience }
        guard let iat = claims.iat, let exp = claims.exp else { throw .missingField(claims.iat == nil ? "iat" : "exp") }
        let issuedAt = Date(timeIntervalSince1970: iat)
        let expiresAt = Date(timeIntervalSince1970: exp)
        guard issuedAt <= now.addingTimeInterval(allowedSkew) else { throw .notShortLived("iat is in the future") }
        guard expiresAt > now else { throw .notShortLived("expired") }
        guard exp - iat <= lifetime else { throw .notShortLived("exp is more than an hour after iat") }
        return Claims(keyID: header.kid, issuer: iss, scope: scope, audience: aud, issuedAt: issuedAt, expiresAt: expiresAt)
    }

    private struct Header: Encodable {
        let alg: String
        let kid: String?
        let typ: String
    }

    private struct Payload: Encodable {
        let iss: String
        let scope: String
        let aud: String
        let iat: Int64
        let exp: Int64
    }

    private struct DecodedHeader: Decodable {
        let alg: String?
        let kid: String?
        let typ: String?
    }

    private struct DecodedClaims: Decodable {
        let iss: String?
        let scope: String?
        let aud: String?
        let iat: Double?
        let exp: Double?
    }

    private static func decode<T: Decodable>(_ part: Substring, part name: String) throws(GoogleJWTError) -> T {
        let bytes: [UInt8]
        do { bytes = try Base64URL.decode(part) } catch { throw .malformed("\(name): \(error)") }
        do {
            return try JSONDecoder().decode(T.self, from: Data(bytes))
        } catch DecodingError.typeMismatch(_, let context) where !context.codingPath.isEmpty {
            throw .missingField(context.codingPath.map(\.stringValue).joined(separator: "."))
        } catch {
            throw .malformed("\(name) is not a JSON object")
        }
    }
}
