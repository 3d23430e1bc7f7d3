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
    /// This daemon's lease owner: host, pid and a random part, unique per start.
    public nonisolated let owner: String
    private var settings: Settings
    private let escalations: EscalationRunner?
    private let wake = WakeSignal()
    private let origin = ContinuousClock.now
    private var wallOffset: Double
    private var random = SystemRandomSource()

    private var circuits: [VerificationEndpoint: CircuitBreaker] = [:]
    private var buckets: [VerificationEndpoint: TokenBucket] = [:]
    private var inFlight = 0
    /// Orders leased ahead of a free slot (a few), so that a finished attempt's slot is refilled
    /// at once instead of after the next commit. Their tokens and circuit permission are taken
    /// when they start; if they cannot start, they go back uncharged.
    private var ready: [ReadyOrder] = []
    private var pendingCompletions: [AttemptCompletion] = []
    private var stopping = false
    private var stopped = false
    private var drainDeadline: ContinuousClock.Instant?
    private var bundleMismatchStreak = 0
    private var heartbeat: (@Sendable () -> Void)?
    private var heartbeatInterval: Duration?
    private var changeObserver: (@Sendable () -> Void)?
    /// Counters since start, for status and metrics.
    public private(set) var counters = Counters()
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

    public init(store: any OrderStore, settings: Settings, logger: Logger, escalations: EscalationRunner? = nil) {
        self.store = store
        self.settings = settings
        self.logger = logger
        self.escalations = escalations
        let host = ProcessInfo.processInfo.hostName
        self.owner = "\(host):\(getpid()):\(String(UInt32.random(in: 0...UInt32.max), radix: 36))"
        self.wallOffset = Date().timeIntervalSince1970
        for endpoint in Self.endpoints(of: settings) {
            circuits[endpoint] = Self.circuit(settings)
            buckets[endpoint] = TokenBucket(rate: settings.rate(for: endpoint), burst: settings.burst, now: 0)
        }
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
        configureLimits(settings)
        let mono = monotonic()
        for endpoint in circuits.keys { circuits[endpoint]?.reset() }
        for endpoint in buckets.keys { buckets[endpoint]?.endPause(now: mono) }
        finishUndeliverable()
        wake.signal()
    }

    /// Without a delivery URL (removed by a reload, or none at start after orders were verified
    /// under one), verified orders finish at once (DESIGN §5): those waiting out a delivery
    /// backoff are made due now, and the next turns finish them without sending anything.
    private func finishUndeliverable() {
        guard settings.delivery == nil else { return }
        do {
            let moved = try store.clampNextAttempts(of: [.deliver], notAfter: Date())
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
        let offset = Date().timeIntervalSince1970 - monotonic()
        let step = offset - wallOffset
        wallOffset = offset
        if step < -Self.clockStep {
            let limit = Date().addingTimeInterval(settings.resolver.policy.backoff.maxDelay.inSeconds)
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
    /// outcomes. Attempts still running after that keep their leases until the next start.
    public func stop(drainTimeout: Duration) async {
        drainDeadline = ContinuousClock.now + drainTimeout
        stopping = true
        wake.signal()
        while !stopped { try? await Task.sleep(for: .milliseconds(5)) }
    }

    /// A snapshot for `reconcilectl status` and the metrics file.
    public func status() -> SchedulerStatus {
        let now = monotonic()
        var endpoints: [SchedulerStatus.Endpoint] = []
        for endpoint in VerificationEndpoint.allCases {
            guard let circuit = circuits[endpoint] else { continue }
            var until: Date?
            if case .open(let time) = circuit.state { until = Date().addingTimeInterval(time - now) }
            let paused = buckets[endpoint]?.pause(at: now).map { Date().addingTimeInterval($0 - now) }
            endpoints.append(SchedulerStatus.Endpoint(
                endpoint: endpoint, circuit: circuit.state.description, openUntil: until, lastReason: circuit.lastReason,
                openings: circuit.openings, pausedUntil: paused))
        }
        var durations = requestDurations
        for endpoint in circuits.keys where durations[endpoint] == nil { durations[endpoint] = LatencyHistogram() }
        return SchedulerStatus(inFlight: inFlight, endpoints: endpoints, counters: counters, requestDurations: durations)
    }

    // MARK: - The loop

    /// Runs until ``stop(drainTimeout:)``. Releases the leases a crash left first.
    public func run() async {
        do {
            let released = try store.releaseLeases(now: Date())
            if !released.isEmpty {
                logger.notice("released the leases of \(Plural.count(released.count, "order")) left by an earlier stop; they are due again")
            }
        } catch {
            logger.error("cannot release leases: \(error)", [.reason: StoreFailure.of(error).rawValue])
        }
        finishUndeliverable()
        // After a stop, the loop goes on committing outcomes (without claiming) until nothing is
        // in flight or the drain time is up.
        while !stopping || (inFlight > 0 && ContinuousClock.now < drainDeadline ?? .now) {
            var deadline = dispatch()
            if stopping, let drainDeadline { deadline = deadline.map { min($0, drainDeadline) } ?? drainDeadline }
            if let heartbeat, let interval = heartbeatInterval {
                heartbeat()
                let beatDeadline = ContinuousClock.now + interval
                await wake.wait(until: deadline.map { min($0, beatDeadline) } ?? beatDeadline)
            } else {
                await wake.wait(until: deadline)
            }
        }
        if inFlight > 0 {
            logger.warning("\(Plural.count(inFlight, "attempt")) still in flight after DrainTimeout; they are retried at the next start")
        }
        for leased in ready { giveBack(leased, reason: "stopping") }
        ready.removeAll()
        flush()
        stopped = true
    }

    /// One turn: expire, then in one transaction commit the outcomes of finished attempts and
    /// lease what is due and allowed; start those attempts. Returns when to look again (`nil`:
    /// only an event can bring work).
    private func dispatch() -> ContinuousClock.Instant? {
        // A step the kernel did not announce (no timerfd clock-set notice here, or a clock
        // faked for a process) is seen at the next turn.
        if abs(Date().timeIntervalSince1970 - monotonic() - wallOffset) > Self.clockStep { clockChanged() }
        let now = Date()
        let mono = monotonic()
        var wakeTimes: [Double] = []
        var plans: [Plan] = []
        let completions = pendingCompletions
        pendingCompletions.removeAll()
        do {
            if let time = try expireWaitingOrders(now: now) { wakeTimes.append(mono + time.timeIntervalSince(now)) }
            if !stopping {
                plans = try plan(now: now, mono: mono, wakeTimes: &wakeTimes)
            }
            guard !completions.isEmpty || !plans.isEmpty else { return wakeTime(wakeTimes, mono: mono) }
            let turn = try store.commit(completions, claims: plans.map(\.request), owner: owner, now: now)
            for (completion, result) in zip(completions, turn.results) {
                counters.outcomes[Self.outcomeClass(completion), default: 0] += 1
                report(result, lastRequest: completion.records.last)
            }
            if !completions.isEmpty { wakeTimes.append(mono) }  // outcomes may have made orders due
            for (plan, claimed) in zip(plans, turn.claimed) {
                if plan.probe && claimed.isEmpty { circuits[plan.endpoint]?.probeAbandoned() }
                for order in claimed {
                    guard let verifier = plan.verifier else {
                        // No delivery URL: finished as verified, nothing sent, no attempt charged.
                        pendingCompletions.append(AttemptCompletion(order: order, records: [], resolution: .finishedWithoutDelivery, charged: false))
                        continue
                    }
                    if plan.probe {
                        // A probe is a request like any other: it goes with a token or not at all.
                        guard buckets[plan.endpoint, default: newBucket(plan.endpoint, mono)].take(now: mono) else {
                            circuits[plan.endpoint]?.probeAbandoned()
                            giveBack(ReadyOrder(order: order, verifier: verifier, endpoint: plan.endpoint), reason: "rate_limited")
                            continue
                        }
                        circuits[plan.endpoint]?.probeSent()
                        logger.info("probing \(plan.endpoint.rawValue) with order \(order.orderID) (not charged)", [.orderID: order.orderID, .endpoint: plan.endpoint.rawValue])
                        start(order, with: verifier)
                    } else {
                        ready.append(ReadyOrder(order: order, verifier: verifier, endpoint: plan.endpoint))
                    }
                }
                if plan.verifier == nil && !claimed.isEmpty { wakeTimes.append(mono) }  // their completions, next turn
                if claimed.count == plan.request.limit && !plan.probe { wakeTimes.append(mono) }  // more may be due at once
            }
            startReady()
            changeObserver?()
        } catch {
            pendingCompletions = completions + pendingCompletions
            for plan in plans where plan.probe { circuits[plan.endpoint]?.probeAbandoned() }
            logger.error(
                "the store failed while scheduling: \(error); retrying in 1s", id: .storeUnavailable,
                [.reason: StoreFailure.of(error).rawValue])
            wakeTimes.append(mono + 1)
        }
        return wakeTime(wakeTimes, mono: mono)
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
    private struct Plan {
        var request: ClaimRequest
        /// `nil`: deliveries without a delivery URL, finished as verified.
        var verifier: (any OrderVerifier)?
        var endpoint: VerificationEndpoint
        var probe: Bool
    }

    /// What may be claimed now: per kind, as many due orders as free slots, tokens and the
    /// endpoint's circuit allow (delivery first: those orders are paid and granted already).
    private func plan(now: Date, mono: Double, wakeTimes: inout [Double]) throws -> [Plan] {
        var plans: [Plan] = []
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
                plans.append(Plan(
                    request: ClaimRequest(kind: .deliver, limit: 256, charge: false, leaseUntil: lease), verifier: nil, endpoint: .delivery,
                    probe: false))
                continue
            }
            let endpoint = verifier.firstEndpoint
            let probe: Bool
            switch circuits[endpoint, default: newCircuit()].permission(now: mono) {
            case .allowed: probe = false
            case .probe: probe = true
            case .blocked(let until):
                if let until { wakeTimes.append(until) }
                continue
            }
            let tokens = buckets[endpoint, default: newBucket(endpoint, mono)].available(now: mono)
            guard tokens > 0 else {
                if probe { circuits[endpoint]?.probeAbandoned() }
                wakeTimes.append(buckets[endpoint]!.nextTokenTime(now: mono))
                continue
            }
            let wanted = probe ? 1 : min(slots, tokens, 256)
            slots -= wanted
            plans.append(Plan(
                request: ClaimRequest(kind: kind, limit: wanted, charge: !probe, leaseUntil: lease), verifier: verifier,
                endpoint: endpoint, probe: probe))
        }
        return plans
    }

    private func wakeTime(_ times: [Double], mono: Double) -> ContinuousClock.Instant? {
        guard let earliest = times.min() else { return nil }
        return origin + .seconds(max(earliest, mono))
    }

    /// Expires waiting orders past MaxAge; returns when the next one will.
    private func expireWaitingOrders(now: Date) throws -> Date? {
        let maxAge = settings.resolver.policy.maxAge.inSeconds
        guard let oldest = try store.oldestWaitingReceivedAt() else { return nil }
        let expiry = oldest.addingTimeInterval(maxAge)
        guard expiry <= now else { return expiry }
        let expired = try store.expireWaiting(receivedBefore: now.addingTimeInterval(-maxAge), now: now, limit: 500)
        for result in expired { report(result, lastRequest: nil) }
        if !expired.isEmpty { changeObserver?() }
        return expired.count == 500 ? now : try store.oldestWaitingReceivedAt().map { $0.addingTimeInterval(maxAge) }
    }

    /// Starts leased orders while slots, tokens and circuits allow; orders whose endpoint closed
    /// meanwhile go back uncharged.
    private func startReady() {
        let mono = monotonic()
        var index = 0
        while index < ready.count && inFlight < settings.maxInFlight {
            let next = ready[index]
            switch circuits[next.endpoint, default: newCircuit()].permission(now: mono) {
            case .allowed:
                guard buckets[next.endpoint, default: newBucket(next.endpoint, mono)].take(now: mono) else {
                    index += 1
                    continue
                }
                ready.remove(at: index)
                start(next.order, with: next.verifier)
            case .probe, .blocked:
                // The endpoint failed since the lease was taken: not sent, not charged.
                circuits[next.endpoint]?.probeAbandoned()
                ready.remove(at: index)
                giveBack(next, reason: "circuit_open")
            }
        }
    }

    /// Hands a leased, unsent order back to the next turn: due again at its circuit's probe
    /// time, the attempt not charged.
    private func giveBack(_ leased: ReadyOrder, reason: String) {
        let completion = settings.resolver.resolve(
            VerifierOutcome(records: [], verdict: .notSent(reason: reason)), for: leased.order, now: Date(),
            circuitClosed: false, retryAt: retryTime(leased.endpoint), random: &random)
        pendingCompletions.append(completion)
        wake.signal()
    }

    /// When an order of `endpoint` may next be tried: its circuit's probe time, or a cool-down.
    private func retryTime(_ endpoint: VerificationEndpoint) -> Date {
        let now = Date()
        if case .open(let until) = circuits[endpoint]?.state {
            return now.addingTimeInterval(max(0, until - monotonic()))
        }
        return now.addingTimeInterval(settings.circuitCooldown.inSeconds)
    }

    private func start(_ order: ClaimedOrder, with verifier: any OrderVerifier) {
        inFlight += 1
        counters.attemptsStarted += 1
        // Off the scheduler's queue: building bodies and parsing answers run in parallel.
        Task.detached { [self] in
            let outcome = await verifier.verify(order, gate: self)
            await self.finished(order, outcome, endpoint: verifier.firstEndpoint)
        }
    }

    private func finished(_ order: ClaimedOrder, _ outcome: VerifierOutcome, endpoint: VerificationEndpoint) {
        inFlight -= 1
        counters.requestsSent += outcome.records.count
        for record in outcome.records {
            requestDurations[record.endpoint, default: LatencyHistogram()].record(record.latency)
        }
        var outcome = outcome
        if case .escalate("bundle_mismatch", _) = outcome.verdict {
            bundleMismatchStreak += 1
            if bundleMismatchStreak >= 3 {
                let reason = "bundle_mismatch: \(bundleMismatchStreak) receipts in a row are for another app; check BundleID="
                recordObservation(endpoint, .configuration(reason: reason))
                outcome.verdict = .configuration(reason: reason)
            }
        } else if case .match = outcome.verdict {
            bundleMismatchStreak = 0
        }
        let circuitClosed = circuits[endpoint, default: newCircuit()].isClosed
        let completion = settings.resolver.resolve(
            outcome, for: order, now: Date(), circuitClosed: circuitClosed, retryAt: retryTime(endpoint), random: &random)
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
            let results = try store.complete(batch, owner: owner, now: Date())
            for (completion, result) in zip(batch, results) {
                counters.outcomes[Self.outcomeClass(completion), default: 0] += 1
                report(result, lastRequest: completion.records.last)
            }
        } catch {
            logger.error(
                "cannot commit \(Plural.count(batch.count, "attempt outcome")) at stop: \(error); the orders are retried at the next start",
                id: .storeUnavailable, [.reason: StoreFailure.of(error).rawValue])
        }
    }

    /// The class an outcome is counted under (``MetricsSnapshot/outcomeClasses`` lists them all).
    static func outcomeClass(_ completion: AttemptCompletion) -> String {
        switch completion.resolution {
        case .retry: completion.charged ? "transient" : "uncharged"
        case .reject: "reject"
        case .escalate: "escalate"
        case .verified, .match, .finishedWithoutDelivery: "verified"
        case .delivered: "delivered"
        }
    }

    /// Logs what a completion did (DESIGN §8: info for the transitions that matter, warning for
    /// escalations, debug for retries) and hands escalations to the command runner.
    private func report(_ result: CompletionResult, lastRequest: AttemptRecord?) {
        guard result.applied else {
            logger.warning("the lease on order \(result.orderID) was lost; its outcome was not applied", [.orderID: result.orderID])
            return
        }
        let fields: KeyValuePairs<LogField, String?> = [
            .orderID: result.orderID, .orderState: result.to.rawValue, .productID: result.productID,
            .transactionID: result.transactionID, .attempt: String(result.attempts), .reason: result.reason,
            .nextAttempt: result.nextAttemptAt.map(RFC3339.format), .endpoint: lastRequest?.endpoint.rawValue,
            .verifierStatus: lastRequest?.verifierStatus.map(String.init), .httpStatus: lastRequest?.httpStatus.map(String.init),
        ]
        let detail = result.detail.map { ": \($0)" } ?? ""
        if let action = result.appliedAction {
            // The operator decided where the order went; the daemon only finished its attempt.
            logger.info(
                "order \(result.orderID) is \(result.to): \(result.appliedBy?.description ?? "an operator")'s \(action.rawValue), applied when its attempt ended",
                [.orderID: result.orderID, .orderState: result.to.rawValue, .productID: result.productID, .reason: action.rawValue,
                 .actor: result.appliedBy?.description])
            return
        }
        switch result.to {
        case .finished:
            counters.finished += 1
            let how = switch result.reason {
            case "granted": "granted by the merchant"
            case "delivered": "delivered"
            case "no_delivery_url": "verified; no delivery URL is configured"
            default: "verified"
            }
            let transaction = result.transactionID.map { ", transaction \($0)" } ?? ""
            logger.info("order \(result.orderID) finished (\(how)\(transaction))", id: .finished, fields)
        case .rejected:
            counters.rejected += 1
            logger.info("order \(result.orderID) rejected: \(result.reason)\(detail)", id: .rejected, fields)
        case .escalated:
            counters.escalated += 1
            logger.warning("order \(result.orderID) escalated: \(result.reason)\(detail)", id: .escalated, fields)
            Task { [escalations] in
                await escalations?.enqueue(EscalationRunner.Notice(
                    orderID: result.orderID, productID: result.productID, state: result.to, reason: result.reason,
                    attempts: result.attempts, transactionID: result.transactionID))
            }
        case .expired:
            counters.expired += 1
            logger.info("order \(result.orderID) expired: no usable proof arrived within MaxAge", id: .expired, fields)
        case .pending:
            counters.retried += 1
            logger.debug("order \(result.orderID) will be retried (\(result.reason))", fields)
        default:
            logger.debug("order \(result.orderID) is \(result.to) (\(result.reason))", fields)
        }
    }

    // MARK: - EndpointGate

    public func acquire(_ endpoint: VerificationEndpoint) async -> Bool {
        while !stopping {
            let mono = monotonic()
            let permission = circuits[endpoint, default: newCircuit()].permission(now: mono)
            if case .blocked = permission { return false }
            // The probe takes a token like any request, and the circuit counts it as sent only
            // with the token in hand: one waiting for a token leaves the circuit half-open (a
            // probe marked sent and never sent would block the endpoint for good).
            if buckets[endpoint, default: newBucket(endpoint, mono)].take(now: mono) {
                if case .probe = permission { circuits[endpoint]?.probeSent() }
                return true
            }
            let wait = max(0.001, buckets[endpoint]!.nextTokenTime(now: mono) - mono)
            try? await DeadlineTimer.shared.sleep(for: .seconds(wait))
        }
        return false
    }

    public func report(_ endpoint: VerificationEndpoint, _ observation: EndpointObservation, retryAfter: Duration?, rateLimited: Bool) {
        let mono = monotonic()
        if rateLimited {
            // However far off the server says: a Retry-After of centuries must not stall the
            // endpoint for good (DESIGN §6).
            let cap = max(1, settings.circuitMaxCooldown.inSeconds)
            let asked = retryAfter?.inSeconds ?? 1
            let pause = min(max(asked, 1), cap)
            buckets[endpoint, default: newBucket(endpoint, mono)].pause(until: mono + pause, now: mono)
            let capped = retryAfter.map { asked > cap ? " (Retry-After asked for \(TimeSpan.format($0)); capped at CircuitMaxCooldown)" : "" } ?? ""
            logger.notice(
                "\(endpoint.rawValue) answered 429; sending nothing there for \(TimeSpan.format(.seconds(pause)))\(capped)",
                [.endpoint: endpoint.rawValue, .reason: "http_429"])
            changeObserver?()
        }
        recordObservation(endpoint, observation)
    }

    private func recordObservation(_ endpoint: VerificationEndpoint, _ observation: EndpointObservation) {
        let mono = monotonic()
        var circuit = circuits[endpoint, default: newCircuit()]
        let change: CircuitBreaker.Change
        var configuration = false
        switch observation {
        case .healthy:
            change = circuit.recordSuccess()
        case .failure(let reason):
            change = circuit.recordFailure(reason: reason, now: mono)
        case .configuration(let reason):
            configuration = true
            change = circuit.recordFailure(reason: reason, configurationError: true, now: mono)
        }
        circuits[endpoint] = circuit
        switch change {
        case .none:
            return
        case .opened(let cooldown, let reason), .reopened(let cooldown, let reason):
            let fields: KeyValuePairs<LogField, String?> = [.endpoint: endpoint.rawValue, .reason: reason]
            let verb = { if case .reopened = change { "re-opened" } else { "opened" } }()
            let message = "circuit for \(endpoint.rawValue) \(verb) (\(reason)); nothing is sent there for \(TimeSpan.format(.seconds(cooldown))), then one probe"
            if configuration {
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

    private func configureLimits(_ settings: Settings) {
        let mono = monotonic()
        for endpoint in VerificationEndpoint.allCases {
            if var circuit = circuits[endpoint] {
                circuit.threshold = settings.circuitThreshold
                circuit.cooldown = settings.circuitCooldown.inSeconds
                circuit.maxCooldown = max(settings.circuitCooldown.inSeconds, settings.circuitMaxCooldown.inSeconds)
                circuits[endpoint] = circuit
            }
            buckets[endpoint]?.reconfigure(rate: settings.rate(for: endpoint), burst: settings.burst, now: mono)
        }
        for endpoint in Self.endpoints(of: settings) where circuits[endpoint] == nil {
            circuits[endpoint] = newCircuit()
            buckets[endpoint] = newBucket(endpoint, mono)
        }
    }

    /// The endpoints a configuration talks to.
    static func endpoints(of settings: Settings) -> [VerificationEndpoint] {
        var used = [settings.verifier.firstEndpoint]
        if settings.verifier.firstEndpoint == .production { used.append(.sandbox) }
        if let delivery = settings.delivery { used.append(delivery.firstEndpoint) }
        return used
    }

    static func circuit(_ settings: Settings) -> CircuitBreaker {
        CircuitBreaker(
            threshold: settings.circuitThreshold, cooldown: settings.circuitCooldown.inSeconds,
            maxCooldown: settings.circuitMaxCooldown.inSeconds)
    }

    private func newCircuit() -> CircuitBreaker {
        Self.circuit(settings)
    }

    private func newBucket(_ endpoint: VerificationEndpoint, _ mono: Double) -> TokenBucket {
        TokenBucket(rate: settings.rate(for: endpoint), burst: settings.burst, now: mono)
    }

    private nonisolated func monotonic() -> Double {
        (ContinuousClock.now - origin).inSeconds
    }
}
