/// Which requests may go to each endpoint now (DESIGN §6): one circuit breaker and one token
/// bucket, with its 429 pause, per endpoint. The scheduler asks it how many due orders a turn may
/// lease, whether a leased order may start, and whether a verifier's further request (a bounce)
/// may go; it tells it what each exchange said about its endpoint.
///
/// Pure: every method takes the time (a monotonic instant), so tests drive it exactly.
public struct EndpointAdmission: Sendable {
    /// The limits of the configuration (replaced on reload).
    public struct Limits: Sendable, Hashable {
        public var circuitThreshold: Int
        public var circuitCooldown: Duration
        /// Also the longest pause a 429 may impose.
        public var circuitMaxCooldown: Duration
        public var burst: Int
        /// Requests per second per endpoint; `nil` (or absent) is unlimited.
        public var rates: [VerificationEndpoint: Double]
        /// Circuit and burst limits of endpoints whose section sets its own (`[GooglePlay]`);
        /// the others use the limits above.
        public var perEndpoint: [VerificationEndpoint: EndpointLimits]

        public init(
            circuitThreshold: Int, circuitCooldown: Duration, circuitMaxCooldown: Duration, burst: Int, rates: [VerificationEndpoint: Double],
            perEndpoint: [VerificationEndpoint: EndpointLimits] = [:]
        ) {
            self.circuitThreshold = circuitThreshold
            self.circuitCooldown = circuitCooldown
            self.circuitMaxCooldown = circuitMaxCooldown
            self.burst = burst
            self.rates = rates
            self.perEndpoint = perEndpoint
        }

        /// These limits' `share` (0 < share ≤ 1) for one of several nodes sharing them (DESIGN
        /// §7): each rate times the share, the burst times the share rounded down (at least 1).
        /// Circuits are per node and keep their settings.
        public func shared(_ share: Double) -> Limits {
            guard share < 1 else { return self }
            var limits = self
            limits.rates = rates.mapValues { max(0.001, $0 * share) }
            limits.burst = Self.sharedBurst(burst, share: share)
            limits.perEndpoint = perEndpoint.mapValues { endpoint in
                var endpoint = endpoint
                endpoint.burst = Self.sharedBurst(endpoint.burst, share: share)
                return endpoint
            }
            return limits
        }

        /// `maxInFlight`'s share for one of several nodes: rounded down, at least 1.
        public static func sharedInFlight(_ maxInFlight: Int, share: Double) -> Int {
            max(1, Int((Double(maxInFlight) * min(1, share) + 1e-9).rounded(.down)))
        }

        static func sharedBurst(_ burst: Int, share: Double) -> Int {
            max(1, Int((Double(burst) * share + 1e-9).rounded(.down)))
        }

        /// The limits that apply to `endpoint`.
        public func of(_ endpoint: VerificationEndpoint) -> EndpointLimits {
            perEndpoint[endpoint]
                ?? EndpointLimits(circuitThreshold: circuitThreshold, circuitCooldown: circuitCooldown, circuitMaxCooldown: circuitMaxCooldown, burst: burst)
        }
    }

    /// One endpoint's circuit and burst limits.
    public struct EndpointLimits: Sendable, Hashable {
        public var circuitThreshold: Int
        public var circuitCooldown: Duration
        public var circuitMaxCooldown: Duration
        public var burst: Int

        public init(circuitThreshold: Int, circuitCooldown: Duration, circuitMaxCooldown: Duration, burst: Int) {
            self.circuitThreshold = circuitThreshold
            self.circuitCooldown = circuitCooldown
            self.circuitMaxCooldown = circuitMaxCooldown
            self.burst = burst
        }
    }

    /// Whether a verifier that needs another endpoint first (Google's token endpoint) may be
    /// given orders, as far as that endpoint's circuit is concerned.
    public enum Dependency: Sendable, Hashable {
        /// Its circuit is closed.
        case allowed
        /// Half-open (or due to be): lease one order, whose request will be the probe.
        case probeOnly
        /// Open until this time (`nil`: a probe is in flight; its completion wakes the loop).
        case blocked(until: ContinuousClock.Instant?)
    }

    /// What a turn may lease for an endpoint.
    public enum Admission: Sendable, Hashable {
        /// Up to `limit` orders; `probe`: exactly one, not charged, to test an open circuit.
        case claim(limit: Int, probe: Bool)
        /// Nothing now; look again at `until` (`nil`: when an event comes).
        case wait(until: ContinuousClock.Instant?)
    }

