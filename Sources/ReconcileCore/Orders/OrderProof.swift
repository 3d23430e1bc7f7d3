/// The evidence of payment an order carries: what a verifier checks.
public struct OrderProof: Sendable, Hashable {
    /// Base64 App Store receipt (StoreKit 1).
    public var receipt: String?
    /// The store's transaction id, when the client knew it.
    public var transactionID: String?
    /// A StoreKit 2 signed transaction (compact JWS).
    public var signedTransaction: String?
    /// A Google Play purchase token: an order that has one is a Google Play order (DESIGN §3).
    public var purchaseToken: String?
    /// The Android package the purchase token belongs to, when the order names it (otherwise
    /// `[GooglePlay] PackageName=`). Not proof by itself.
    public var packageName: String?

    public init(
        receipt: String? = nil, transactionID: String? = nil, signedTransaction: String? = nil, purchaseToken: String? = nil,
        packageName: String? = nil
    ) {
        self.receipt = receipt
        self.transactionID = transactionID
        self.signedTransaction = signedTransaction
        self.purchaseToken = purchaseToken
        self.packageName = packageName
    }

    /// No proof at all (a package name alone proves nothing).
    public var isEmpty: Bool { receipt == nil && transactionID == nil && signedTransaction == nil && purchaseToken == nil }

    /// A Google Play order: it carries a purchase token, and goes to `[GooglePlay]` (or, without
    /// one, to a `Kind=http` merchant endpoint).
    public var isGooglePlay: Bool { purchaseToken != nil }

    /// Whether a verifier of this kind can check the order when it is the only one configured
    /// (DESIGN §3, §5): `apple` needs a receipt; `http` sends a receipt, a transaction id or a
    /// purchase token; `appstore` takes any Apple proof.
    public func isUsable(by kind: VerifierKind) -> Bool {
        isUsable(by: ConfiguredVerifiers(kind: kind))
    }

    /// Whether one of the configured verifiers can check the order: a Google Play order needs
    /// `[GooglePlay]` (or `Kind=http`), every other order `[Verifier]` with a kind that can use
    /// its proof.
    public func isUsable(by verifiers: ConfiguredVerifiers) -> Bool {
        if isGooglePlay { return verifiers.googlePlay || verifiers.kind == .http }
        switch verifiers.kind {
        case nil: return false
        case .apple?: return receipt != nil
        case .http?: return receipt != nil || transactionID != nil
        case .appstore?: return receipt != nil || transactionID != nil || signedTransaction != nil
        }
    }
}

/// Which verification protocol `[Verifier] Kind=` selects (DESIGN §5).
public enum VerifierKind: String, CaseIterable, Sendable, Hashable, Codable {
    /// Apple's legacy `verifyReceipt` endpoint.
    case apple
    /// The merchant's own verification endpoint, which verifies and grants in one step.
    case http
    /// The App Store Server API.
    case appstore
}
