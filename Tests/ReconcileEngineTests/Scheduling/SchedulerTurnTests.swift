import Foundation
import ReconcileCore
import ReconcileFoundation
import ReconcileStore
import ReconcileSQLite
import Synchronization
import Testing
import TestSupport
@testable import ReconcileEngine

/// The scheduler's turn, driven step by step with a clock the test sets and a verifier whose
/// attempts end when the test says: leasing ahead, probes, handing back, draining.
@Suite("Scheduler turns")
struct SchedulerTurnTests {
    let directory = TemporaryDirectory(prefix: "turns")
    let clock = ManualClock()

    /// Attempts that wait for the test: each `verify` parks until ``finish(_:_:observation:)``,
    /// or until its task is cancelled.
    final class HeldVerifier: OrderVerifier, Sendable {
        private let parked = Mutex<[String: CheckedContinuation<VerifierOutcome, Never>]>([:])
        private let startedOrders = Mutex<[String]>([])
        /// Orders whose attempt's task was cancelled (a cancellation before it parked included).
        private let cancelledOrders = Mutex<[String]>([])
        /// The gate each attempt was given (it reports with its order).
        private let gates = Mutex<[String: any EndpointGate]>([:])
        var firstEndpoint: VerificationEndpoint { .merchant }

        func verify(_ order: ClaimedOrder, gate: any EndpointGate) async -> VerifierOutcome {
            let orderID = order.orderID
            return await withTaskCancellationHandler {
                await withCheckedContinuation { continuation in
                    gates.withLock { $0[orderID] = gate }
                    startedOrders.withLock { $0.append(orderID) }
                    let cancelled = parked.withLock { parked in
                        guard !cancelledOrders.withLock({ $0.contains(orderID) }) else { return true }
                        parked[orderID] = continuation
                        return false
                    }
                    if cancelled { continuation.resume(returning: VerifierOutcome(records: [], verdict: .notSent(Reason(.requestCancelled)))) }
                }
            } onCancel: {
                let continuation = parked.withLock { parked in
                    cancelledOrders.withLock { $0.append(orderID) }
                    return parked.removeValue(forKey: orderID)
                }
                continuation?.resume(returning: VerifierOutcome(records: [], verdict: .notSent(Reason(.requestCancelled))))
            }
        }

        /// The orders whose attempt was cancelled, in order.
        var cancelled: [String] { cancelledOrders.withLock { $0 } }

        /// The orders whose attempt began, in order.
        var started: [String] { startedOrders.withLock { $0 } }
        var inFlight: Set<String> { Set(parked.withLock { $0.keys }) }

        /// Ends one parked attempt, after telling the gate what the exchange said.
        func finish(_ orderID: String, _ verdict: VerifierOutcome.Verdict, observation: EndpointObservation = .healthy, gate: Scheduler) async {
            let attemptGate: any EndpointGate = gates.withLock { $0.removeValue(forKey: orderID) } ?? gate
            await attemptGate.report(.merchant, observation, retryAfter: nil, rateLimited: false)
            let record = AttemptRecord(endpoint: .merchant, httpStatus: 200, latency: .milliseconds(5), outcome: .answered, startedAt: Date())
            let continuation = parked.withLock { $0.removeValue(forKey: orderID) }
            continuation?.resume(returning: VerifierOutcome(records: [record], verdict: verdict))
        }

        /// Ends every attempt still parked, and those the scheduler starts meanwhile, until none
        /// is in flight: a test leaves no task behind (LeakSanitizer counts them at exit).
        func releaseAll(_ scheduler: Scheduler) async {
            let released = await eventually(every: .milliseconds(5)) {
                let waiting = parked.withLock { parked in
                    defer { parked.removeAll() }
                    return Array(parked.values)
                }
                for continuation in waiting { continuation.resume(returning: VerifierOutcome(records: [], verdict: .notSent(Reason(ReasonCode(rawValue: "test_over"))))) }
                guard waiting.isEmpty else { return false }
                return await scheduler.status().inFlight == 0
            }
            #expect(released, "attempts still in flight at the end of the test")
            // The gates hold the scheduler, which holds this verifier: let the cycle go.
            gates.withLock { $0.removeAll() }
        }
    }

