import Foundation
import ReconcileCore
import ReconcileSystem

/// The heart of `reconciled` (DESIGN §4–6): picks due orders by index, leases them, sends each
/// attempt within the in-flight, rate and circuit limits, applies the outcomes in batches, and
/// sleeps until the next due order or event. No polling: it wakes for a due time, a circuit's
/// probe time, a token, a completion, new orders, an operator, a reload or a clock step.
///
/// An actor on its own dispatch queue, because it calls the store synchronously.
public actor Scheduler {
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
        /// `[State] LeaseTime=` for a shared store: how long a lease lasts (renewed while the
        /// attempt runs); `nil` (SQLite) leases for twice the request time-out plus a minute.
        public var leaseTime: Duration?

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

    let store: any OrderStore
    let logger: Logger
    let clock: any SchedulerClock
    /// This daemon's lease owner: host, pid and a random part, unique per start.
    public nonisolated let owner: String
    var settings: Settings
    let wake = WakeSignal()
    /// Wall-clock time minus monotonic time, to see the wall clock step.
    var wallOffset: Double
    var random = SystemRandomSource()

    var admission: EndpointAdmission
    var reporter: CompletionReporter
    var bundleMismatches = BundleMismatchStreak()
    var inFlight = 0
    /// Orders leased ahead of a free slot (a few), so that a finished attempt's slot is refilled
    /// at once instead of after the next commit. Their tokens and circuit permission are taken
    /// when they start; if they cannot start, they go back uncharged.
    var ready: [ReadyOrder] = []
    var pendingCompletions: [AttemptCompletion] = []
    var stopping = false
    var stopped = false
    var stopWaiters: [CheckedContinuation<Void, Never>] = []
    /// Monotonic seconds.
    var drainDeadline: Double?
    var heartbeat: (@Sendable () -> Void)?
    var heartbeatInterval: Duration?
    var changeObserver: (@Sendable () -> Void)?
    /// How long the requests to each endpoint took, since start (for metrics).
    var requestDurations: [VerificationEndpoint: LatencyHistogram] = [:]
    /// The store when several nodes share it; `nil` for SQLite.
    let shared: (any SharedOrderStore)?
    /// This node's part in the cluster: share, heartbeats, renewals, rescues.
    var cluster = ClusterState()
    /// Orders this scheduler holds leases on, by reference: started, or finished and not yet
    /// committed (renewed while the store is shared).
    var held: Set<Int64> = []
    /// While the store fails: since when, why, and how long the next retry waits.
    var storeTrouble: StoreTrouble?

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
        self.shared = store as? any SharedOrderStore
        self.owner = shared?.leaseOwner ?? "\(host):\(getpid()):\(String(UInt32.random(in: 0...UInt32.max), radix: 36))"
        self.wallOffset = clock.now().timeIntervalSince1970 - clock.uptime()
        self.admission = EndpointAdmission(limits: Self.limits(settings), endpoints: Self.endpoints(of: settings), now: clock.uptime())
    }

    // MARK: - The loop

    /// Runs until ``stop(drainTimeout:)``. Releases the leases a crash left first.
    public func run() async {
        do {
            let released = try store.releaseLeases(now: storeNow())
            if !released.isEmpty {
                logger.notice("released the leases of \(Plural.count(released.count, "order")) left by an earlier stop; they are due again")
            }
        } catch {
            logger.error("cannot release leases: \(error)", [.reason: StoreFailure.of(error).rawValue])
        }
        finishUndeliverable()
        cluster.startedAt = clock.now()
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
        leaveCluster()
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
        let now = storeNow()
        let mono = clock.uptime()
        var wakeTimes: [Double] = []
        var claims: [Claim] = []
        let completions = pendingCompletions
        pendingCompletions.removeAll()
        do {
            if shared != nil, let next = try coordinate(mono: mono) { wakeTimes.append(next) }
            if let time = try expireWaitingOrders(now: now) { wakeTimes.append(mono + time.timeIntervalSince(now)) }
            if !stopping && clusterAllowsWork(mono: mono, wakeTimes: &wakeTimes) {
                claims = try planClaims(now: now, mono: mono, wakeTimes: &wakeTimes)
            }
            guard !completions.isEmpty || !claims.isEmpty else {
                storeRecovered()
                // Orders leased ahead may wait for a token: look again when it comes.
                if let nextToken = startReady() { wakeTimes.append(nextToken) }
                return wakeTimes.min().map { max($0, mono) }
            }
            let turn = try store.commit(completions, claims: claims.map(\.request), owner: owner, now: now)
            storeRecovered()
            for completion in completions { held.remove(completion.order.reference) }
            reporter.committed(completions, turn.results)
            if !completions.isEmpty { wakeTimes.append(mono) }  // outcomes may have made orders due
            for (claim, claimed) in zip(claims, turn.claimed) {
                dispatch(claimed, for: claim, mono: mono)
                if claim.probe && claimed.isEmpty { admission.probeAbandoned(claim.endpoint) }
                if claim.verifier == nil && !claimed.isEmpty { wakeTimes.append(mono) }  // their completions, next turn
                if claimed.count == claim.request.limit && !claim.probe { wakeTimes.append(mono) }  // more may be due at once
            }
            if let nextToken = startReady() { wakeTimes.append(nextToken) }
            changeObserver?()
        } catch {
            pendingCompletions = completions + pendingCompletions
            for claim in claims where claim.probe { admission.probeAbandoned(claim.endpoint) }
            wakeTimes.append(mono + storeFailed(error))
        }
        return wakeTimes.min().map { max($0, mono) }
    }

    /// Starts (a probe), queues (leased ahead) or finishes at once (no delivery URL) the orders
    /// one claim leased.
    func dispatch(_ claimed: [ClaimedOrder], for claim: Claim, mono: Double) {
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
    struct ReadyOrder {
        var order: ClaimedOrder
        var verifier: any OrderVerifier
        var endpoint: VerificationEndpoint
    }

    /// How many orders may wait leased for a slot.
    var readyLimit: Int { min(8, max(1, maxInFlight / 8)) }

    /// Attempts this node may have in flight: `MaxInFlight`, or its share of it when several
    /// nodes share the store.
    var maxInFlight: Int { EndpointAdmission.Limits.sharedInFlight(settings.maxInFlight, share: cluster.share) }

    /// A claim the turn will make, and for what.
    struct Claim {
        var request: ClaimRequest
        /// `nil`: deliveries without a delivery URL, finished as verified.
        var verifier: (any OrderVerifier)?
        var endpoint: VerificationEndpoint
        var probe: Bool
    }

    /// What may be claimed now: per kind, as many due orders as free slots, tokens and the
    /// endpoint's circuit allow (delivery first: those orders are paid and granted already).
    func planClaims(now: Date, mono: Double, wakeTimes: inout [Double]) throws -> [Claim] {
        var claims: [Claim] = []
        var slots = maxInFlight - inFlight + readyLimit - ready.count
        let lease = now.addingTimeInterval(settings.leaseTime?.inSeconds ?? (settings.requestTimeout.inSeconds * 2 + 60))
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
    func expireWaitingOrders(now: Date) throws -> Date? {
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
    /// meanwhile go back uncharged. Returns when the next token comes for an order left waiting
    /// for one (the loop must wake then: nothing else may be due).
    @discardableResult
    func startReady() -> Double? {
        let mono = clock.uptime()
        var nextToken: Double?
        var index = 0
        // A node that has not heard from the store for a while starts nothing: its leases may
        // be rescued by now.
        guard clusterAllowsStarts(mono: mono) else { return nil }
        while index < ready.count && inFlight < maxInFlight {
            let next = ready[index]
            switch admission.start(next.endpoint, now: mono) {
            case .go:
                ready.remove(at: index)
                start(next.order, with: next.verifier)
            case .waitForToken(let until):
                nextToken = min(nextToken ?? until, until)
                index += 1
            case .giveBack:
                // The endpoint failed since the lease was taken: not sent, not charged.
                ready.remove(at: index)
                giveBack(next, reason: "circuit_open")
            }
        }
        return nextToken
    }

    /// Hands a leased, unsent order back to the next turn: due again at its circuit's probe
    /// time, the attempt not charged.
    func giveBack(_ leased: ReadyOrder, reason: String) {
        let completion = settings.resolver.resolve(
            VerifierOutcome(records: [], verdict: .notSent(Reason(reason))), for: leased.order, now: storeNow(),
            circuitClosed: false, retryAt: retryTime(leased.endpoint), random: &random)
        pendingCompletions.append(completion)
        wake.signal()
    }

    /// When an order of `endpoint` may next be tried: its circuit's probe time, or a cool-down.
    func retryTime(_ endpoint: VerificationEndpoint) -> Date {
        let mono = clock.uptime()
        return storeNow().addingTimeInterval(admission.retryTime(endpoint, now: mono) - mono)
    }

    func start(_ order: ClaimedOrder, with verifier: any OrderVerifier) {
        inFlight += 1
        held.insert(order.reference)
        reporter.attemptStarted()
        // Off the scheduler's queue: building bodies and parsing answers run in parallel.
        Task.detached { [self] in
            let outcome = await verifier.verify(order, gate: self)
            await self.finished(order, outcome, endpoint: verifier.firstEndpoint)
        }
    }

    func finished(_ order: ClaimedOrder, _ outcome: VerifierOutcome, endpoint: VerificationEndpoint) {
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
            outcome, for: order, now: storeNow(), circuitClosed: admission.isClosed(endpoint), retryAt: retryTime(endpoint),
            random: &random)
        // Committed by the next turn, with whatever else finished meanwhile and the next claims:
        // one transaction, one fsync.
        pendingCompletions.append(completion)
        if !stopping { startReady() }
        wake.signal()
    }

    /// Commits every pending completion (at stop, after the loop has ended).
    func flush() {
        guard !pendingCompletions.isEmpty else { return }
        let batch = pendingCompletions
        pendingCompletions.removeAll()
        do {
            reporter.committed(batch, try store.complete(batch, owner: owner, now: storeNow()))
        } catch {
            logger.error(
                "cannot commit \(Plural.count(batch.count, "attempt outcome")) at stop: \(error); the orders are retried at the next start",
                id: .storeUnavailable, [.reason: StoreFailure.of(error).rawValue])
        }
    }

    // MARK: - Limits

    /// The admission limits of a configuration.
    static func limits(_ settings: Settings, share: Double = 1) -> EndpointAdmission.Limits {
        var rates: [VerificationEndpoint: Double] = [:]
        for endpoint in VerificationEndpoint.allCases { rates[endpoint] = settings.rate(for: endpoint) }
        return EndpointAdmission.Limits(
            circuitThreshold: settings.circuitThreshold, circuitCooldown: settings.circuitCooldown.inSeconds,
            circuitMaxCooldown: settings.circuitMaxCooldown.inSeconds, burst: settings.burst, rates: rates
        ).shared(share)
    }

    /// The endpoints a configuration talks to.
    static func endpoints(of settings: Settings) -> [VerificationEndpoint] {
        var used = [settings.verifier.firstEndpoint]
        if settings.verifier.firstEndpoint == .production { used.append(.sandbox) }
        if let delivery = settings.delivery { used.append(delivery.firstEndpoint) }
        return used
    }
}
