/// Why an assertion was refused (the mock answers `invalid_grant` with it).
public enum GoogleJWTError: Error, Equatable, Sendable, CustomStringConvertible {
    case malformed(String)
    case unsupportedHeader(String)
    case badSignature
    case missingField(String)
    case wrongAudience
    /// Google's words for a token that is expired, from the future, or lives too long.
    case notShortLived(String)

    public var description: String {
        switch self {
        case .malformed(let detail): "Invalid JWT: \(detail)"
        case .unsupportedHeader(let field): "Invalid JWT: unsupported \(field)"
        case .badSignature: "Invalid JWT Signature."
        case .missingField(let field): "Invalid JWT: no \(field)"
        case .wrongAudience: "Invalid JWT: wrong audience"
        case .notShortLived(let why): "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe (\(why))"
        }
    }
}