    /// Whether an order leased ahead may start now.
    public enum Start: Sendable, Hashable {
        /// Its token is taken: send.
        case go
        /// No token yet: keep it leased and try again at `until` (the next token) or at the next
        /// chance before.
        case waitForToken(until: ContinuousClock.Instant)
        /// The endpoint's circuit opened since the lease was taken: hand it back, uncharged.
        case giveBack
    }

    /// Whether a verifier's further request may go.
    public enum Acquisition: Sendable, Hashable {
        /// Its token is taken.
        case granted
        /// The circuit is open: send nothing.
        case blocked
        /// Ask again at this time (the next token).
        case retry(at: ContinuousClock.Instant)
    }

    /// How a 429 paused an endpoint.
    public struct Pause: Sendable, Hashable {
        /// From now.
        public var duration: Duration
        /// Whether the server asked for longer than `CircuitMaxCooldown`.
        public var capped: Bool
    }

    /// One endpoint as `reconcilectl status` shows it.
    public struct EndpointState: Sendable, Hashable {
        public var endpoint: VerificationEndpoint
        public var circuit: CircuitBreaker.State
        public var lastReason: Reason?
        public var openings: Int
        public var pausedUntil: ContinuousClock.Instant?
        /// Endpoint-level failures in a row (0 after a success): a failing endpoint whose
        /// circuit has not opened yet shows here.
        public var consecutiveFailures = 0
        public var lastFailure: Reason?
    }

    /// The most a turn leases for one endpoint at once.
    public static let maximumClaim = 256

    public private(set) var limits: Limits
    private var circuits: [VerificationEndpoint: CircuitBreaker] = [:]
    private var buckets: [VerificationEndpoint: TokenBucket] = [:]
    private var attributions: [VerificationEndpoint: FailureAttribution] = [:]

    /// How many due orders a probe of orders is chosen from (``probeChoice(_:among:)``; the
    /// others go back uncharged, due at once).
    /// As many as a turn leases, so that a block of orders that keep failing at the head of the
    /// queue is passed over a few probes at most.
    public static let probeCandidates = maximumClaim

    /// - Parameter endpoints: the endpoints the configuration talks to (others are added when first used).
    public init(limits: Limits, endpoints: [VerificationEndpoint], now: ContinuousClock.Instant) {
        self.limits = limits
        for endpoint in endpoints { add(endpoint, now: now) }
    }

    /// The endpoints known so far, in declaration order.
    public var endpoints: [VerificationEndpoint] { VerificationEndpoint.allCases.filter { circuits[$0] != nil } }

    /// New limits (a reload): circuits and buckets keep their state.
    public mutating func reconfigure(_ limits: Limits, endpoints: [VerificationEndpoint], now: ContinuousClock.Instant) {
        self.limits = limits
        for endpoint in circuits.keys {
            let own = limits.of(endpoint)
            circuits[endpoint]!.threshold = max(1, own.circuitThreshold)
            circuits[endpoint]!.cooldown = own.circuitCooldown
            circuits[endpoint]!.maxCooldown = max(own.circuitCooldown, own.circuitMaxCooldown)
            buckets[endpoint]!.reconfigure(rate: limits.rates[endpoint], burst: own.burst, now: now)
        }
        for endpoint in endpoints { add(endpoint, now: now) }
    }

    /// After a reload (DESIGN §6): open circuits become half-open and 429 pauses end, so that
    /// the new configuration is tried at once.
    public mutating func reload(now: ContinuousClock.Instant) {
        for endpoint in circuits.keys {
            circuits[endpoint]!.reset()
            buckets[endpoint]!.endPause(now: now)
        }
    }

    // MARK: - A turn's claims

    /// How many due orders of `endpoint` the turn may lease, given `slots` free ones.
    public mutating func admit(_ endpoint: VerificationEndpoint, slots: Int, now: ContinuousClock.Instant) -> Admission {
        add(endpoint, now: now)
        let probe: Bool
        switch circuits[endpoint]!.permission(now: now) {
        case .allowed: probe = false
        case .probe: probe = true
        case .blocked(let until): return .wait(until: until)
        }
        let tokens = buckets[endpoint]!.available(now: now)
        guard tokens > 0 else {
            if probe { circuits[endpoint]!.probeAbandoned() }
            return .wait(until: buckets[endpoint]!.nextTokenTime(now: now))
        }
        return .claim(limit: probe ? 1 : min(slots, tokens, Self.maximumClaim), probe: probe)
    }

