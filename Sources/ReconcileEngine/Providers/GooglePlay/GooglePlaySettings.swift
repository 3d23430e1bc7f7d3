/// What the scheduler needs of `[GooglePlay]` (DESIGN §5 "Google Play"): the verifier (which
/// also sends the outbox's acknowledgements and consumptions) and the section's own limits.
public struct GooglePlaySettings: Sendable {
    public var verifier: GooglePlayVerifier
    public var maxInFlight: Int
    /// Requests per second to each of `googleplay` and `googleplay-token`; `nil` is unlimited.
    public var maxRate: Double?
    public var burst: Int
    public var circuitThreshold: Int
    public var circuitCooldown: Duration
    public var circuitMaxCooldown: Duration

    public init(
        verifier: GooglePlayVerifier, maxInFlight: Int, maxRate: Double?, burst: Int, circuitThreshold: Int, circuitCooldown: Duration,
        circuitMaxCooldown: Duration
    ) {
        self.verifier = verifier
        self.maxInFlight = maxInFlight
        self.maxRate = maxRate
        self.burst = burst
        self.circuitThreshold = circuitThreshold
        self.circuitCooldown = circuitCooldown
        self.circuitMaxCooldown = circuitMaxCooldown
    }
}
