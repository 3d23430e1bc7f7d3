import ReconcileFoundation

/// A token bucket per endpoint (DESIGN §6): `rate` tokens a second up to `burst`; every HTTP
/// request takes one. A 429 pauses the whole bucket until its `Retry-After` (the caller caps it at
/// `CircuitMaxCooldown`); a reload ends the pause.
///
/// Pure: the caller passes the time (a monotonic instant), so tests drive it exactly.
public struct TokenBucket: Sendable, Hashable {
    /// Tokens per second; `nil` is unlimited.
    public private(set) var rate: Double?
    public private(set) var burst: Double
    private var tokens: Double
    private var updatedAt: ContinuousClock.Instant
    /// No token is handed out before this time (a 429's `Retry-After`).
    public private(set) var pausedUntil: ContinuousClock.Instant?

    public init(rate: Double?, burst: Int, now: ContinuousClock.Instant) {
        self.rate = rate
        self.burst = Double(max(1, burst))
        self.tokens = Double(max(1, burst))
        self.updatedAt = now
    }

    /// Takes new limits (after a reload), keeping what is left of the bucket.
    public mutating func reconfigure(rate: Double?, burst: Int, now: ContinuousClock.Instant) {
        refill(now: now)
        self.rate = rate
        self.burst = Double(max(1, burst))
        tokens = min(tokens, self.burst)
    }

    /// How many whole tokens could be taken now.
    public mutating func available(now: ContinuousClock.Instant) -> Int {
        if let pausedUntil, now < pausedUntil { return 0 }
        guard rate != nil else { return Int.max }
        refill(now: now)
        return Int(tokens + 1e-9)
    }

    /// Takes a token if there is one.
    public mutating func take(now: ContinuousClock.Instant) -> Bool {
        if let pausedUntil, now < pausedUntil { return false }
        guard rate != nil else { return true }
        refill(now: now)
        guard tokens + 1e-9 >= 1 else { return false }
        tokens -= 1
        return true
    }

    /// When the next token can be taken (`now` if one is there).
    public mutating func nextTokenTime(now: ContinuousClock.Instant) -> ContinuousClock.Instant {
        if let pausedUntil, now < pausedUntil { return max(pausedUntil, refillTime(from: now)) }
        guard let rate else { return now }
        refill(now: now)
        if tokens + 1e-9 >= 1 { return now }
        return now + .seconds((1 - tokens) / rate)
    }

    /// Hands out nothing until `until` (and empties the bucket, so that the end of a pause is
    /// not a burst).
    public mutating func pause(until: ContinuousClock.Instant, now: ContinuousClock.Instant) {
        refill(now: now)
        pausedUntil = max(pausedUntil ?? until, until)
        tokens = 0
        updatedAt = max(updatedAt, now)
    }

    /// Ends a pause at once (a reload): tokens accrue from `now`, starting from empty.
    public mutating func endPause(now: ContinuousClock.Instant) {
        guard let pausedUntil else { return }
        self.pausedUntil = nil
        updatedAt = max(updatedAt, min(now, pausedUntil))
    }

    /// When the pause in force at `now` ends; `nil` when the bucket is not paused.
    public func pause(at now: ContinuousClock.Instant) -> ContinuousClock.Instant? {
        guard let pausedUntil, now < pausedUntil else { return nil }
        return pausedUntil
    }

    private func refillTime(from now: ContinuousClock.Instant) -> ContinuousClock.Instant {
        guard let rate, tokens < 1 else { return now }
        return now + .seconds((1 - tokens) / rate)
    }

    private mutating func refill(now: ContinuousClock.Instant) {
        if let pausedUntil {
            if now < pausedUntil { return }
            // Tokens accrue from the end of the pause, not during it.
            updatedAt = max(updatedAt, pausedUntil)
            self.pausedUntil = nil
        }
        guard let rate, now > updatedAt else { return }
        tokens = min(burst, tokens + (now - updatedAt).inSeconds * rate)
        updatedAt = now
    }
}