    /// The probe the turn leased is about to go: it takes a token like any request, and counts as
    /// sent only with it. Returns false when there is none (the probe is abandoned; the order
    /// goes back).
    public mutating func sendProbe(_ endpoint: VerificationEndpoint, now: ContinuousClock.Instant) -> Bool {
        add(endpoint, now: now)
        guard buckets[endpoint]!.take(now: now) else {
            circuits[endpoint]!.probeAbandoned()
            return false
        }
        circuits[endpoint]!.probeSent()
        return true
    }

    /// A probe the turn asked for found no order to probe with (or the turn failed).
    public mutating func probeAbandoned(_ endpoint: VerificationEndpoint) {
        circuits[endpoint]?.probeAbandoned()
    }

    /// Whether an order leased ahead of a slot may start now.
    public mutating func start(_ endpoint: VerificationEndpoint, now: ContinuousClock.Instant) -> Start {
        add(endpoint, now: now)
        switch circuits[endpoint]!.permission(now: now) {
        case .allowed:
            return buckets[endpoint]!.take(now: now) ? .go : .waitForToken(until: buckets[endpoint]!.nextTokenTime(now: now))
        case .probe, .blocked:
            circuits[endpoint]!.probeAbandoned()
            return .giveBack
        }
    }

    /// A verifier's further request within an attempt (a bounce to the sandbox, another page).
    public mutating func acquire(_ endpoint: VerificationEndpoint, now: ContinuousClock.Instant) -> Acquisition {
        add(endpoint, now: now)
        let permission = circuits[endpoint]!.permission(now: now)
        if case .blocked = permission { return .blocked }
        // The probe takes a token like any request, and counts as sent only with the token in
        // hand: one waiting for a token leaves the circuit half-open (a probe marked sent and
        // never sent would block the endpoint for good).
        if buckets[endpoint]!.take(now: now) {
            if case .probe = permission { circuits[endpoint]!.probeSent() }
            return .granted
        }
        return .retry(at: max(now + .milliseconds(1), buckets[endpoint]!.nextTokenTime(now: now)))
    }

    // MARK: - What exchanges said

    /// Feeds an exchange's observation to the endpoint's circuit.
    @discardableResult
    public mutating func observe(
        _ endpoint: VerificationEndpoint, _ observation: EndpointObservation, order: Int64? = nil, now: ContinuousClock.Instant
    ) -> CircuitBreaker.Change {
        observeAttributed(endpoint, observation, order: order, now: now).change
    }

    /// Feeds an exchange's observation (of a request for `order`) to the endpoint's circuit, and
    /// says whom a failure is counted against (``FailureAttribution``). While the circuit is
    /// closed, a failure that follows its order, or any order's failure within `CircuitCooldown`
    /// of a healthy answer, leaves it alone (`.order`: the caller charges the order). When the
    /// endpoint answered healthily within `CircuitMaxCooldown`, an opening sends its probe at
    /// once.
    public mutating func observeAttributed(
        _ endpoint: VerificationEndpoint, _ observation: EndpointObservation, order: Int64?, now: ContinuousClock.Instant
    ) -> (change: CircuitBreaker.Change, blame: FailureAttribution.Blame) {
        add(endpoint, now: now)
        let reason: Reason
        let configuration: Bool
        switch observation {
        case .healthy:
            attributions[endpoint, default: FailureAttribution()].healthy(order: order, now: now)
            return (circuits[endpoint]!.recordSuccess(), .endpoint)
        case .failure(let why): (reason, configuration) = (why, false)
        case .configuration(let why): (reason, configuration) = (why, true)
        }
        var attribution = attributions[endpoint, default: FailureAttribution()]
        let blame = attribution.failure(order: order, now: now)
        attributions[endpoint] = attribution
        // Only a closed circuit exempts it: once open, a failed probe re-opens it whatever the
        // order (the probe was the best candidate there was), so probes never go faster than the
        // cool-down. Within `CircuitCooldown` of a healthy answer, an order's failure is its own
        // too: a run of failing orders among working ones is charged to them (at most the
        // requests of one cool-down), not shut on the others.
        let grace = order != nil && attribution.answeredHealthily(within: limits.of(endpoint).circuitCooldown, now: now)
        if (blame == .order || grace) && circuits[endpoint]!.isClosed { return (.none, .order) }
        let atOnce = attribution.answeredHealthily(within: limits.of(endpoint).circuitMaxCooldown, now: now)
        return (circuits[endpoint]!.recordFailure(reason: reason, configurationError: configuration, probeAtOnce: atOnce, now: now), .endpoint)
    }