    func setUp(
        orders: Int, maxInFlight: Int, threshold: Int = 10, cooldown: Duration = .seconds(10), maxRate: Double? = nil, burst: Int = 10,
        maxAttempts: Int? = nil, initialDelay: Duration = .seconds(30), logger: Logger = .discarding,
        coordinator: (any ClusterCoordinator)? = nil, discovery: DiscoverySettings = DiscoverySettings()
    ) throws
        -> (SQLiteOrderStore, Scheduler, HeldVerifier)
    {
        let store = try SQLiteOrderStore(path: directory.file("orders.db"), mode: .owner)
        for index in 0..<orders {
            let orderID = String(format: "O%02d", index)
            let text = OrderFixtures.orderJSON(orderID)
            _ = try store.ingest(
                [IngestCandidate(submission: try OrderFileParser().parse(Array(text.utf8)), raw: Array(text.utf8), contentHash: orderID, fileName: orderID)],
                verifierKind: .http, now: clock.now().addingTimeInterval(Double(index) / 1000 - 60))
        }
        var retry = Configuration.RetrySettings()
        retry.initialDelay = initialDelay
        retry.jitter = .none
        if let maxAttempts { retry.maxAttempts = maxAttempts }
        let verifier = HeldVerifier()
        var settings = Scheduler.Settings(
            resolver: AttemptResolver(policy: RetryPolicy(retry), deliveryConfigured: false),
            maxInFlight: maxInFlight, maxRate: maxRate, burst: burst, circuitThreshold: threshold, circuitCooldown: cooldown,
            circuitMaxCooldown: .seconds(60), requestTimeout: .seconds(5))
        // The spacing between turns would wait on the clock, which only the test moves: the
        // tests that let `run()` loop step its turns by events alone.
        settings.turnSpacing = nil
        settings.discovery = discovery
        settings.verifiers = ConfiguredVerifiers(kind: .http)
        let scheduler = Scheduler(
            store: store, settings: settings, senders: Scheduler.Senders(verifier: verifier), logger: logger, clock: clock, coordinator: coordinator)
        return (store, scheduler, verifier)
    }

    func waitUntil(_ what: String, _ condition: () async -> Bool) async {
        #expect(await eventually(every: .milliseconds(5)) { await condition() }, "\(what)")
    }

    @Test("a turn leases a few orders ahead of the free slots; a finished attempt's slot is refilled at once, without a turn")
    func leasingAhead() async throws {
        let (store, scheduler, verifier) = try setUp(orders: 6, maxInFlight: 2)
        _ = await scheduler.turn()
        // Two slots plus one leased ahead (MaxInFlight / 4, at least one).
        #expect(try store.countsByState() == [.verifying: 3, .pending: 3])
        await waitUntil("two attempts in flight") { verifier.started.count == 2 }
        #expect(await scheduler.status().inFlight == 2)

        await verifier.finish("O00", .granted(Grant(transactionID: "T0"), finishedBy: .merchant), gate: scheduler)
        await waitUntil("the order leased ahead started as the slot freed") { verifier.started.count == 3 }
        await waitUntil("two in flight again") { await scheduler.status().inFlight == 2 }
        #expect(verifier.started == ["O00", "O01", "O02"])
        // Its completion waits for the next turn, which also leases one more ahead.
        #expect(try store.countsByState()[.finished] == nil)
        _ = await scheduler.turn()
        #expect(try store.countsByState() == [.finished: 1, .verifying: 3, .pending: 2])
        #expect(await scheduler.counters.finished == 1)
        await verifier.releaseAll(scheduler)
    }

