import Foundation

/// What one exchange says about its endpoint: input to the circuit breaker and the token bucket.
public enum EndpointObservation: Sendable, Hashable {
    /// The endpoint answered like a working server (whatever it said about the order).
    case healthy
    /// An endpoint-level failure: connection error, time-out, 5xx, 429, 21005/21009/211xx, an
    /// answer that does not parse.
    case failure(reason: Reason)
    /// Our own configuration is wrong (Apple's 21000/21004, HTTP 401/403/404): opens the
    /// circuit at once, charges no order.
    case configuration(reason: Reason)

    public var isFailure: Bool {
        if case .healthy = self { return false }
        return true
    }
}

/// One request the daemon sent for an order, for the order's history.
public struct AttemptRecord: Sendable, Hashable {
    public var endpoint: VerificationEndpoint
    /// `Production` / `Sandbox`, when the answer said.
    public var environment: String?
    public var httpStatus: Int?
    /// Apple's `status`.
    public var verifierStatus: Int?
    public var latency: Duration
    public var outcome: AttemptOutcome
    /// Why, in a few words (never the body, never a secret).
    public var detail: String?
    public var startedAt: Date

    public init(
        endpoint: VerificationEndpoint, environment: String? = nil, httpStatus: Int? = nil, verifierStatus: Int? = nil,
        latency: Duration, outcome: AttemptOutcome, detail: String? = nil, startedAt: Date
    ) {
        self.endpoint = endpoint
        self.environment = environment
        self.httpStatus = httpStatus
        self.verifierStatus = verifierStatus
        self.latency = latency
        self.outcome = outcome
        self.detail = detail
        self.startedAt = startedAt
    }
}

/// What one request of an attempt came to, as the `attempts` table records it.
public enum AttemptOutcome: String, Sendable, Hashable, CaseIterable {
    /// The endpoint answered, whatever it said about the order.
    case answered
    /// No usable answer: a time-out, a reset, a 5xx, a body that does not parse.
    case transient
    /// Our configuration is wrong (a refused key or secret, a wrong URL).
    case configuration
}
