import Foundation
import ReconcileCore
import ReconcileCrypto
import ReconcileFoundation
import ReconcileSystem
import Synchronization

/// The heart of `reconciled` (DESIGN §4–6): picks due orders by index, leases them, sends each
/// attempt within the in-flight, rate and circuit limits, applies the outcomes in batches, and
/// sleeps until the next due order or event. No polling: it wakes for a due time, a circuit's
/// probe time, a token, a completion, new orders, an operator, a reload or a clock step.
///
/// An actor on the store's writer thread (``SerializedStore/executor``): its turns are mostly
/// the store's transactions, which it calls synchronously there, in turn with the store's other
/// writes, and never on the cooperative pool.
public actor Scheduler {
    public nonisolated var unownedExecutor: UnownedSerialExecutor { store.executor }

    let store: any OrderStore
    let logger: Logger
    /// Wall and monotonic time, and the timers the loop sleeps on (a manual clock in tests).
    let clock: any DaemonClock
    /// This daemon's lease owner: host, pid and a random part, unique per start.
    public nonisolated let owner: String
    var settings: Settings
    /// The verifiers, delivery client and outbox senders the settings go with.
    var senders: Senders
    let wake: WakeSignal
    /// Wall-clock time minus monotonic time (seconds since the scheduler was made), to see the
    /// wall clock step.
    var wallOffset: Double
    /// The monotonic instant the wall-clock offset counts from.
    let madeAt: ContinuousClock.Instant
    var random = SystemRandomSource()

    var admission: EndpointAdmission
    /// The endpoints a healthy answer need not be carried to the scheduler for.
    nonisolated let quietEndpoints = QuietEndpoints()
    var reporter: CompletionReporter
    var bundleMismatches = BundleMismatchStreak()
    /// Attempts in flight per pool (each section's `MaxInFlight=` bounds its own).
    var inFlightByPool: [Pool: Int] = [:]
    /// Attempts in flight, every pool.
    var inFlight: Int { inFlightByPool.values.reduce(0, +) }
    /// Work leased ahead of a free slot (a few per pool), so that a finished attempt's slot is
    /// refilled at once instead of after the next commit. Their tokens and circuit permission
    /// are taken when they start; if they cannot start, they go back uncharged.
    var ready: [ReadyItem] = []
    var pendingCompletions: [AttemptCompletion] = []
    /// Outbox attempts that ended, committed by the next turn.
    var pendingActionCompletions: [OutboxCompletion] = []
    var stopping = false
    var stopped = false
    /// Set once the attempts still running after the drain were cancelled: what they report
    /// then says nothing of their endpoints.
    var attemptsCancelled = false
    /// The attempts in flight, as tasks ``run()`` cancels and awaits when its loop ends.
    let attempts = AttemptTasks()
    var stopWaiters: [CheckedContinuation<Void, Never>] = []
    var drainDeadline: ContinuousClock.Instant?
    var heartbeat: (@Sendable () -> Void)?
    var heartbeatInterval: Duration?
    var changeObserver: (@Sendable () -> Void)?
    /// How long the requests to each endpoint took, since start (for metrics).
    var requestDurations: [VerificationEndpoint: LatencyHistogram] = [:]
    /// This node's part in a cluster of daemons sharing the store (heartbeats, shares,
    /// renewals, rescues), or a daemon alone.
    var coordinator: any ClusterCoordinator
    /// When the loop began (reported with each heartbeat).
    var startedAt: Date
    /// Orders this scheduler holds leases on, by reference: started, or finished and not yet
    /// committed (renewed while the store is shared).
    var held: Set<Int64> = []
    /// Orders whose attempt in flight failed for their own reasons (``FailureAttribution``): the
    /// failure is charged to them, a configuration answer included.
    var blamed: Set<Int64> = []
    /// While the store fails: since when, why, and how long the next retry waits.
    var storeTrouble: StoreTrouble?
    /// When the soonest end of a discovered purchase's grace is read again.
    var discoveryCheck = DiscoveryCheck.nextTurn
    /// Set by ``nudge()``: a commit may have kept a purchase; the soonest grace end is read
    /// again at the next turn.
    nonisolated let discoveryNudged = Atomic<Bool>(true)

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
        /// Outbox attempts by the state they left their action in (`done`, `skipped`,
        /// `pending` for a retry, `escalated`).
        public var actions: [String: Int] = [:]
        /// Outbox actions that still failed past their deadline (warned once each).
        public var actionsOverdue = 0

        public init() {}
    }

    /// Counters since start, for status and metrics.
    public var counters: Counters { reporter.counters }

    public init(
        store: any OrderStore, settings: Settings, senders: Senders, logger: Logger, escalations: EscalationRunner? = nil,
        clock: any DaemonClock, coordinator: (any ClusterCoordinator)? = nil
    ) {
        self.store = store
        self.settings = settings
        self.senders = senders
        self.logger = logger
        self.clock = clock
        self.wake = WakeSignal(clock: clock)
        self.reporter = CompletionReporter(logger: logger, escalations: escalations)
        let host = ProcessInfo.processInfo.hostName
        let coordinator = coordinator ?? Self.defaultCoordinator(for: store, logger: logger, clock: clock)
        self.coordinator = coordinator
        self.owner = coordinator.leaseOwner ?? "\(host):\(getpid()):\(String(UInt32.random(in: 0...UInt32.max), radix: 36))"
        self.madeAt = clock.instant()
        self.wallOffset = clock.now().timeIntervalSince1970
        self.startedAt = clock.now()
        self.admission = EndpointAdmission(limits: Self.limits(settings), endpoints: senders.endpoints, now: madeAt)
    }

    // MARK: - The loop

    /// Runs until ``stop(drainTimeout:)``. Releases the leases a crash left first.
    ///
    /// The attempts are this call's (``AttemptTasks``): when the loop has ended (after the
    /// drain), those still running are cancelled and awaited before it returns (their outcomes
    /// are not committed; their orders keep their leases until the next start releases them).
    /// Cancelling the task running this call is a stop without a drain.
    public func run() async {
        await loop()
        attemptsCancelled = true
        await attempts.closeAndCancel()
        stopped = true
        for waiter in stopWaiters { waiter.resume() }
        stopWaiters.removeAll()
    }

    /// The turns, from start to the end of the drain; then no more attempts start.
    func loop() async {
        do {
            let released = try store.releaseLeases(now: storeNow())
            if !released.isEmpty {
                logger.notice("released the leases of \(Plural.count(released.count, "order")) left by an earlier stop; they are due again")
            }
        } catch {
            logger.error("cannot release leases: \(error)", [.reason: ReasonCode.storeFailure(StoreFailure.of(error)).rawValue])
        }
        finishUndeliverable()
        applyWaitingNotifications(now: storeNow())
        startedAt = clock.now()
        // After a stop, the loop goes on committing outcomes (without claiming) until nothing is
        // in flight or the drain time is up.
        while !stopping || (inFlight > 0 && drainDeadline.map { clock.instant() < $0 } ?? false) {
            if Task.isCancelled && drainDeadline == nil {
                // run()'s task was cancelled: a stop without a drain.
                stopping = true
                drainDeadline = clock.instant()
                continue
            }
            let began = clock.instant()
            var deadline = turn()
            if stopping, let drainDeadline { deadline = min(deadline ?? drainDeadline, drainDeadline) }
            if let heartbeat, let interval = heartbeatInterval {
                heartbeat()
                let beat = clock.instant() + interval
                deadline = min(deadline ?? beat, beat)
            }
            await withTaskCancellationHandler {
                await wake.wait(until: deadline)
            } onCancel: { [wake] in
                wake.signal()
            }
            // Turns no closer together than `turnSpacing` while work flows: the actor is free
            // meanwhile for attempts to report and finish (each refills its slot from the work
            // leased ahead), and the next turn commits their outcomes in one transaction.
            if !stopping, let spacing = settings.turnSpacing, clock.instant() < began + spacing {
                try? await clock.sleep(until: began + spacing)
            }
        }
        drain()
        coordinator.leave()
    }

    /// After the loop: says what is left in flight, hands back what was leased ahead, commits
    /// every outcome that came in.
    func drain() {
        if inFlight > 0 {
            logger.warning("\(Plural.count(inFlight, "attempt")) still in flight after DrainTimeout; they are retried at the next start")
        }
        for leased in ready { giveBack(leased, reason: .stopping) }
        ready.removeAll()
        flush()
        flushActions()
    }

    /// One turn: expire, then in one transaction commit the outcomes of finished attempts and
    /// lease what is due and allowed; start those attempts. Returns when to look again (`nil`:
    /// only an event can bring work).
    func turn() -> ContinuousClock.Instant? {
        // A step the kernel did not announce (no timerfd clock-set notice here, or a clock
        // faked for a process) is seen at the next turn.
        if abs(wallClockOffset() - wallOffset) > Self.clockStep { clockChanged() }
        let now = storeNow()
        let mono = clock.instant()
        var wakeTimes: [ContinuousClock.Instant] = []
        var claims: [Claim] = []
        var actionClaims: [ActionClaim] = []
        commitActions(wakeTimes: &wakeTimes)
        let completions = pendingCompletions
        pendingCompletions.removeAll()
        do {
            if let next = try coordinate(mono: mono) { wakeTimes.append(next) }
            if let time = try expireWaitingOrders(now: now) { wakeTimes.append(mono + .seconds(time.timeIntervalSince(now))) }
            if let time = try settleDiscoveredPurchases(now: now, mono: mono) { wakeTimes.append(time) }
            if !stopping && coordinator.allowsClaims(mono: mono, timing: timing, wakeTimes: &wakeTimes) {
                (claims, actionClaims) = try planClaims(now: now, mono: mono, wakeTimes: &wakeTimes)
            }
            while let claim = actionClaims.first {
                try claimActions(claim, now: now, mono: mono, wakeTimes: &wakeTimes)
                actionClaims.removeFirst()  // leased and dispatched: a later failure must not abandon its probe
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
            reportNotifications(turn.notifications)
            // Those that waited for an attempt another node ended (this node's were applied in
            // the commit; alone on its store, the pass at start is enough).
            if coordinator.othersEndAttempts && !completions.isEmpty { applyWaitingNotifications(now: now) }
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
            for claim in actionClaims where claim.probe { admission.probeAbandoned(claim.endpoint) }
            wakeTimes.append(mono + storeFailed(error))
        }
        return wakeTimes.min().map { max($0, mono) }
    }

    /// Applies the store notifications that waited for an attempt in flight (DESIGN §5a); a
    /// failure is logged, and they are tried again after the next attempt ends.
    func applyWaitingNotifications(now: Date) {
        do {
            reportNotifications(try store.applyWaitingNotifications(now: now))
        } catch {
            logger.error("cannot apply the store notifications that waited for an attempt: \(error)", [.reason: ReasonCode.storeFailure(StoreFailure.of(error)).rawValue])
        }
    }

    /// Logs the notifications applied once an attempt had ended.
    func reportNotifications(_ outcomes: [NotificationRules.Outcome]) {
        for outcome in outcomes {
            guard case .applied(let orderID, let from, let to) = outcome else { continue }
            let message = "a store notification that waited for the attempt in flight: order \(orderID) \(from) → \(to)"
            switch (from, to) {
            case (_, .revoked): logger.notice(message, id: .orderRevoked, [.orderID: orderID, .orderState: to.rawValue])
            case (.revoked, _): logger.notice(message, id: .orderReinstated, [.orderID: orderID, .orderState: to.rawValue])
            default: logger.notice(message, [.orderID: orderID, .orderState: to.rawValue, .reason: ReasonCode.refunded.rawValue])
            }
            changeObserver?()
        }
    }

    /// Starts (a probe), queues (leased ahead) or finishes at once (no delivery URL) the orders
    /// one claim leased.
    func dispatch(_ claimed: [ClaimedOrder], for claim: Claim, mono: ContinuousClock.Instant) {
        var claimed = claimed
        if claim.probe && claimed.count > 1, claim.verifier != nil {
            // The probe is the first candidate that has not failed at the endpoint, else the one
            // that failed least recently; the others go back unsent and uncharged, due at once.
            let chosen = admission.probeChoice(claim.endpoint, among: claimed.map(\.reference)) ?? 0
            for (index, order) in claimed.enumerated() where index != chosen {
                giveBack(ReadyItem(work: .order(order, claim.verifier!), endpoint: claim.endpoint, pool: claim.pool), reason: .probeCandidate, dueNow: true)
            }
            claimed = [claimed[chosen]]
        }
        for order in claimed {
            guard let verifier = claim.verifier else {
                // No delivery URL: finished as verified, nothing sent, no attempt charged.
                pendingCompletions.append(AttemptCompletion(
                    order: order, records: [], resolution: .finishedWithoutDelivery, charged: false,
                    playFollowUp: settings.resolver.playFollowUp))
                continue
            }
            dispatch(ReadyItem(work: .order(order, verifier), endpoint: claim.endpoint, pool: claim.pool), probe: claim.probe, mono: mono)
        }
    }

    /// Queues leased work for a slot, or sends a circuit's probe at once (with a token, or not
    /// at all).
    func dispatch(_ item: ReadyItem, probe: Bool, mono: ContinuousClock.Instant) {
        guard probe else {
            ready.append(item)
            return
        }
        guard admission.sendProbe(item.endpoint, now: mono) else {
            giveBack(item, reason: .rateLimited)
            return
        }
        logger.info(
            "probing \(item.endpoint.rawValue) with \(item.what) (not charged)", [.orderID: item.orderID, .endpoint: item.endpoint.rawValue])
        start(item)
    }

    /// A claim the turn will make, and for what.
    struct Claim {
        var request: ClaimRequest
        /// `nil`: deliveries without a delivery URL, finished as verified.
        var verifier: (any OrderVerifier)?
        var endpoint: VerificationEndpoint
        var probe: Bool
        var pool: Pool = .main
    }

    /// What may be claimed now: per kind, as many due orders as free slots, tokens and the
    /// endpoint's circuit allow (delivery first: those orders are paid and granted already), and
    /// how many due outbox actions of each endpoint (before Google Play verifications: an
    /// acknowledgement owed has a deadline; before the orders of `[Verifier]`'s pool: a
    /// revocation notice tells of money already returned).
    func planClaims(now: Date, mono: ContinuousClock.Instant, wakeTimes: inout [ContinuousClock.Instant]) throws -> (orders: [Claim], actions: [ActionClaim]) {
        var claims: [Claim] = []
        var slots: [Pool: Int] = [.main: freeSlots(.main), .googlePlay: freeSlots(.googlePlay)]
        let lease = now.addingTimeInterval(settings.leaseTime?.inSeconds ?? (settings.requestTimeout.inSeconds * 2 + 60))
        let actions = try planActionClaims(slots: &slots, now: now, mono: mono, wakeTimes: &wakeTimes)
        for kind in [WorkKind.deliver, .verify, .verifyPlay] {
            // `nil` for deliveries without a delivery URL (they need no slot), and for orders no
            // configured section can verify (they wait for one: `reconcilectl status` tells).
            let candidate = senders.verifier(for: kind)
            if candidate == nil && kind != .deliver { continue }
            // On a shared store a node without a delivery URL leaves deliveries to the nodes
            // that have one, instead of finishing them undelivered (DESIGN §7).
            if candidate == nil && coordinator.leavesUnconfiguredWorkToOthers { continue }
            let pool = pool(for: kind)
            if candidate != nil && slots[pool, default: 0] <= 0 { continue }  // a completion wakes the loop
            guard let due = try store.nextDueTime(kind) else { continue }
            if due > now {
                wakeTimes.append(mono + .seconds(due.timeIntervalSince(now)))
                continue
            }
            guard let verifier = candidate else {
                // No delivery URL: verified orders finish at once, without a slot or a token.
                claims.append(Claim(
                    request: ClaimRequest(kind: .deliver, limit: EndpointAdmission.maximumClaim, charge: false, leaseUntil: lease),
                    verifier: nil, endpoint: .delivery, probe: false))
                continue
            }
            guard let cap = dependencyCap(verifier.gatingEndpoints, mono: mono, wakeTimes: &wakeTimes) else { continue }
            let endpoint = verifier.firstEndpoint
            if actions.contains(where: { $0.probe && $0.endpoint == endpoint }) { continue }  // one probe at a time
            switch admission.admit(endpoint, slots: min(slots[pool, default: 0], cap), now: mono) {
            case .wait(let until):
                if let until { wakeTimes.append(until) }
            case .claim(let limit, let probe):
                slots[pool, default: 0] -= limit
                // A probe is chosen among several due orders: not one that has just failed.
                claims.append(Claim(
                    request: ClaimRequest(kind: kind, limit: probe ? EndpointAdmission.probeCandidates : limit, charge: !probe, leaseUntil: lease),
                    verifier: verifier,
                    endpoint: endpoint, probe: probe, pool: pool))
            }
        }
        return (claims, actions)
    }

    /// How many orders a verifier whose requests need `endpoints` first (Google's token
    /// endpoint) may be given now: unlimited, one (that endpoint's probe), or none (`nil`; its
    /// probe time is a wake time).
    func dependencyCap(_ endpoints: [VerificationEndpoint], mono: ContinuousClock.Instant, wakeTimes: inout [ContinuousClock.Instant]) -> Int? {
        var cap = Int.max
        for endpoint in endpoints {
            switch admission.dependency(endpoint, now: mono) {
            case .allowed: continue
            case .probeOnly: cap = 1
            case .blocked(let until):
                if let until { wakeTimes.append(until) }
                return nil
            }
        }
        return cap
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

    /// Settles the purchases the stores reported whose grace has ended (DESIGN §5b): joined to
    /// the phone's order that came meanwhile, recorded, escalated, or made orders that are due
    /// at once. The soonest grace end is read again when it has passed, after ``nudge()`` (the
    /// ingest and the pollers nudge after every commit, which may have kept a purchase), and —
    /// on a shared store, where other nodes keep purchases too — at least every
    /// ``discoveryRecheck``. Alone on its store with nothing waiting, it needs no wake at all.
    /// Returns when to look again.
    func settleDiscoveredPurchases(now: Date, mono: ContinuousClock.Instant) throws -> ContinuousClock.Instant? {
        let nudged = discoveryNudged.exchange(false, ordering: .acquiringAndReleasing)
        if !nudged {
            switch discoveryCheck {
            case .onNudge: return nil
            case .at(let time) where mono < time: return time
            default: break
            }
        }
        let recheck = coordinator.othersEndAttempts ? mono + min(Self.discoveryRecheck, max(.seconds(1), settings.discovery.grace)) : nil
        guard let next = try store.nextGraceEnd() else {
            discoveryCheck = recheck.map(DiscoveryCheck.at) ?? .onNudge
            return recheck
        }
        guard next <= now else {
            let end = mono + .seconds(next.timeIntervalSince(now))
            let time = recheck.map { min($0, end) } ?? end
            discoveryCheck = .at(time)
            return time
        }
        let settled = try store.settleDiscovered(
            settings: settings.discovery, verifiers: settings.verifiers, now: now, limit: 100, digest: { SHA256.hexDigest($0) })
        for settlement in settled { DiscoveryJournal.report(settlement, logger: logger) }
        if !settled.isEmpty { changeObserver?() }
        // More may be due, and orders made are due now: the next turn looks again at once. None
        // settled while some are due: another node holds them; look again shortly.
        guard settled.isEmpty else {
            discoveryCheck = .nextTurn
            return mono
        }
        discoveryCheck = .at(mono + .seconds(1))
        return mono + .seconds(1)
    }

    /// When the soonest grace end is read again.
    enum DiscoveryCheck {
        /// At the next turn.
        case nextTurn
        /// Only after a ``Scheduler/nudge()``: nothing waits, and no other node keeps purchases.
        case onNudge
        /// At this time (or after a nudge, if sooner).
        case at(ContinuousClock.Instant)
    }

    /// How often a node on a shared store reads the soonest grace end while none is known to be
    /// due (other nodes keep purchases it is not nudged for).
    static let discoveryRecheck: Duration = .seconds(30)

    /// Starts leased work while slots, tokens and circuits allow; work whose endpoint closed
    /// meanwhile goes back uncharged. Returns when the next token comes for work left waiting for
    /// one (the loop must wake then: nothing else may be due).
    @discardableResult
    func startReady() -> ContinuousClock.Instant? {
        // A stopping loop only waits for what is in flight; what was leased ahead goes back.
        guard !stopping else { return nil }
        let mono = clock.instant()
        var nextToken: ContinuousClock.Instant?
        var index = 0
        // A node that has not heard from the store for a while starts nothing: its leases may
        // be rescued by now.
        guard coordinator.allowsStarts(mono: mono, timing: timing) else { return nil }
        while index < ready.count {
            let next = ready[index]
            guard inFlightByPool[next.pool, default: 0] < maxInFlight(next.pool) else {
                index += 1
                continue
            }
            switch admission.start(next.endpoint, now: mono) {
            case .go:
                ready.remove(at: index)
                start(next)
            case .waitForToken(let until):
                nextToken = min(nextToken ?? until, until)
                index += 1
            case .giveBack:
                // The endpoint failed since the lease was taken: not sent, not charged.
                ready.remove(at: index)
                giveBack(next, reason: .circuitOpen)
            }
        }
        return nextToken
    }

    /// Hands leased, unsent work back to the next turn: due again at its circuit's probe time,
    /// the attempt not charged.
    func giveBack(_ leased: ReadyItem, reason: ReasonCode, dueNow: Bool = false) {
        switch leased.work {
        case .order(let order, _):
            let completion = settings.resolver.resolve(
                VerifierOutcome(records: [], verdict: .notSent(Reason(reason))), for: order, now: storeNow(),
                circuitClosed: false, retryAt: dueNow ? storeNow() : retryTime(leased.endpoint), random: &random)
            pendingCompletions.append(completion)
        case .action(let action, _):
            pendingActionCompletions.append(outboxResolver.resolve(
                OutboxOutcome(records: [], verdict: .notSent(Reason(reason))), for: action, now: storeNow(),
                retryAt: retryTime(leased.endpoint), random: &random))
        }
        wake.signal()
    }

    /// When an order of `endpoint` may next be tried: its circuit's probe time, or a cool-down.
    func retryTime(_ endpoint: VerificationEndpoint) -> Date {
        let mono = clock.instant()
        return storeNow().addingTimeInterval((admission.retryTime(endpoint, now: mono) - mono).inSeconds)
    }

    func start(_ item: ReadyItem) {
        inFlightByPool[item.pool, default: 0] += 1
        if case .order(let order, _) = item.work { held.insert(order.reference) }
        reporter.attemptStarted()
        let pool = item.pool
        // Tasks run() owns, off the scheduler's executor: building bodies and parsing answers
        // run in parallel.
        switch item.work {
        case .order(let order, let verifier):
            attempts.start { [self] in
                let outcome = await verifier.verify(order, gate: OrderGate(scheduler: self, order: order.reference))
                await self.finished(order, outcome, endpoint: verifier.firstEndpoint, pool: pool)
            }
        case .action(let action, let sender):
            attempts.start { [self] in
                let outcome = await sender.send(action, gate: self)
                await self.finished(action, outcome, endpoint: sender.endpoint, pool: pool)
            }
        }
    }

    func finished(_ order: ClaimedOrder, _ outcome: VerifierOutcome, endpoint: VerificationEndpoint, pool: Pool) {
        inFlightByPool[pool, default: 0] -= 1
        // Cancelled after the drain: not committed; the order keeps its lease until the next
        // start, which releases it (the request may have gone out).
        guard !attemptsCancelled else { return }
        reporter.requestsSent(outcome.records.count)
        for record in outcome.records {
            requestDurations[record.endpoint, default: LatencyHistogram()].record(record.latency)
        }
        var outcome = outcome
        if blamed.remove(order.reference) != nil {
            // The endpoint answers other orders: the failure follows this one. Charged to it (a
            // configuration answer too), so it escalates at MaxAttempts instead of holding the
            // endpoint's circuit.
            let fields: KeyValuePairs<LogField, String?> = [.orderID: order.orderID, .endpoint: endpoint.rawValue, .reason: ReasonCode.orderFailure.rawValue]
            if case .configuration(let reason) = outcome.verdict {
                outcome.verdict = .transient(reason)
                logger.info(
                    "order \(order.orderID): \(endpoint.rawValue) answered it \(reason.code) while it answered other orders; charged to the order, not taken for a configuration error",
                    fields)
            } else {
                logger.debug("order \(order.orderID) failed at \(endpoint.rawValue) while it answered other orders: charged to the order, not counted against the endpoint", fields)
            }
        }
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
                id: .storeUnavailable, [.reason: ReasonCode.storeFailure(StoreFailure.of(error)).rawValue])
        }
    }
}

