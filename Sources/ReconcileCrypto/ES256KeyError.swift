/// Why an ES256 key could not be loaded or used. The messages name the problem only, never the
/// key's bytes.
public enum ES256KeyError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The text is not a PEM key OpenSSL can read (or it is encrypted); OpenSSL's reason.
    case unreadablePEM(String)
    /// The key is not an elliptic-curve key (its OpenSSL type name).
    case notEllipticCurve(String)
    /// The key is on another curve than P-256 (the curve's name).
    case wrongCurve(String)
    /// OpenSSL failed to sign or to encode; its reason.
    case openSSL(String)

    public var description: String {
        switch self {
        case .unreadablePEM(let reason): "not a readable PEM key: \(reason)"
        case .notEllipticCurve(let type): "not an elliptic-curve key (type \(type)); ES256 needs EC P-256"
        case .wrongCurve(let curve): "the key is on curve \(curve); ES256 needs P-256 (prime256v1)"
        case .openSSL(let reason): "OpenSSL: \(reason)"
        }
    }
}
