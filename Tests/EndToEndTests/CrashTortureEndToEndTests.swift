import Foundation
import Glibc
import ReconcileCore
import ReconcileFoundation
import ReconcileMock
import Testing
import TestSupport
@testable import ReconcileStore
@testable import ReconcileSQLite

/// DESIGN §1's first two promises under fire (issue 6): orders keep arriving while the mock
/// injects faults and the daemon is SIGKILLed at random moments, again and again. At the end
/// every order is there, in the state the mock's answers imply, finished at most once, delivered
/// under one idempotency key, and the spool is empty. A tenth of the orders are Google Play's:
/// each is also acknowledged at Google exactly once, whatever the kills did to its outbox action.
///
/// CI runs a scaled version; `RECONCILE_SOAK=1` runs the long one (120 kills, 10,000 orders).
@Suite("End to end: crash torture", .serialized)
struct CrashTortureEndToEndTests {
    static let soak = ProcessInfo.processInfo.environment["RECONCILE_SOAK"] == "1"

    @Test("orders arrive, faults fly, the daemon is SIGKILLed at random: nothing lost, nothing finished or delivered twice")
    func crashTorture() async throws {
        let (total, kills) = Self.soak ? (10_000, 120) : (1_500, 15)
        var random = SystemRandomNumberGenerator()
        let seed = UInt64.random(in: 0...UInt64.max, using: &random)
        var generator = SeededRandomSource(seed: seed)
        let harness = Harness("torture")
        let faults = #"{"latency_ms":3,"status_rates":{"503":0.08,"500":0.02},"reset_rate":0.03,"reset_mid_body_rate":0.02,"garbage_rate":0.02,"truncate_rate":0.02}"#
        _ = try await harness.startPlayMock(arguments: ["--shared-secret", "s3cret", "--faults", faults, "--seed", String(seed)])
        harness.directory.write("shared-secret", "s3cret\n")
        harness.configure("""
            [Verifier]
            Kind=apple
            URL=\(harness.base)/verifyReceipt
            SandboxURL=\(harness.base)/sandbox/verifyReceipt
            BundleID=com.example.app
            SharedSecretFile=shared-secret
            MaxInFlight=16
            MaxRate=infinity
            CircuitThreshold=1000
            CircuitCooldown=100ms
            \(harness.playSection("MaxInFlight=16\nCircuitThreshold=1000\nCircuitCooldown=100ms"))
            [Delivery]
            URL=\(harness.base)/deliver
            \(VerificationEndToEndTests.quickRetry)
            MaxAttempts=10000
            """)

        // What the mock will make of each order: most are granted and delivered, some only after
        // Apple's "try again" (21005), some are refused for good (21010).
        var expected: [String: OrderState] = [:]
        var playTokens: [String: String] = [:]
        func order(_ index: Int) -> (String, MockReceipt) {
            let id = "X\(index)"
            switch index % 20 {
            case 0:
                expected[id] = .rejected
                return (id, appleReceipt(String(3_000_000 + index), statuses: [21010]))
            case 1:
                expected[id] = .finished
                return (id, appleReceipt(String(3_000_000 + index), statuses: [21005, 21005, 0]))
            default:
                expected[id] = .finished
                return (id, appleReceipt(String(3_000_000 + index)))
            }
        }

        // Google Play orders: index % 20 is 2 or 3 (a tenth), each its own purchase at the mock.
        func drop(_ range: Range<Int>) async throws {
            var purchases: [(token: String, product: String, extra: String)] = []
            for index in range where [2, 3].contains(index % 20) {
                let token = playToken("X\(index)")
                playTokens["X\(index)"] = token
                purchases.append((token, "gems", "\"orderId\":\"GPA.X\(index)\""))
            }
            if !purchases.isEmpty { try await harness.registerPurchases(purchases) }
            for index in range {
                if let token = playTokens["X\(index)"] {
                    expected["X\(index)"] = .finished
                    harness.dropPlayOrder("X\(index)", token: token)
                } else {
                    let (id, receipt) = order(index)
                    harness.dropOrder(id, receipt: receipt)
                }
            }
        }

        var submitted = 0
        let perRound = total / (kills + 1)
        for round in 0..<kills {
            try await drop(submitted..<(submitted + perRound))
            submitted += perRound
            let daemon = try harness.startDaemon()
            // real sleep: a random moment of another process's run, start-up included, is the torture
            try await Task.sleep(for: .milliseconds(Int.random(in: 50...700, using: &generator)))
            daemon.send(SIGKILL)
            #expect(await daemon.wait() == 128 + SIGKILL, "round \(round): the daemon ended on its own: \(daemon.standardError.suffix(500))")
        }
        try await drop(submitted..<total)

        // The faults stop; a last daemon finishes the work and stops cleanly.
        try await harness.configureMock(#"{"reset":true}"#)
        let daemon = try await harness.startDaemonAndWait()
        let settled = await eventually(timeout: .seconds(Self.soak ? 600 : 120), every: .milliseconds(200)) {
            let counts = harness.counts()
            return counts[.finished, default: 0] + counts[.rejected, default: 0] == total
                && (try? harness.store().outboxSummary().pending) == 0
        }
        #expect(settled, "seed \(seed): \(harness.counts()), outbox \(String(describing: try? harness.store().outboxSummary()))")
        daemon.send(SIGTERM)
        #expect(await daemon.wait() == 0)

        let store = try harness.store()
        let ids = try store.withConnection { try $0.query("SELECT order_id, state FROM orders") { ($0.string(0), $0.string(1)) } }
        #expect(ids.count == total)
        #expect(Set(ids.map(\.0)) == Set(expected.keys), "seed \(seed): lost or invented orders")
        let wrong = ids.filter { expected[$0.0]?.rawValue != $0.1 }
        #expect(wrong.isEmpty, "seed \(seed): \(wrong.count) orders in an unexpected state, e.g. \(wrong.prefix(5))")
        #expect(try harness.scalar("SELECT count(*) FROM (SELECT order_ref FROM transitions WHERE to_state = 'finished' GROUP BY order_ref HAVING count(*) > 1)") == 0)
        // One claimed transaction per finished order, and none for another.
        #expect(try harness.scalar("SELECT count(*) FROM (SELECT order_ref FROM claims GROUP BY order_ref HAVING count(*) > 1)") == 0)
        #expect(try harness.scalar("SELECT count(DISTINCT c.order_ref) FROM claims c JOIN orders o ON o.id = c.order_ref WHERE o.state = 'finished'")
            == expected.values.filter { $0 == .finished }.count)

        let stats = try await harness.mockStats()
        let finished = Set(expected.filter { $0.value == .finished }.keys)
        #expect(stats.idempotencyMismatches == 0, "a retry used another idempotency key")
        let delivered = Set(stats.deliveriesSucceeded.keys)
        #expect(delivered == finished, "seed \(seed): finished, not delivered: \(finished.subtracting(delivered).sorted().prefix(10)); delivered, not finished: \(delivered.subtracting(finished).sorted().prefix(10))")
        #expect(stats.deliveries.keys.allSatisfy { finished.contains($0) }, "a rejected order was delivered")
        // Every Play order acknowledged at Google once: its action done, or skipped when Google
        // had it already (an answer lost to a kill or a fault).
        let play = try await harness.playStats()
        #expect(playTokens.count == total / 10)
        for (id, token) in playTokens {
            #expect(play.acknowledged[MockStats.fingerprint(token)] == 1, "seed \(seed): \(id) acknowledged \(play.acknowledged[MockStats.fingerprint(token)] ?? 0) times")
            let states = try harness.actionStates(id)
            #expect(states == ["play_acknowledge done"] || states == ["play_acknowledge skipped"], "seed \(seed): \(id): \(states)")
        }
        #expect(try harness.scalar("SELECT count(*) FROM outbox") == playTokens.count, "an action recorded twice, or one missing")
        let incoming = try FileManager.default.contentsOfDirectory(atPath: harness.directory.file("spool/incoming"))
        #expect(incoming.isEmpty, "\(incoming.count) files left in incoming/")
        print("crash torture: \(kills) kills survived, \(total) orders (\(playTokens.count) Google Play) checked, \(stats.requests) requests (seed \(seed))")
    }
}
