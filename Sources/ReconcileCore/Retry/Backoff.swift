import Foundation
import ReconcileFoundation

/// The delay before an order's next attempt (DESIGN §6): capped exponential growth with jitter,
/// raised by a server's `Retry-After`.
///
/// `base(n) = min(MaxDelay, InitialDelay × Multiplier^(n-1))` for the delay after attempt `n`;
/// then `full` jitter draws `uniform(0, base)`, `equal` draws `base/2 + uniform(0, base/2)`,
/// `none` is `base`. A `Retry-After` raises the delay to at least its value (capped at
/// `MaxDelay`), with jitter added on top so that a fleet told "in 60 s" does not return at once.
public struct Backoff: Sendable, Hashable {
    public var initialDelay: Duration
    public var multiplier: Double
    public var maxDelay: Duration
    public var jitter: JitterMode

    public init(initialDelay: Duration, multiplier: Double, maxDelay: Duration, jitter: JitterMode) {
        self.initialDelay = initialDelay
        self.multiplier = multiplier
        self.maxDelay = maxDelay
        self.jitter = jitter
    }

    public init(_ settings: Configuration.RetrySettings) {
        self.init(initialDelay: settings.initialDelay, multiplier: settings.multiplier, maxDelay: settings.maxDelay, jitter: settings.jitter)
    }

    /// The un-jittered delay after attempt `attempt` (1-based).
    public func base(afterAttempt attempt: Int) -> Duration {
        let cap = maxDelay.inSeconds
        let exponent = Double(max(0, attempt - 1))
        let grown = initialDelay.inSeconds * pow(multiplier, exponent)
        return .seconds(min(cap, grown.isFinite ? grown : cap))
    }

    /// The delay after attempt `attempt`, jittered, and at least `retryAfter` when the server
    /// asked for it (both capped at `MaxDelay`).
    public func delay<R: RandomSource>(afterAttempt attempt: Int, retryAfter: Duration? = nil, random: inout R) -> Duration {
        let base = base(afterAttempt: attempt)
        let jittered = apply(jitter, to: base, random: &random)
        guard let retryAfter, retryAfter > .zero else { return jittered }
        let floor = min(retryAfter, maxDelay)
        guard jittered < floor else { return jittered }
        // Honour the server's wish, spread over the next tenth of the base delay (at most up
        // to MaxDelay) so that everyone told the same time does not return in the same instant.
        let spread = min(base * 0.1, maxDelay - floor)
        return floor + spread * random.nextUnit()
    }

    func apply<R: RandomSource>(_ mode: JitterMode, to base: Duration, random: inout R) -> Duration {
        switch mode {
        case .none: base
        case .full: base * random.nextUnit()
        case .equal: base / 2 + (base / 2) * random.nextUnit()
        }
    }
}
