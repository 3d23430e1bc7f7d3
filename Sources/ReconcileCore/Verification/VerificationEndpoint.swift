/// The endpoints the daemon talks to; each has its own circuit breaker and token bucket.
public enum VerificationEndpoint: String, CaseIterable, Sendable, Hashable, Codable {
    /// Apple's production verifyReceipt.
    case production
    /// Apple's sandbox verifyReceipt.
    case sandbox
    /// The merchant's own verification endpoint (`Kind=http`).
    case merchant
    /// The delivery endpoint (`[Delivery] URL=`).
    case delivery
    /// The merchant's revocation endpoint (`[Revocation] URL=`, DESIGN §5a): refunds and their
    /// reversals, sent from the outbox. `[Verifier]`'s limits apply, as for `delivery`.
    case revocation
    /// The Google Play Developer API (`[GooglePlay] URL=`): purchases, acknowledge, consume.
    case googlePlay = "googleplay"
    /// Google's OAuth token endpoint (`[GooglePlay] TokenURL=`, the key's `token_uri`).
    case googlePlayToken = "googleplay-token"

    /// Whether `[GooglePlay]`'s limits (`MaxRate=`, `Burst=`, `Circuit*=`) apply to it.
    public var isGooglePlay: Bool { self == .googlePlay || self == .googlePlayToken }
}
