/// Why a signed payload (a compact JWS from the App Store) was refused. `reason` is a stable
/// snake_case name for logs and metrics; `description` adds the detail. Neither ever contains the
/// JWS itself.
public enum SignedDataError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Not three base64url parts, a part that is not JSON, or a field of the wrong type.
    case malformed(String)
    /// The header's `alg` is not `ES256` (what it was, or that it was absent).
    case unsupportedAlgorithm(String)
    /// The header has no `x5c`, or not exactly three base64 DER certificates in it.
    case missingX5C(String)
    /// The certificates do not chain to a configured root, or miss Apple's marker extensions;
    /// OpenSSL's verification error or the failed rule.
    case invalidChain(String)
    /// The ES256 signature over `header.payload` does not verify with the leaf's key.
    case badSignature
    /// The payload's `bundleId` (given when present) is not the configured one.
    case wrongBundle(found: String?)
    /// The payload's `environment` (given when present) is not the configured one.
    case wrongEnvironment(found: String?)

    /// The snake_case name of the failure.
    public var reason: String {
        switch self {
        case .malformed: "malformed"
        case .unsupportedAlgorithm: "unsupported_algorithm"
        case .missingX5C: "missing_x5c"
        case .invalidChain: "invalid_chain"
        case .badSignature: "bad_signature"
        case .wrongBundle: "wrong_bundle"
        case .wrongEnvironment: "wrong_environment"
        }
    }

    public var description: String {
        switch self {
        case .malformed(let detail), .unsupportedAlgorithm(let detail), .missingX5C(let detail), .invalidChain(let detail):
            "\(reason): \(detail)"
        case .badSignature:
            "\(reason): the ES256 signature does not verify with the leaf certificate's key"
        case .wrongBundle(let found):
            "\(reason): the payload's bundleId is \(found.map { "\"\(Self.printable($0))\"" } ?? "absent")"
        case .wrongEnvironment(let found):
            "\(reason): the payload's environment is \(found.map { "\"\(Self.printable($0))\"" } ?? "absent")"
        }
    }

    /// A value from the JWS made fit for a log line: control characters dropped, at most 100
    /// characters kept.
    static func printable(_ text: String) -> String {
        let printable = String(text.unicodeScalars.filter { $0.value >= 0x20 && $0.value != 0x7F }.map(Character.init))
        return printable.count > 100 ? String(printable.prefix(100)) + "…" : printable
    }
}
