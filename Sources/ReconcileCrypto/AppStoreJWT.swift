import Foundation

/// The bearer token (an ES256 JWT) that authenticates calls to the App Store Server API, and its
/// check, for a mock server.
///
/// Header `{"alg":"ES256","kid":…,"typ":"JWT"}`; claims `iss` (issuer id), `iat`, `exp`,
/// `aud` (`appstoreconnect-v1`) and `bid` (bundle id). Making one is a function of its inputs
/// and `now`, except for ECDSA's random nonce.
public enum AppStoreJWT {
    /// The audience Apple expects.
    public static let audience = "appstoreconnect-v1"
    /// How far `iat` is set before now, so that a server whose clock is behind ours does not
    /// see a token issued in the future.
    public static let defaultBackdate: TimeInterval = 60
    /// How long after now a token expires (Apple's own Swift library uses five minutes).
    public static let defaultLifetime: TimeInterval = 300

    /// What a token says.
    public struct Claims: Equatable, Sendable {
        public let keyID: String
        public let issuerID: String
        public let bundleID: String
        public let audience: String
        public let issuedAt: Date
        public let expiresAt: Date
    }

    /// A signed token: `iat` = `now` − `backdate`, `exp` = `now` + `lifetime` (whole seconds,
    /// rounded down).
    public static func token(
        key: ES256PrivateKey, keyID: String, issuerID: String, bundleID: String, now: Date,
        backdate: TimeInterval = defaultBackdate, lifetime: TimeInterval = defaultLifetime
    ) throws(AppStoreJWTError) -> String {
        try signed(key: key, keyID: keyID, issuerID: issuerID, bundleID: bundleID, now: now, backdate: backdate, lifetime: lifetime).token
    }

    /// `token(...)` with the claims it carries.
    static func signed(
        key: ES256PrivateKey, keyID: String, issuerID: String, bundleID: String, now: Date,
        backdate: TimeInterval = defaultBackdate, lifetime: TimeInterval = defaultLifetime
    ) throws(AppStoreJWTError) -> (token: String, claims: Claims) {
        let iat = seconds(now.addingTimeInterval(-backdate))
        let exp = seconds(now.addingTimeInterval(lifetime))
        let header = Header(alg: "ES256", kid: keyID, typ: "JWT")
        let payload = Payload(iss: issuerID, iat: iat, exp: exp, aud: audience, bid: bundleID)
        let signingInput: String
        do {
            signingInput = Base64URL.encode(try encoder.encode(header)) + "." + Base64URL.encode(try encoder.encode(payload))
        } catch {
            throw .malformed("cannot encode JSON")
        }
        let signature: [UInt8]
        do { signature = try key.sign(Array(signingInput.utf8)) } catch { throw .signing(error) }
        let claims = Claims(
            keyID: keyID, issuerID: issuerID, bundleID: bundleID, audience: audience,
            issuedAt: Date(timeIntervalSince1970: TimeInterval(iat)), expiresAt: Date(timeIntervalSince1970: TimeInterval(exp)))
        return (signingInput + "." + Base64URL.encode(signature), claims)
    }

    /// Checks a token as Apple would (for a mock server): header `alg` ES256, `typ` JWT and a
    /// `kid`; the signature with `key`; `aud`; `exp` after `now`; `iat` no later than `now` +
    /// `allowedSkew`; and `iss` and `bid` present. Returns the claims.
    public static func verify(
        _ token: String, with key: ES256PublicKey, now: Date, allowedSkew: TimeInterval = 60
    ) throws(AppStoreJWTError) -> Claims {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else { throw .malformed("expected 3 dot-separated parts, found \(parts.count)") }
        let header = try decode(DecodedHeader.self, parts[0], part: "header")
        let claims = try decode(DecodedClaims.self, parts[1], part: "payload")
        let signature: [UInt8]
        do { signature = try Base64URL.decode(parts[2]) } catch { throw .malformed("signature: \(error)") }

        guard let alg = header.alg else { throw .missingField("alg") }
        guard alg == "ES256" else { throw .unsupportedHeader("alg \(SignedDataError.printable(alg))") }
        guard let typ = header.typ else { throw .missingField("typ") }
        guard typ == "JWT" else { throw .unsupportedHeader("typ \(SignedDataError.printable(typ))") }
        guard let kid = header.kid, !kid.isEmpty else { throw .missingField("kid") }

        let signingInput = Array(token.utf8.prefix(parts[0].utf8.count + 1 + parts[1].utf8.count))
        guard key.isValidSignature(signature, for: signingInput) else { throw .badSignature }

        guard let aud = claims.aud else { throw .missingField("aud") }
        guard aud == audience else { throw .wrongAudience }
        guard let exp = claims.exp else { throw .missingField("exp") }
        guard let iat = claims.iat else { throw .missingField("iat") }
        guard let iss = claims.iss, !iss.isEmpty else { throw .missingField("iss") }
        guard let bid = claims.bid, !bid.isEmpty else { throw .missingField("bid") }
        let expiresAt = Date(timeIntervalSince1970: exp)
        let issuedAt = Date(timeIntervalSince1970: iat)
        guard expiresAt > now else { throw .expired }
        guard issuedAt <= now.addingTimeInterval(allowedSkew) else { throw .issuedInFuture }
        return Claims(keyID: kid, issuerID: iss, bundleID: bid, audience: aud, issuedAt: issuedAt, expiresAt: expiresAt)
    }

    // MARK: - Encoding

    private struct Header: Encodable {
        let alg: String
        let kid: String
        let typ: String
    }

    private struct Payload: Encodable {
        let iss: String
        let iat: Int64
        let exp: Int64
        let aud: String
        let bid: String
    }

    private static var encoder: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }

    private static func seconds(_ date: Date) -> Int64 {
        Int64(date.timeIntervalSince1970.rounded(.down))
    }

    // MARK: - Decoding

    private struct DecodedHeader: Decodable {
        let alg: String?
        let typ: String?
        let kid: String?
    }

    private struct DecodedClaims: Decodable {
        let iss: String?
        let iat: Double?
        let exp: Double?
        let aud: String?
        let bid: String?
    }

    /// A base64url JSON part; a field of the wrong JSON type counts as missing (by name).
    private static func decode<T: Decodable>(_ type: T.Type, _ part: Substring, part name: String) throws(AppStoreJWTError) -> T {
        let bytes: [UInt8]
        do { bytes = try Base64URL.decode(part) } catch { throw .malformed("\(name): \(error)") }
        do {
            return try JSONDecoder().decode(type, from: Data(bytes))
        } catch DecodingError.typeMismatch(_, let context) where !context.codingPath.isEmpty {
            throw .missingField(context.codingPath.map(\.stringValue).joined(separator: "."))
        } catch {
            throw .malformed("\(name) is not a JSON object")
        }
    }
}