    @Test("a discovered purchase: the turn sleeps until its grace ends, then makes its order, which the next turn leases")
    func discoveredPurchaseGrace() async throws {
        let deliver = DiscoverySettings(mode: .deliver, grace: .seconds(20))
        let (store, scheduler, verifier) = try setUp(orders: 0, maxInFlight: 1, discovery: deliver)
        // Alone on its store with nothing waiting: no wake at all.
        #expect(await scheduler.turn() == nil)
        let purchase = DiscoveredPurchase(
            store: .appStore, transactionKey: "2000000555", productID: "gems", accountToken: "acct-1",
            proof: OrderProof(transactionID: "2000000555", signedTransaction: "eyJ.e30.c2ln"), via: .file)
        #expect(try store.recordDiscovered([purchase], settings: deliver, now: clock.now()) == [.recorded(.waiting(until: clock.now() + 20))])
        let start = clock.instant()
        // Kept by another part of the daemon: read again after its nudge, not before.
        #expect(await scheduler.turn() == nil)
        scheduler.nudge()
        #expect(await scheduler.turn() == start + .seconds(20))
        // Asked again before then: the grace end is not read again, nothing is made.
        clock.advance(by: .seconds(19))
        #expect(await scheduler.turn() == start + .seconds(20))
        #expect(try store.order(id: "apple:2000000555") == nil)
        clock.advance(by: .seconds(1))
        // Made, and due at once: the turn asks for another at once, which leases it.
        #expect(await scheduler.turn() == clock.instant())
        #expect(try store.order(id: "apple:2000000555")?.origin == .store)
        #expect(try store.discoveredPurchases(limit: 5).map(\.status) == [.becameOrder(orderID: "apple:2000000555")])
        _ = await scheduler.turn()
        await waitUntil("the made order is verified") { verifier.started == ["apple:2000000555"] }
        await verifier.releaseAll(scheduler)
    }

    @Test("an open circuit: nothing is leased until its probe time; then one uncharged probe; its success closes the circuit")
    func probes() async throws {
        let (store, scheduler, verifier) = try setUp(orders: 3, maxInFlight: 1, threshold: 1, cooldown: .seconds(10))
        _ = await scheduler.turn()
        await waitUntil("first attempt") { verifier.started.count == 1 }
        await verifier.finish("O00", .transient(Reason(.http(503))), observation: .failure(reason: Reason(.http(503))), gate: scheduler)
        await waitUntil("circuit open") { await scheduler.status().endpoints.first { $0.endpoint == .merchant }?.circuit == "open" }
        await waitUntil("the attempt ended") { await scheduler.status().inFlight == 0 }
        // The ready order could not start: it goes back uncharged, due at the probe time. The
        // turn that commits outcomes looks again at once; the next one sleeps until the probe.
        _ = await scheduler.turn()
        let wake = await scheduler.turn()
        #expect(try store.countsByState() == [.pending: 3])
        #expect(try store.order(id: "O01")?.attempts == 0)
        let probeTime = try #require(wake)
        #expect(probeTime == clock.instant() + .seconds(10), "woke \(probeTime - clock.instant()) from now")
        #expect(verifier.started.count == 1)

        clock.advance(by: .seconds(10))
        _ = await scheduler.turn()
        await waitUntil("the probe started") { verifier.started.count == 2 }
        let probed = try #require(verifier.started.last)
        // The probe was chosen among the due orders; the others go back with the next turn,
        // uncharged and due at once (nothing more is sent while the probe is out).
        _ = await scheduler.turn()
        #expect(try store.countsByState()[.verifying] == 1)
        #expect(try store.order(id: "O02")?.attempts == 0)
        #expect(try store.order(id: probed)?.attempts == 0, "a probe is not charged")
        #expect(await scheduler.status().endpoints.first { $0.endpoint == .merchant }?.circuit == "half-open")

        await verifier.finish(probed, .granted(Grant(transactionID: "P"), finishedBy: .merchant), gate: scheduler)
        await waitUntil("circuit closed") { await scheduler.status().endpoints.first { $0.endpoint == .merchant }?.circuit == "closed" }
        await waitUntil("the probe ended") { await scheduler.status().inFlight == 0 }
        _ = await scheduler.turn()
        #expect(try store.order(id: probed)?.state == .finished)
        await waitUntil("the rest resumes") { verifier.started.count == 3 }
        await verifier.releaseAll(scheduler)
    }

