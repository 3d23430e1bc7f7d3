/// Why an RS256 key could not be loaded or used. The messages name the problem only, never the
/// key's bytes.
public enum RS256KeyError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The text is not a PEM key OpenSSL can read (or it is encrypted); OpenSSL's reason.
    case unreadablePEM(String)
    /// The key is not an RSA key (its OpenSSL type name).
    case notRSA(String)
    /// The modulus is shorter than RS256 allows (its length in bits).
    case tooShort(Int)
    /// OpenSSL failed to sign or to encode; its reason.
    case openSSL(String)

    public var description: String {
        switch self {
        case .unreadablePEM(let reason): "not a readable PEM private key: \(reason)"
        case .notRSA(let type): "not an RSA key (type \(type)); RS256 needs RSA"
        case .tooShort(let bits): "an RSA key of \(bits) bits; RS256 needs at least \(RS256PrivateKey.minimumBits)"
        case .openSSL(let reason): "OpenSSL: \(reason)"
        }
    }
}
