/// Why a spool file cannot be accepted: the reason written beside it in `rejected/`.
///
/// `code` is a stable word for scripts and log filters; `detail` says exactly what was wrong, for
/// a person. Neither ever contains a receipt, a token or any other proof.
public struct OrderFileProblem: Error, Sendable, Hashable, CustomStringConvertible {
    /// Stable reason codes.
    public enum Code: String, Sendable, Hashable, CaseIterable {
        case emptyFile = "empty_file"
        case tooLarge = "too_large"
        case notRegularFile = "not_regular_file"
        case symlink = "symlink"
        case unreadable = "unreadable"
        case nulByte = "nul_byte"
        case notUTF8 = "not_utf8"
        case notJSON = "not_json"
        case notObject = "not_object"
        case missingField = "missing_field"
        case invalidField = "invalid_field"
        case conflictingProduct = "conflicting_product"
        /// A `package_name` that is not one of `[GooglePlay] PackageName=`.
        case foreignPackage = "foreign_package"
        // A store notification that did not verify (DESIGN §3, §5a): the signed-data check that
        // failed, or why it could not be checked.
        case malformedNotification = "malformed_notification"
        case unsupportedAlgorithm = "unsupported_algorithm"
        case missingX5C = "missing_x5c"
        case invalidChain = "invalid_chain"
        case badSignature = "bad_signature"
        case wrongBundle = "wrong_bundle"
        case wrongEnvironment = "wrong_environment"
        case notificationNotVerifiable = "notification_not_verifiable"
    }

    public var code: Code
    public var detail: String

    public init(_ code: Code, _ detail: String) {
        self.code = code
        self.detail = detail
    }

    public var description: String { "\(code.rawValue): \(detail)" }
}
