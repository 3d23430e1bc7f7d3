import Foundation

/// Why an order is where it is: a stable code for scripts, log filters and the `reason` column
/// (`duplicate_transaction`, `http_503`), and free text for a person (`transaction 7 is claimed
/// by order A1`). Printed as `code: detail`, the form log lines have always used.
///
/// A string literal is read in the printed form: `"http_404: no such endpoint"` is code
/// `http_404` with that detail.
public struct Reason: Sendable, Hashable, CustomStringConvertible, ExpressibleByStringInterpolation {
    public var code: String
    public var detail: String?

    public init(_ code: String, detail: String? = nil) {
        self.code = code
        self.detail = detail
    }

    /// Splits the printed form: the code before the first `": "`, the rest as detail.
    public init(parsing text: String) {
        if let colon = text.range(of: ": ") {
            self.init(String(text[..<colon.lowerBound]), detail: String(text[colon.upperBound...]))
        } else {
            self.init(text)
        }
    }

    public init(stringLiteral text: String) {
        self.init(parsing: text)
    }

    public var description: String {
        detail.map { "\(code): \($0)" } ?? code
    }

    /// The same code, with `more` added to the detail (`; ` between).
    public func adding(_ more: String?) -> Reason {
        Reason(code, detail: Self.joined(detail, more))
    }

    static func joined(_ parts: String?...) -> String? {
        let present = parts.compactMap { $0 }
        return present.isEmpty ? nil : present.joined(separator: "; ")
    }
}

/// The reason codes the daemon's own logic looks at (most codes are only recorded and shown).
public enum ReasonCode {
    public static let granted = "granted"
    public static let verified = "verified"
    public static let delivered = "delivered"
    public static let noDeliveryURL = "no_delivery_url"
    /// A revocation notice skipped: `[Revocation] URL=` is not configured (DESIGN §5a).
    public static let noRevocationURL = "no_revocation_url"
    public static let bundleMismatch = "bundle_mismatch"
    public static let duplicateTransaction = "duplicate_transaction"
    public static let leaseLost = "lease_lost"
    public static let maxAge = "max_age"
    public static let maxAttempts = "max_attempts"
    public static let newProof = "new_proof"
    public static let noUsableProof = "no_usable_proof"
    /// A Google Play order waits: no `[GooglePlay]` (and no `Kind=http`) is configured.
    public static let noGooglePlaySection = "no_google_play_section"
    /// An App Store order waits: no `[Verifier]` is configured (a Google Play-only daemon).
    public static let noVerifierSection = "no_verifier_section"
    public static let verifierChanged = "verifier_changed"
    public static let accountMismatch = "account_mismatch"
    /// A Google Play order naming a package not in `[GooglePlay] PackageName=`.
    public static let foreignPackage = "foreign_package"
}
