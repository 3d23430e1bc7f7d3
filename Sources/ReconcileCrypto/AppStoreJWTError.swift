/// Why a bearer token for the App Store Server API was refused (by `AppStoreJWT.verify`), or
/// could not be made. The messages never contain the token or a key.
public enum AppStoreJWTError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Not three base64url parts, or a part that is not a JSON object; what was wrong.
    case malformed(String)
    /// The header's `alg` is not `ES256`, or its `typ` is not `JWT` (the value found).
    case unsupportedHeader(String)
    /// A header field or claim is absent or of the wrong type (its name).
    case missingField(String)
    /// The signature does not verify with the given key.
    case badSignature
    /// `aud` is not `appstoreconnect-v1`.
    case wrongAudience
    /// `exp` is not after the time of the check.
    case expired
    /// `iat` is later than the time of the check plus the allowed skew.
    case issuedInFuture
    /// Signing or encoding failed.
    case signing(ES256KeyError)

    public var description: String {
        switch self {
        case .malformed(let what): "malformed token: \(what)"
        case .unsupportedHeader(let what): "unsupported token header: \(what)"
        case .missingField(let name): "token field \(name) is missing or of the wrong type"
        case .badSignature: "token signature does not verify"
        case .wrongAudience: "token audience is not \(AppStoreJWT.audience)"
        case .expired: "token has expired"
        case .issuedInFuture: "token was issued in the future"
        case .signing(let error): "cannot sign the token: \(error)"
        }
    }
}