    @Test("the probe is not the order that has just failed while another waits (issue 23, item 16)")
    func probeNotTheOrderThatJustFailed() async throws {
        // O00 in flight, O01 leased ahead; O00 fails (charged, due again after 30 s) and opens the
        // circuit for 60 s; O01 goes back, due at the probe time — after O00.
        let (store, scheduler, verifier) = try setUp(orders: 2, maxInFlight: 1, threshold: 1, cooldown: .seconds(60))
        _ = await scheduler.turn()
        await waitUntil("first attempt") { verifier.started == ["O00"] }
        await verifier.finish("O00", .transient(Reason(.http(503))), observation: .failure(reason: Reason(.http(503))), gate: scheduler)
        await waitUntil("the attempt ended") { await scheduler.status().inFlight == 0 }
        _ = await scheduler.turn()
        _ = await scheduler.turn()
        #expect(try store.order(id: "O00")?.attempts == 1)
        clock.advance(by: .seconds(60))
        _ = await scheduler.turn()
        await waitUntil("the probe started") { verifier.started.count == 2 }
        #expect(verifier.started.last == "O01", "the probe went with the order that had just failed")
        await verifier.releaseAll(scheduler)
    }

    @Test("an order whose every attempt gets a configuration answer the others do not is charged and escalates; the circuit stays closed (issue 23, item 1)")
    func configurationAnswersFollowTheOrder() async throws {
        let (store, scheduler, verifier) = try setUp(orders: 2, maxInFlight: 1, threshold: 10, cooldown: .seconds(60), maxAttempts: 3)
        _ = await scheduler.turn()
        await waitUntil("first attempt") { verifier.started == ["O00"] }
        // O00's proof makes the server answer a bare 404: a configuration error opens the circuit.
        await verifier.finish("O00", .configuration(Reason(.http(404))), observation: .configuration(reason: Reason(.http(404))), gate: scheduler)
        await waitUntil("circuit open") { await scheduler.status().endpoints.first { $0.endpoint == .merchant }?.circuit == "open" }
        await waitUntil("the attempt ended") { await scheduler.status().inFlight == 0 }
        _ = await scheduler.turn()
        _ = await scheduler.turn()
        #expect(try store.order(id: "O00")?.attempts == 0, "nothing known yet: not charged")
        // The probe goes with O01, which the endpoint answers: closed.
        clock.advance(by: .seconds(60))
        _ = await scheduler.turn()
        await waitUntil("the probe started") { verifier.started.count == 2 }
        #expect(verifier.started.last == "O01")
        _ = await scheduler.turn()
        await verifier.finish("O01", .granted(Grant(transactionID: "T1"), finishedBy: .merchant), gate: scheduler)
        await waitUntil("circuit closed") { await scheduler.status().endpoints.first { $0.endpoint == .merchant }?.circuit == "closed" }
        await waitUntil("the probe ended") { await scheduler.status().inFlight == 0 }
        // O00 again, and again: each answer charged to it, the circuit closed throughout, until
        // MaxAttempts (3 here) escalates it.
        var attempts = 1
        for _ in 0..<3 {
            _ = await scheduler.turn()
            _ = await scheduler.turn()
            await waitUntil("O00 attempt \(attempts)") { verifier.started.count == 2 + attempts }
            #expect(verifier.started.last == "O00")
            await verifier.finish("O00", .configuration(Reason(.http(404))), observation: .configuration(reason: Reason(.http(404))), gate: scheduler)
            await waitUntil("the attempt ended") { await scheduler.status().inFlight == 0 }
            #expect(await scheduler.status().endpoints.first { $0.endpoint == .merchant }?.circuit == "closed")
            _ = await scheduler.turn()
            clock.advance(by: .seconds(3600))
            attempts += 1
        }
        let final = try store.order(id: "O00")
        #expect(final?.state == .escalated, "\(String(describing: final))")
        #expect(try store.order(id: "O00")?.attempts == 3)
        #expect(try store.order(id: "O01")?.state == .finished)
        await verifier.releaseAll(scheduler)
    }

