import Foundation
import ReconcileCore
import ReconcileSystem

/// The heart of `reconciled` (DESIGN §4–6): picks due orders by index, leases them, sends each
/// attempt within the in-flight, rate and circuit limits, applies the outcomes in batches, and
/// sleeps until the next due order or event. No polling: it wakes for a due time, a circuit's
/// probe time, a token, a completion, new orders, an operator, a reload or a clock step.
///
/// An actor on its own dispatch queue, because it calls the store synchronously.
public actor Scheduler: EndpointGate {
    /// What the scheduler needs from the configuration; replaced on reload.
    public struct Settings: Sendable {
        public var verifier: any OrderVerifier
        /// The delivery client, when `[Delivery] URL=` is set.
        public var delivery: DeliveryClient?
        public var resolver: AttemptResolver
        public var maxInFlight: Int
        /// Requests per second per endpoint; `nil` is unlimited.
        public var maxRate: Double?
        public var burst: Int
        public var circuitThreshold: Int
        public var circuitCooldown: Duration
        public var circuitMaxCooldown: Duration
        /// The longest single request, for the lease.
        public var requestTimeout: Duration
        /// The sandbox's share of `maxRate` (a tenth for the App Store Server API).
        public var sandboxRateFactor = 1.0

        /// Requests per second for `endpoint`; `nil` is unlimited.
        public func rate(for endpoint: VerificationEndpoint) -> Double? {
            endpoint == .sandbox ? maxRate.map { max(0.001, $0 * sandboxRateFactor) } : maxRate
        }

        public init(
            verifier: any OrderVerifier, delivery: DeliveryClient?, resolver: AttemptResolver, maxInFlight: Int, maxRate: Double?,
            burst: Int, circuitThreshold: Int, circuitCooldown: Duration, circuitMaxCooldown: Duration, requestTimeout: Duration
        ) {
            self.verifier = verifier
            self.delivery = delivery
            self.resolver = resolver
            self.maxInFlight = maxInFlight
            self.maxRate = maxRate
            self.burst = burst
            self.circuitThreshold = circuitThreshold
            self.circuitCooldown = circuitCooldown
            self.circuitMaxCooldown = circuitMaxCooldown
            self.requestTimeout = requestTimeout
        }
    }

    private let executor = DispatchQueueExecutor(label: "reconcile.scheduler")
    public nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

    private let store: any OrderStore
    private let logger: Logger
    private let clock: any SchedulerClock
    /// This daemon's lease owner: host, pid and a random part, unique per start.
    public nonisolated let owner: String
    private var settings: Settings
    private let wake = WakeSignal()
    /// Wall-clock time minus monotonic time, to see the wall clock step.
    private var wallOffset: Double
    private var random = SystemRandomSource()

    private var admission: EndpointAdmission
    private var reporter: CompletionReporter
    private var bundleMismatches = BundleMismatchStreak()
    private var inFlight = 0
    /// Orders leased ahead of a free slot (a few), so that a finished attempt's slot is refilled
    /// at once instead of after the next commit. Their tokens and circuit permission are taken
    /// when they start; if they cannot start, they go back uncharged.
    private var ready: [ReadyOrder] = []
    private var pendingCompletions: [AttemptCompletion] = []
    private var stopping = false
    private var stopped = false
    private var stopWaiters: [CheckedContinuation<Void, Never>] = []
    /// Monotonic seconds.
    private var drainDeadline: Double?
    private var heartbeat: (@Sendable () -> Void)?
    private var heartbeatInterval: Duration?
    private var changeObserver: (@Sendable () -> Void)?
    /// How long the requests to each endpoint took, since start (for metrics).
    private var requestDurations: [VerificationEndpoint: LatencyHistogram] = [:]

    /// What happened since start.
    public struct Counters: Sendable, Hashable {
        public var attemptsStarted = 0
        public var requestsSent = 0
        public var finished = 0
        public var rejected = 0
        public var escalated = 0
        public var expired = 0
        public var retried = 0
        /// Attempt outcomes by class (`transient`, `uncharged`, …; ``MetricsSnapshot/outcomeClasses``).
        public var outcomes: [String: Int] = [:]

        public init() {}
    }

    /// Counters since start, for status and metrics.
    public var counters: Counters { reporter.counters }

    public init(
        store: any OrderStore, settings: Settings, logger: Logger, escalations: EscalationRunner? = nil,
        clock: any SchedulerClock = SystemSchedulerClock()
    ) {
        self.store = store
        self.settings = settings
        self.logger = logger
        self.clock = clock
        self.reporter = CompletionReporter(logger: logger, escalations: escalations)
        let host = ProcessInfo.processInfo.hostName
        self.owner = "\(host):\(getpid()):\(String(UInt32.random(in: 0...UInt32.max), radix: 36))"
        self.wallOffset = clock.now().timeIntervalSince1970 - clock.uptime()
        self.admission = EndpointAdmission(limits: Self.limits(settings), endpoints: Self.endpoints(of: settings), now: clock.uptime())
    }

    // MARK: - Control

    /// Wakes the loop: new orders, an operator's action.
    public nonisolated func nudge() {
        wake.signal()
    }

    /// Takes new settings (a reload): limits change, open circuits become half-open, and pauses
    /// after a 429 end (DESIGN §6), so that the new configuration is tried at once.
    public func apply(_ settings: Settings) {
        self.settings = settings
        let now = clock.uptime()
        admission.reconfigure(Self.limits(settings), endpoints: Self.endpoints(of: settings), now: now)
        admission.reload(now: now)
        finishUndeliverable()
        wake.signal()
    }

    /// Without a delivery URL (removed by a reload, or none at start after orders were verified
    /// under one), verified orders finish at once (DESIGN §5): those waiting out a delivery
    /// backoff are made due now, and the next turns finish them without sending anything.
    private func finishUndeliverable() {
        guard settings.delivery == nil else { return }
        do {
            let moved = try store.clampNextAttempts(of: [.deliver], notAfter: clock.now())
            if moved > 0 {
                logger.notice("no delivery URL is configured: \(Plural.count(moved, "verified order")) waiting to be delivered finish now")
            }
        } catch {
            logger.error(
                "cannot bring deliveries forward: \(error); verified orders finish when they are due",
                [.reason: StoreFailure.of(error).rawValue])
        }
    }

    /// Calls `beat` from the loop at least every `interval` (the systemd watchdog): a wedged loop
    /// stops calling it.
    public func setHeartbeat(every interval: Duration, _ beat: @escaping @Sendable () -> Void) {
        heartbeatInterval = interval
        heartbeat = beat
        wake.signal()
    }

    /// Calls `changed` after every turn that moved orders (claims, outcomes) and after every
    /// circuit change: the daemon's status line and metrics are refreshed from it.
    public func setChangeObserver(_ changed: @escaping @Sendable () -> Void) {
        changeObserver = changed
    }

    /// How far the wall clock must move against the monotonic one to count as a step (seconds).
    static let clockStep = 60.0

    /// The wall clock was set: re-evaluate what is due, and after a step back bring far-off
    /// attempts forward so that the queue does not stall for the length of the step.
    public func clockChanged() {
        let offset = clock.now().timeIntervalSince1970 - clock.uptime()
        let step = offset - wallOffset
        wallOffset = offset
        if step < -Self.clockStep {
            let limit = clock.now().addingTimeInterval(settings.resolver.policy.backoff.maxDelay.inSeconds)
            let moved = (try? store.clampNextAttempts(notAfter: limit)) ?? 0
            logger.warning(
                "the wall clock stepped back by \(TimeSpan.format(.seconds((-step).rounded()))); \(Plural.count(moved, "order")) scheduled beyond MaxDelay brought forward",
                [.reason: "clock_step"])
        } else if step > Self.clockStep {
            logger.notice("the wall clock stepped forward by \(TimeSpan.format(.seconds(step.rounded()))); re-evaluating what is due", [.reason: "clock_step"])
        }
        wake.signal()
    }

    /// Stops taking work, lets in-flight attempts finish for up to `drainTimeout`, commits their
    /// outcomes; returns when ``run()`` has ended. Attempts still running after that keep their
    /// leases until the next start.
    public func stop(drainTimeout: Duration) async {
        drainDeadline = clock.uptime() + drainTimeout.inSeconds
        stopping = true
        wake.signal()
        guard !stopped else { return }
        await withCheckedContinuation { stopWaiters.append($0) }
    }

    /// A snapshot for `reconcilectl status` and the metrics file.
    public func status() -> SchedulerStatus {
        let mono = clock.uptime()
        let wall = clock.now()
        func date(_ time: Double) -> Date { wall.addingTimeInterval(time - mono) }
        let endpoints = admission.states(now: mono).map { state in
            var until: Date?
            if case .open(let time) = state.circuit { until = date(time) }
            return SchedulerStatus.Endpoint(
                endpoint: state.endpoint, circuit: state.circuit.description, openUntil: until, lastReason: state.lastReason,
                openings: state.openings, pausedUntil: state.pausedUntil.map(date))
        }
        var durations = requestDurations
        for state in endpoints where durations[state.endpoint] == nil { durations[state.endpoint] = LatencyHistogram() }
        return SchedulerStatus(inFlight: inFlight, endpoints: endpoints, counters: counters, requestDurations: durations)
    }

    // MARK: - The loop

    /// Runs until ``stop(drainTimeout:)``. Releases the leases a crash left first.
    public func run() async {
        do {
            let released = try store.releaseLeases(now: clock.now())
            if !released.isEmpty {
                logger.notice("released the leases of \(Plural.count(released.count, "order")) left by an earlier stop; they are due again")
            }
        } catch {
            logger.error("cannot release leases: \(error)", [.reason: StoreFailure.of(error).rawValue])
        }
        finishUndeliverable()
        // After a stop, the loop goes on committing outcomes (without claiming) until nothing is
        // in flight or the drain time is up.
        while !stopping || (inFlight > 0 && clock.uptime() < drainDeadline ?? 0) {
            var deadline = turn()
            if stopping, let drainDeadline { deadline = min(deadline ?? drainDeadline, drainDeadline) }
            if let heartbeat, let interval = heartbeatInterval {
                heartbeat()
                let beat = clock.uptime() + interval.inSeconds
                deadline = min(deadline ?? beat, beat)
            }
            await wake.wait(until: deadline.map(clock.instant(atUptime:)))
        }
        drain()
        stopped = true
        for waiter in stopWaiters { waiter.resume() }
        stopWaiters.removeAll()
    }

    /// After the loop: says what is left in flight, hands back what was leased ahead, commits
    /// every outcome that came in.
    func drain() {
        if inFlight > 0 {
            logger.warning("\(Plural.count(inFlight, "attempt")) still in flight after DrainTimeout; they are retried at the next start")
        }
        for leased in ready { giveBack(leased, reason: "stopping") }
        ready.removeAll()
        flush()
    }

    /// One turn: expire, then in one transaction commit the outcomes of finished attempts and
    /// lease what is due and allowed; start those attempts. Returns when to look again, in
    /// monotonic seconds (`nil`: only an event can bring work).
    func turn() -> Double? {
        // A step the kernel did not announce (no timerfd clock-set notice here, or a clock
        // faked for a process) is seen at the next turn.
        if abs(clock.now().timeIntervalSince1970 - clock.uptime() - wallOffset) > Self.clockStep { clockChanged() }
        let now = clock.now()
        let mono = clock.uptime()
        var wakeTimes: [Double] = []
        var claims: [Claim] = []
        let completions = pendingCompletions
        pendingCompletions.removeAll()
        do {
            if let time = try expireWaitingOrders(now: now) { wakeTimes.append(mono + time.timeIntervalSince(now)) }
            if !stopping {
                claims = try planClaims(now: now, mono: mono, wakeTimes: &wakeTimes)
            }
            guard !completions.isEmpty || !claims.isEmpty else { return wakeTimes.min().map { max($0, mono) } }
            let turn = try store.commit(completions, claims: claims.map(\.request), owner: owner, now: now)
            reporter.committed(completions, turn.results)
            if !completions.isEmpty { wakeTimes.append(mono) }  // outcomes may have made orders due
            for (claim, claimed) in zip(claims, turn.claimed) {
                dispatch(claimed, for: claim, mono: mono)
                if claim.probe && claimed.isEmpty { admission.probeAbandoned(claim.endpoint) }
                if claim.verifier == nil && !claimed.isEmpty { wakeTimes.append(mono) }  // their completions, next turn
                if claimed.count == claim.request.limit && !claim.probe { wakeTimes.append(mono) }  // more may be due at once
            }
            startReady()
            changeObserver?()
        } catch {
            pendingCompletions = completions + pendingCompletions
            for claim in claims where claim.probe { admission.probeAbandoned(claim.endpoint) }
            logger.error(
                "the store failed while scheduling: \(error); retrying in 1s", id: .storeUnavailable,
                [.reason: StoreFailure.of(error).rawValue])
            wakeTimes.append(mono + 1)
        }
        return wakeTimes.min().map { max($0, mono) }
    }

    /// Starts (a probe), queues (leased ahead) or finishes at once (no delivery URL) the orders
    /// one claim leased.
    private func dispatch(_ claimed: [ClaimedOrder], for claim: Claim, mono: Double) {
        for order in claimed {
            guard let verifier = claim.verifier else {
                // No delivery URL: finished as verified, nothing sent, no attempt charged.
                pendingCompletions.append(AttemptCompletion(order: order, records: [], resolution: .finishedWithoutDelivery, charged: false))
                continue
            }
            guard claim.probe else {
                ready.append(ReadyOrder(order: order, verifier: verifier, endpoint: claim.endpoint))
                continue
            }
            // A probe is a request like any other: it goes with a token or not at all.
            guard admission.sendProbe(claim.endpoint, now: mono) else {
                giveBack(ReadyOrder(order: order, verifier: verifier, endpoint: claim.endpoint), reason: "rate_limited")
                continue
            }
            logger.info(
                "probing \(claim.endpoint.rawValue) with order \(order.orderID) (not charged)",
                [.orderID: order.orderID, .endpoint: claim.endpoint.rawValue])
            start(order, with: verifier)
        }
    }

    /// An order leased ahead, and what to verify it with.
    private struct ReadyOrder {
        var order: ClaimedOrder
        var verifier: any OrderVerifier
        var endpoint: VerificationEndpoint
    }

    /// How many orders may wait leased for a slot.
    private var readyLimit: Int { min(8, max(1, settings.maxInFlight / 8)) }

    /// A claim the turn will make, and for what.
    private struct Claim {
        var request: ClaimRequest
        /// `nil`: deliveries without a delivery URL, finished as verified.
        var verifier: (any OrderVerifier)?
        var endpoint: VerificationEndpoint
        var probe: Bool
    }

    /// What may be claimed now: per kind, as many due orders as free slots, tokens and the
    /// endpoint's circuit allow (delivery first: those orders are paid and granted already).
    private func planClaims(now: Date, mono: Double, wakeTimes: inout [Double]) throws -> [Claim] {
        var claims: [Claim] = []
        var slots = settings.maxInFlight - inFlight + readyLimit - ready.count
        let lease = now.addingTimeInterval(settings.requestTimeout.inSeconds * 2 + 60)
        for kind in [WorkKind.deliver, .verify] {
            // `nil` only for deliveries without a delivery URL, which need no slot.
            let candidate: (any OrderVerifier)? = kind == .verify ? settings.verifier : settings.delivery
            if candidate != nil && slots <= 0 { continue }  // a completion wakes the loop
            guard let due = try store.nextDueTime(kind) else { continue }
            if due > now {
                wakeTimes.append(mono + due.timeIntervalSince(now))
                continue
            }
            guard let verifier = candidate else {
                // No delivery URL: verified orders finish at once, without a slot or a token.
                claims.append(Claim(
                    request: ClaimRequest(kind: .deliver, limit: EndpointAdmission.maximumClaim, charge: false, leaseUntil: lease),
                    verifier: nil, endpoint: .delivery, probe: false))
                continue
            }
            let endpoint = verifier.firstEndpoint
            switch admission.admit(endpoint, slots: slots, now: mono) {
            case .wait(let until):
                if let until { wakeTimes.append(until) }
            case .claim(let limit, let probe):
                slots -= limit
                claims.append(Claim(
                    request: ClaimRequest(kind: kind, limit: limit, charge: !probe, leaseUntil: lease), verifier: verifier,
                    endpoint: endpoint, probe: probe))
            }
        }
        return claims
    }

    /// Expires waiting orders past MaxAge; returns when the next one will.
    private func expireWaitingOrders(now: Date) throws -> Date? {
        let maxAge = settings.resolver.policy.maxAge.inSeconds
        guard let oldest = try store.oldestWaitingReceivedAt() else { return nil }
        let expiry = oldest.addingTimeInterval(maxAge)
        guard expiry <= now else { return expiry }
        let expired = try store.expireWaiting(receivedBefore: now.addingTimeInterval(-maxAge), now: now, limit: 500)
        for result in expired { reporter.report(result, lastRequest: nil) }
        if !expired.isEmpty { changeObserver?() }
        return expired.count == 500 ? now : try store.oldestWaitingReceivedAt().map { $0.addingTimeInterval(maxAge) }
    }

    /// Starts leased orders while slots, tokens and circuits allow; orders whose endpoint closed
    /// meanwhile go back uncharged.
    private func startReady() {
        let mono = clock.uptime()
        var index = 0
        while index < ready.count && inFlight < settings.maxInFlight {
            let next = ready[index]
            switch admission.start(next.endpoint, now: mono) {
            case .go:
                ready.remove(at: index)
                start(next.order, with: next.verifier)
            case .waitForToken:
                index += 1
            case .giveBack:
                // The endpoint failed since the lease was taken: not sent, not charged.
                ready.remove(at: index)
                giveBack(next, reason: "circuit_open")
            }
        }
    }

    /// Hands a leased, unsent order back to the next turn: due again at its circuit's probe
    /// time, the attempt not charged.
    private func giveBack(_ leased: ReadyOrder, reason: String) {
        let completion = settings.resolver.resolve(
            VerifierOutcome(records: [], verdict: .notSent(Reason(reason))), for: leased.order, now: clock.now(),
            circuitClosed: false, retryAt: retryTime(leased.endpoint), random: &random)
        pendingCompletions.append(completion)
        wake.signal()
    }

    /// When an order of `endpoint` may next be tried: its circuit's probe time, or a cool-down.
    private func retryTime(_ endpoint: VerificationEndpoint) -> Date {
        let mono = clock.uptime()
        return clock.now().addingTimeInterval(admission.retryTime(endpoint, now: mono) - mono)
    }

    private func start(_ order: ClaimedOrder, with verifier: any OrderVerifier) {
        inFlight += 1
        reporter.attemptStarted()
        // Off the scheduler's queue: building bodies and parsing answers run in parallel.
        Task.detached { [self] in
            let outcome = await verifier.verify(order, gate: self)
            await self.finished(order, outcome, endpoint: verifier.firstEndpoint)
        }
    }

    private func finished(_ order: ClaimedOrder, _ outcome: VerifierOutcome, endpoint: VerificationEndpoint) {
        inFlight -= 1
        reporter.requestsSent(outcome.records.count)
        for record in outcome.records {
            requestDurations[record.endpoint, default: LatencyHistogram()].record(record.latency)
        }
        var outcome = outcome
        let checked = bundleMismatches.check(outcome.verdict)
        outcome.verdict = checked.verdict
        if let reason = checked.configuration { observe(endpoint, .configuration(reason: reason)) }
        let completion = settings.resolver.resolve(
            outcome, for: order, now: clock.now(), circuitClosed: admission.isClosed(endpoint), retryAt: retryTime(endpoint),
            random: &random)
        // Committed by the next turn, with whatever else finished meanwhile and the next claims:
        // one transaction, one fsync.
        pendingCompletions.append(completion)
        if !stopping { startReady() }
        wake.signal()
    }

    /// Commits every pending completion (at stop, after the loop has ended).
    private func flush() {
        guard !pendingCompletions.isEmpty else { return }
        let batch = pendingCompletions
        pendingCompletions.removeAll()
        do {
            reporter.committed(batch, try store.complete(batch, owner: owner, now: clock.now()))
        } catch {
            logger.error(
                "cannot commit \(Plural.count(batch.count, "attempt outcome")) at stop: \(error); the orders are retried at the next start",
                id: .storeUnavailable, [.reason: StoreFailure.of(error).rawValue])
        }
    }

    // MARK: - EndpointGate

    public func acquire(_ endpoint: VerificationEndpoint) async -> Bool {
        while !stopping {
            let mono = clock.uptime()
            switch admission.acquire(endpoint, now: mono) {
            case .granted: return true
            case .blocked: return false
            case .retry(let at): try? await DeadlineTimer.shared.sleep(for: .seconds(at - mono))
            }
        }
        return false
    }

    public func report(_ endpoint: VerificationEndpoint, _ observation: EndpointObservation, retryAfter: Duration?, rateLimited: Bool) {
        if rateLimited {
            let pause = admission.pause(endpoint, retryAfter: retryAfter?.inSeconds, now: clock.uptime())
            let capped = pause.capped ? " (Retry-After asked for \(TimeSpan.format(retryAfter ?? .zero)); capped at CircuitMaxCooldown)" : ""
            logger.notice(
                "\(endpoint.rawValue) answered 429; sending nothing there for \(TimeSpan.format(.seconds(pause.seconds)))\(capped)",
                [.endpoint: endpoint.rawValue, .reason: "http_429"])
            changeObserver?()
        }
        observe(endpoint, observation)
    }

    /// Feeds the endpoint's circuit; logs and announces an opening or closing.
    private func observe(_ endpoint: VerificationEndpoint, _ observation: EndpointObservation) {
        let change = admission.observe(endpoint, observation, now: clock.uptime())
        switch change {
        case .none:
            return
        case .opened(let cooldown, let reason), .reopened(let cooldown, let reason):
            let fields: KeyValuePairs<LogField, String?> = [.endpoint: endpoint.rawValue, .reason: reason]
            let verb = { if case .reopened = change { "re-opened" } else { "opened" } }()
            let message = "circuit for \(endpoint.rawValue) \(verb) (\(reason)); nothing is sent there for \(TimeSpan.format(.seconds(cooldown))), then one probe"
            if case .configuration = observation {
                logger.error(message + " — fix the configuration, then `reconcilectl reload`", id: .circuitOpened, fields)
            } else {
                logger.warning(message, id: .circuitOpened, fields)
            }
        case .closed:
            logger.notice("circuit for \(endpoint.rawValue) closed: the probe succeeded", id: .circuitClosed, [.endpoint: endpoint.rawValue])
        }
        changeObserver?()
        wake.signal()
    }

    // MARK: - Limits

    /// The admission limits of a configuration.
    static func limits(_ settings: Settings) -> EndpointAdmission.Limits {
        var rates: [VerificationEndpoint: Double] = [:]
        for endpoint in VerificationEndpoint.allCases { rates[endpoint] = settings.rate(for: endpoint) }
        return EndpointAdmission.Limits(
            circuitThreshold: settings.circuitThreshold, circuitCooldown: settings.circuitCooldown.inSeconds,
            circuitMaxCooldown: settings.circuitMaxCooldown.inSeconds, burst: settings.burst, rates: rates)
    }

    /// The endpoints a configuration talks to.
    static func endpoints(of settings: Settings) -> [VerificationEndpoint] {
        var used = [settings.verifier.firstEndpoint]
        if settings.verifier.firstEndpoint == .production { used.append(.sandbox) }
        if let delivery = settings.delivery { used.append(delivery.firstEndpoint) }
        return used
    }
}
