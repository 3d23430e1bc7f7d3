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
}
