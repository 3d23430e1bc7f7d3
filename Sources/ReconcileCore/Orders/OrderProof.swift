/// The evidence of payment an order carries: what a verifier checks.
public struct OrderProof: Sendable, Hashable {
    /// Base64 App Store receipt (StoreKit 1).
    public var receipt: String?
    /// The store's transaction id, when the client knew it.
    public var transactionID: String?
    /// A StoreKit 2 signed transaction (compact JWS).
    public var signedTransaction: String?

    public init(receipt: String? = nil, transactionID: String? = nil, signedTransaction: String? = nil) {
        self.receipt = receipt
        self.transactionID = transactionID
        self.signedTransaction = signedTransaction
    }

    /// No proof at all.
    public var isEmpty: Bool { receipt == nil && transactionID == nil && signedTransaction == nil }

    /// Whether a verifier of this kind can check the order (DESIGN §3, §5): `apple` needs a
    /// receipt; `http` sends a receipt or a transaction id; `appstore` takes any of the three.
    public func isUsable(by kind: VerifierKind) -> Bool {
        switch kind {
        case .apple: receipt != nil
        case .http: receipt != nil || transactionID != nil
        case .appstore: !isEmpty
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
