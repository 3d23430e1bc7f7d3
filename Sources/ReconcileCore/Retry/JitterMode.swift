/// How backoff delays are randomised (`[Retry] Jitter=`, DESIGN §6).
public enum JitterMode: String, CaseIterable, Sendable, Hashable, Codable {
    /// `uniform(0, d)`: spreads retries best (the default).
    case full
    /// `d/2 + uniform(0, d/2)`: never retries sooner than half the delay.
    case equal
    /// Exactly `d`: only for tests and benchmarks; a fleet of orders then retries in lockstep.
    case none
}
