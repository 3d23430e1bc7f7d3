import Foundation
import Glibc
import ReconcileCore
import ReconcileMock
import Testing
import TestSupport
@testable import ReconcileStore

/// Orders that always fail must not hold the others behind an open circuit (issue 23, items 1
/// and 16).
@Suite("End to end: orders that always fail", .serialized)
struct PoisonedOrdersEndToEndTests {
    /// The bound every good order finishes within, from the daemon's start (the note in the
    /// docs/verification.md's "Retries, circuits and limits"): the poisoned block at the head of the queue is
    /// passed over in a few probes (each leases 256 candidates), with cool-downs of at most
    /// 1 + 2 + 4 + 4 + 4 + 4 + 4 + 4 s while nothing has answered yet; then runs of poisoned
    /// orders among the good ones cost a probe at once, and a few cool-downs when it is poisoned
    /// too. Measured 52–134 s on the 2-core test machine, 18–37 probes, alone or among the
    /// other suites (the spread is in the first pass over the block: 30 s in a quick run, over
    /// 100 s in a slow one; not explained yet); 120 s, the bound before, failed two runs in
    /// nine. Before issue 23 the good orders waited behind one probe per poisoned order (4 s
    /// each: over two hours), which this bound still catches.
    static let bound: Duration = .seconds(240)

    /// Poisoned and good orders each: 2,000 unless `RECONCILE_POISONED_ORDERS` says otherwise
    /// (at least 300, more than a probe's 256 candidates). The sanitizer runs use fewer: they
    /// look for memory errors and races on the same path, and 2,000 cost them minutes.
    static let orders = ProcessInfo.processInfo.environment["RECONCILE_POISONED_ORDERS"].flatMap(Int.init).map { max(300, $0) } ?? 2_000

    @Test("2,000 orders the merchant answers 503 for, ahead of 2,000 good ones: every good one finishes within the bound; the poisoned ones are charged")
    func poisonedAheadOfGood() async throws {
        let orders = Self.orders
        let harness = Harness("poisoned-orders")
        try await harness.startMock()
        harness.configure("""
            [Verifier]
            Kind=http
            URL=\(harness.base)/merchant/verify
            MaxInFlight=16
            MaxRate=1000
            Burst=100
            CircuitThreshold=10
            CircuitCooldown=1s
            CircuitMaxCooldown=4s
            [Retry]
            InitialDelay=1s
            Multiplier=2
            MaxDelay=4s
            MaxAttempts=3
            MaxAge=1h
            """)
        // The poisoned orders first: they are at the head of the queue.
        for index in 0..<orders { harness.dropOrder(String(format: "F%06d", index), receipt: MockReceipt(merchantAnswers: ["503"])) }
        for index in 0..<orders { harness.dropOrder(String(format: "G%06d", index)) }
        let started = ContinuousClock.now
        let daemon = try harness.startDaemon(logLevel: "info")
        // `eventually` stretches its time-out (TestTime.scale, and a starved test process), so
        // the promise is checked against the elapsed time itself below.
        let finished = await eventually(timeout: Self.bound, every: .milliseconds(200)) { harness.counts()[.finished] == orders }
        let elapsed = ContinuousClock.now - started
        let log = daemon.standardError
        daemon.send(SIGTERM)
        #expect(await daemon.wait() == 0)
        let probes = log.components(separatedBy: "\n").filter { $0.contains("probing merchant with order") }
        #expect(finished, "good orders finished: \(harness.counts()[.finished] ?? 0) of \(orders) after \(elapsed); \(probes.count) probes: \(probes.suffix(5))")
        #expect(elapsed <= TestTime.scaled(Self.bound), "\(orders) good orders took \(elapsed), over the bound of \(TestTime.scaled(Self.bound))")
        print("poisoned-orders: \(orders) good orders finished in \(elapsed) (bound \(Self.bound)); \(probes.count) probes")
        // No good order failed; the poisoned ones that were sent while the circuit was closed
        // were charged (some are escalated by now, or wait with attempts counted).
        let store = try harness.store()
        let poisoned = try (0..<orders).compactMap { try store.order(id: String(format: "F%06d", $0)) }
        #expect(poisoned.allSatisfy { $0.state != .finished })
        #expect(poisoned.contains { $0.attempts >= 2 }, "no poisoned order was charged a second attempt")
    }

    @Test("purchase tokens \".\" and \"..\" are asked about as themselves: no order's proof opens googleplay's circuit; a good order behind 30 of them finishes at once")
    func dotTokens() async throws {
        let harness = Harness("dot-tokens")
        _ = try await harness.startPlayMock()
        let good = playToken("good")
        try await harness.registerPurchases([(good, "gems", "\"orderId\":\"GPA.1111\"")])
        harness.configure("""
            \(harness.playSection())
            \(VerificationEndToEndTests.quickRetry)
            MaxAttempts=3
            MaxAge=1h
            """)
        // Ahead of the good order in the queue.
        for index in 0..<30 { harness.dropPlayOrder(String(format: "D%02d", index), token: index % 2 == 0 ? "." : "..") }
        let started = ContinuousClock.now
        let daemon = try harness.startDaemon()
        #expect(await harness.waitFor(.rejected, count: 30, timeout: .seconds(30)), "\(harness.counts())")
        harness.dropPlayOrder("P1", token: good)
        #expect(await harness.waitFor(.finished, count: 1, timeout: .seconds(10)), "\(harness.counts()) after \(ContinuousClock.now - started)")
        let log = daemon.standardError
        daemon.send(SIGTERM)
        #expect(await daemon.wait() == 0)
        #expect(!log.contains("circuit for googleplay opened"), "\(log.components(separatedBy: "\n").filter { $0.contains("circuit") }.prefix(3))")
        // Google was asked about the token "." itself, not about "…/tokens/".
        let stats = try await harness.playStats()
        #expect(stats.reads.keys.contains(MockStats.fingerprint(".")), "\(stats.reads.keys.sorted().prefix(5))")
    }
}
