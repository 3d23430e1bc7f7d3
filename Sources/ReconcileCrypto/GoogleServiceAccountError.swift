/// Why a service account's key file cannot be used. Never holds the key.
public enum GoogleServiceAccountError: Error, Equatable, Sendable, CustomStringConvertible {
    case notJSON
    case wrongType(String)
    case missingField(String)
    /// `type` is not `service_account` (an OAuth client or a user credential).
    case notServiceAccount(String)
    case key(RS256KeyError)

    public var description: String {
        switch self {
        case .notJSON: "not a JSON key file (download the service account's key as JSON)"
        case .wrongType(let field): "the key file's \"\(field)\" is not a string"
        case .missingField(let field): "the key file has no \"\(field)\""
        case .notServiceAccount(let type): "the key file is of type \"\(type)\", not service_account"
        case .key(let error): "the key file's private_key: \(error)"
        }
    }
}