    /// A healthy answer that changed nothing on the circuit and was not carried to it (see the
    /// scheduler's quiet endpoints): it still says the endpoint answers.
    public mutating func answeredHealthily(_ endpoint: VerificationEndpoint, at time: ContinuousClock.Instant) {
        attributions[endpoint, default: FailureAttribution()].healthy(order: nil, now: time)
    }

    /// Which of the due orders a probe of `endpoint` leased (earliest due first) should be sent.
    public func probeChoice(_ endpoint: VerificationEndpoint, among orders: [Int64]) -> Int? {
        (attributions[endpoint] ?? FailureAttribution()).probeChoice(orders)
    }

    /// A 429: the endpoint's whole bucket pauses for `retryAfter` (at least a second), capped at
    /// `CircuitMaxCooldown` — a Retry-After of centuries must not stall the endpoint for good.
    public mutating func pause(_ endpoint: VerificationEndpoint, retryAfter: Duration?, now: ContinuousClock.Instant) -> Pause {
        add(endpoint, now: now)
        let cap = max(.seconds(1), limits.of(endpoint).circuitMaxCooldown)
        let asked = max(retryAfter ?? .seconds(1), .seconds(1))
        let duration = min(asked, cap)
        buckets[endpoint]!.pause(until: now + duration, now: now)
        return Pause(duration: duration, capped: asked > cap)
    }

    // MARK: - Reading

    /// What `endpoint`'s circuit allows a verifier that depends on it (it is not charged or
    /// changed here: the dependent request itself takes the token and, when half-open, is the
    /// probe).
    public func dependency(_ endpoint: VerificationEndpoint, now: ContinuousClock.Instant) -> Dependency {
        switch circuits[endpoint]?.state {
        case nil, .closed?: return .allowed
        case .open(let until)?: return now >= until ? .probeOnly : .blocked(until: until)
        case .halfOpen(let probeInFlight)?: return probeInFlight ? .blocked(until: nil) : .probeOnly
        }
    }

    /// Whether the endpoint's circuit is closed (orders age only then).
    public func isClosed(_ endpoint: VerificationEndpoint) -> Bool {
        circuits[endpoint]?.isClosed ?? true
    }

    /// Whether `endpoint`'s circuit is closed with no failure counted: an answer that shows it
    /// healthy would change nothing.
    public func isQuiet(_ endpoint: VerificationEndpoint) -> Bool {
        circuits[endpoint].map { $0.isClosed && $0.consecutiveFailures == 0 } ?? false
    }

    /// When an order handed back for `endpoint` may be tried again: its circuit's probe time
    /// while open, else after the first cool-down.
    public func retryTime(_ endpoint: VerificationEndpoint, now: ContinuousClock.Instant) -> ContinuousClock.Instant {
        if case .open(let until)? = circuits[endpoint]?.state { return max(now, until) }
        return now + limits.of(endpoint).circuitCooldown
    }

    /// Every known endpoint, in declaration order.
    public func states(now: ContinuousClock.Instant) -> [EndpointState] {
        endpoints.map { endpoint in
            let circuit = circuits[endpoint]!
            return EndpointState(
                endpoint: endpoint, circuit: circuit.state, lastReason: circuit.lastReason, openings: circuit.openings,
                pausedUntil: buckets[endpoint]!.pause(at: now), consecutiveFailures: circuit.consecutiveFailures,
                lastFailure: circuit.lastFailure)
        }
    }

    /// An operator's steering of one endpoint's circuit: whether it changed; `nil` when the
    /// configuration has no such endpoint.
    public mutating func steer(_ endpoint: VerificationEndpoint, _ action: CircuitAction, now: ContinuousClock.Instant) -> Bool? {
        guard circuits[endpoint] != nil else { return nil }
        return circuits[endpoint]!.steer(action, now: now)
    }

    private mutating func add(_ endpoint: VerificationEndpoint, now: ContinuousClock.Instant) {
        guard circuits[endpoint] == nil else { return }
        let own = limits.of(endpoint)
        circuits[endpoint] = CircuitBreaker(threshold: own.circuitThreshold, cooldown: own.circuitCooldown, maxCooldown: own.circuitMaxCooldown)
        buckets[endpoint] = TokenBucket(rate: limits.rates[endpoint], burst: own.burst, now: now)
    }
}
