/// One circuit breaker per endpoint (DESIGN §6).
///
/// Only endpoint-level failures count (connection errors, time-outs, 5xx, 429, Apple's
/// 21005/21009/211xx, configuration errors); any other completion is a sign of life and resets
/// the count. `threshold` failures in a row open the circuit (a configuration error opens it at
/// once); while open nothing is sent; after the cool-down one probe is let through, which closes
/// the circuit or re-opens it with a doubled cool-down (up to `maxCooldown`).
///
/// Pure: the caller passes the time (a monotonic instant).
public struct CircuitBreaker: Sendable, Hashable {
    /// Where the circuit is.
    public enum State: Sendable, Hashable, CustomStringConvertible {
        case closed
        /// Nothing is sent before `until`.
        case open(until: ContinuousClock.Instant)
        /// One probe may go (or has gone and is awaited).
        case halfOpen(probeInFlight: Bool)

        public var description: String {
            switch self {
            case .closed: "closed"
            case .open: "open"
            case .halfOpen: "half-open"
            }
        }
    }

    /// What the caller may do now.
    public enum Permission: Sendable, Hashable {
        /// Send as many requests as other limits allow.
        case allowed
        /// Send exactly one request: the probe (not charged to its order).
        case probe
        /// Send nothing before this time (or, with a probe in flight, until it completes).
        case blocked(until: ContinuousClock.Instant?)
    }

    /// What a completion did to the circuit, for logging.
    public enum Change: Sendable, Hashable {
        case none
        case opened(cooldown: Duration, reason: Reason)
        case reopened(cooldown: Duration, reason: Reason)
        case closed
    }

    public private(set) var state: State = .closed
    public private(set) var consecutiveFailures = 0
    public var threshold: Int
    public var cooldown: Duration
    public var maxCooldown: Duration
    /// The cool-down the next opening will use.
    public private(set) var currentCooldown: Duration
    /// Why the circuit last opened.
    public private(set) var lastReason: Reason?
    /// The last endpoint-level failure, whether or not it opened the circuit.
    public private(set) var lastFailure: Reason?
    /// How many times it opened since start.
    public private(set) var openings = 0

    public init(threshold: Int, cooldown: Duration, maxCooldown: Duration) {
        self.threshold = max(1, threshold)
        self.cooldown = cooldown
        self.maxCooldown = max(cooldown, maxCooldown)
        self.currentCooldown = cooldown
    }

    public var isClosed: Bool { state == .closed }

    /// May a request go now?
    public mutating func permission(now: ContinuousClock.Instant) -> Permission {
        switch state {
        case .closed:
            return .allowed
        case .open(let until):
            if now >= until {
                state = .halfOpen(probeInFlight: false)
                return .probe
            }
            return .blocked(until: until)
        case .halfOpen(let probeInFlight):
            return probeInFlight ? .blocked(until: nil) : .probe
        }
    }

    /// The caller sent the probe.
    public mutating func probeSent() {
        if case .halfOpen = state { state = .halfOpen(probeInFlight: true) }
    }

    /// A request completed with an answer that shows the endpoint works. Only the probe closes
    /// an open circuit: a late answer to a request sent before it opened changes nothing.
    @discardableResult
    public mutating func recordSuccess() -> Change {
        consecutiveFailures = 0
        switch state {
        case .closed, .open:
            return .none
        case .halfOpen:
            state = .closed
            currentCooldown = cooldown
            return .closed
        }
    }

    /// A request completed with an endpoint-level failure. A configuration error opens the
    /// circuit at once. `probeAtOnce`: the endpoint answered other orders a moment ago, so an
    /// opening sends its probe at once instead of after the cool-down — the failures may follow
    /// the orders that were sent rather than the endpoint (the probe, if it fails too, re-opens
    /// it with the cool-down).
    @discardableResult
    public mutating func recordFailure(reason: Reason, configurationError: Bool = false, probeAtOnce: Bool = false, now: ContinuousClock.Instant) -> Change {
        consecutiveFailures += 1
        lastFailure = reason
        switch state {
        case .closed:
            guard configurationError || consecutiveFailures >= threshold else { return .none }
            if probeAtOnce {
                state = .open(until: now)
                lastReason = reason
                openings += 1
                return .opened(cooldown: .zero, reason: reason)
            }
            return open(reason: reason, now: now, reopening: false)
        case .halfOpen:
            return open(reason: reason, now: now, reopening: true)
        case .open:
            // A late completion of a request sent before the circuit opened.
            return .none
        }
    }

    /// A probe that could not be sent after all (no order to probe with): let the next caller probe.
    public mutating func probeAbandoned() {
        if case .halfOpen = state { state = .halfOpen(probeInFlight: false) }
    }

    /// An operator's steering (``CircuitAction``); returns whether the state changed.
    /// `probeNow` changes only an open circuit (a half-open one probes already); `close`
    /// closes any, and restarts the failure count and the cool-down.
    @discardableResult
    public mutating func steer(_ action: CircuitAction, now: ContinuousClock.Instant) -> Bool {
        switch action {
        case .probeNow:
            guard case .open(let until) = state, until > now else { return false }
            state = .open(until: now)
            return true
        case .close:
            consecutiveFailures = 0
            currentCooldown = cooldown
            guard state != .closed else { return false }
            state = .closed
            return true
        }
    }

    /// After a reload: an open circuit becomes half-open, so the new configuration is tried at once.
    public mutating func reset() {
        if case .open = state { state = .halfOpen(probeInFlight: false) }
        currentCooldown = cooldown
    }

    private mutating func open(reason: Reason, now: ContinuousClock.Instant, reopening: Bool) -> Change {
        let cooldown = currentCooldown
        state = .open(until: now + cooldown)
        currentCooldown = min(maxCooldown, currentCooldown * 2)
        lastReason = reason
        openings += 1
        return reopening ? .reopened(cooldown: cooldown, reason: reason) : .opened(cooldown: cooldown, reason: reason)
    }
}