    @Test("orders leased ahead go back uncharged when their endpoint's circuit opens before they start")
    func handingBack() async throws {
        let (store, scheduler, verifier) = try setUp(orders: 2, maxInFlight: 1, threshold: 1)
        _ = await scheduler.turn()
        await waitUntil("one in flight, one leased ahead") { verifier.started.count == 1 }
        #expect(try store.countsByState() == [.verifying: 2])
        await verifier.finish("O00", .transient(Reason(.http(503))), observation: .failure(reason: Reason(.http(503))), gate: scheduler)
        await waitUntil("the attempt ended") { await scheduler.status().inFlight == 0 }
        _ = await scheduler.turn()
        let sent = try #require(try store.order(id: "O00"))
        let handedBack = try #require(try store.order(id: "O01"))
        #expect(sent.state == .pending && sent.attempts == 1)
        #expect(handedBack.state == .pending && handedBack.attempts == 0 && handedBack.reason == "circuit_open")
        #expect(verifier.started == ["O00"])
        await verifier.releaseAll(scheduler)
    }

    @Test("an order leased ahead that waits for a token makes the loop wake when the token comes (nothing else is due)")
    func waitsForToken() async throws {
        // One token a second, two at most; one slot, one order leased ahead.
        let (store, scheduler, verifier) = try setUp(orders: 2, maxInFlight: 1, maxRate: 1, burst: 2)
        _ = await scheduler.turn()
        await waitUntil("one in flight, one leased ahead") { verifier.started.count == 1 }
        #expect(try store.countsByState() == [.verifying: 2])
        // The attempt in flight takes the second token for a request of its own (a bounce).
        #expect(await scheduler.acquire(.merchant))
        await verifier.finish("O00", .granted(Grant(transactionID: "T"), finishedBy: .merchant), gate: scheduler)
        await waitUntil("the attempt ended") { await scheduler.status().inFlight == 0 }
        #expect(verifier.started.count == 1, "no token: the order leased ahead waits")
        let wake = await scheduler.turn()
        let tokenTime = try #require(wake, "the loop would sleep until an event: the waiting order is stranded")
        #expect(tokenTime <= clock.instant() + .seconds(1))
        clock.advance(by: .seconds(1))
        _ = await scheduler.turn()
        await waitUntil("it goes with the next token") { verifier.started.count == 2 }
        await verifier.releaseAll(scheduler)
    }

    @Test("stop drains: in-flight attempts finish and are committed; stop() returns once run() has ended")
    func draining() async throws {
        let (store, scheduler, verifier) = try setUp(orders: 1, maxInFlight: 2)
        let running = Task { await scheduler.run() }
        await waitUntil("in flight") { verifier.started.count == 1 }
        let stopping = Task { await scheduler.stop(drainTimeout: .seconds(30)) }
        await waitUntil("stopping") { await scheduler.stopping }
        #expect(try store.countsByState() == [.verifying: 1], "the stop waits for the attempt")
        await verifier.finish("O00", .granted(Grant(transactionID: "T"), finishedBy: .merchant), gate: scheduler)
        await stopping.value
        await running.value
        #expect(try store.countsByState() == [.finished: 1])
        // A stop after the loop ended returns at once.
        await scheduler.stop(drainTimeout: .seconds(1))
    }

    @Test("a stop starts nothing leased ahead, even when a slot frees during the drain: it goes back uncharged")
    func drainingStartsNothing() async throws {
        let (store, scheduler, verifier) = try setUp(orders: 3, maxInFlight: 2)
        let running = Task { await scheduler.run() }
        await waitUntil("two in flight, one leased ahead") { verifier.started.count == 2 }
        #expect(try store.countsByState() == [.verifying: 3])
        let stopping = Task { await scheduler.stop(drainTimeout: .seconds(30)) }
        await waitUntil("stopping") { await scheduler.stopping }
        // One slot frees while the other attempt still runs: the drain's turns go on. A slot is
        // refilled as the attempt ends, so by the time its outcome is committed any start would
        // have happened.
        await verifier.finish("O00", .granted(Grant(transactionID: "T0"), finishedBy: .merchant), gate: scheduler)
        await waitUntil("the outcome committed") { (try? store.countsByState()[.finished]) == 1 }
        #expect(verifier.started == ["O00", "O01"], "an attempt started during the drain")
        await verifier.finish("O01", .granted(Grant(transactionID: "T1"), finishedBy: .merchant), gate: scheduler)
        await stopping.value
        await running.value
        #expect(try store.countsByState() == [.finished: 2, .pending: 1])
        #expect(try store.order(id: "O02")?.attempts == 0)
        await verifier.releaseAll(scheduler)
    }

    @Test("an attempt still in flight after DrainTimeout is cancelled and awaited; it keeps its lease for the next start")
    func drainTimeout() async throws {
        let (store, scheduler, verifier) = try setUp(orders: 1, maxInFlight: 1)
        let running = Task { await scheduler.run() }
        await waitUntil("in flight") { verifier.started.count == 1 }
        let stopping = Task { await scheduler.stop(drainTimeout: .milliseconds(200)) }
        await waitUntil("stopping") { await scheduler.drainDeadline != nil }
        clock.advance(by: .milliseconds(199))
        #expect(!(await scheduler.stopped), "the drain ended before DrainTimeout")
        clock.advance(by: .milliseconds(1))
        await stopping.value
        await running.value
        #expect(verifier.cancelled == ["O00"], "run() returned with the attempt still running")
        #expect(await scheduler.status().inFlight == 0)
        #expect(try store.countsByState() == [.verifying: 1], "a cancelled attempt's outcome was committed")
        await verifier.releaseAll(scheduler)
    }

    @Test("cancelling run()'s task is a stop without a drain: the attempt is cancelled and keeps its lease, the order leased ahead goes back uncharged")
    func cancelledRun() async throws {
        let (store, scheduler, verifier) = try setUp(orders: 2, maxInFlight: 1)
        let running = Task { await scheduler.run() }
        await waitUntil("one in flight, one leased ahead") { verifier.started.count == 1 && (try? store.countsByState()) == [.verifying: 2] }
        running.cancel()
        await running.value
        #expect(await scheduler.stopped)
        #expect(verifier.cancelled == ["O00"])
        #expect(try store.countsByState() == [.verifying: 1, .pending: 1])
        #expect(try store.order(id: "O01")?.attempts == 0)
        await verifier.releaseAll(scheduler)
    }

    /// A step the kernel did not announce (no timerfd clock-set notice, or a clock set under a
    /// process): the loop sleeps towards the retry's monotonic deadline, an hour away, and sees
    /// the step at its next turn, the watchdog's heartbeat.
    @Test("the wall clock stepped forward by hours: what became due is attempted at the loop's next turn (here the heartbeat's); the step is logged")
    func clockStepsForward() async throws {
        let capture = CapturingLogHandler()
        let (store, scheduler, verifier) = try setUp(
            orders: 1, maxInFlight: 1, initialDelay: .seconds(3_600), logger: Logger(handler: capture))
        await scheduler.setHeartbeat(every: .seconds(2)) {}
        let running = Task { await scheduler.run() }
        await waitUntil("first attempt") { verifier.started.count == 1 }
        await verifier.finish("O00", .transient(Reason(.http(503))), gate: scheduler)
        await waitUntil("its retry an hour ahead") { (try? store.order(id: "O00"))?.attempts == 1 && (try? store.countsByState()) == [.pending: 1] }
        await clock.waitForTimers()
        clock.stepWall(by: 2 * 3_600)  // the retry an hour ahead is now an hour overdue
        clock.advance(by: .seconds(2))
        await waitUntil("attempted at the heartbeat's turn") { verifier.started.count == 2 }
        #expect(capture.records.contains { $0.message.contains("the wall clock stepped forward by 2h") }, "\(capture.records.map(\.message))")
        await scheduler.stop(drainTimeout: .zero)
        await verifier.releaseAll(scheduler)
        await running.value
    }
}
