import Foundation
import Glibc
import ReconcileCore
import ReconcileFoundation
import ReconcileMock
import Testing
import TestSupport
@testable import ReconcileStore
@testable import ReconcileSQLite

/// Purchases the phone never sent under fire (DESIGN §5b, issue 26): App Store
/// `ONE_TIME_CHARGE` files and the phone's own orders arrive in every order — with the
/// notification, inside the grace, long after it, or never — while the mock injects faults and
/// the daemon is SIGKILLed at random. At the end every purchase is held by exactly one order that
/// was delivered once under its own key; a late phone order finished `same_purchase_as`,
/// delivered nothing; no phone order was lost.
@Suite("End to end: discovery torture", .serialized)
struct DiscoveryTortureEndToEndTests {
    @Test("ONE_TIME_CHARGE files and phone orders in every order, faults, SIGKILLs: one delivered order per purchase, none lost, none granted twice")
    func discoveryTorture() async throws {
        let (total, kills) = (120, 8)
        var random = SystemRandomNumberGenerator()
        let seed = UInt64.random(in: 0...UInt64.max, using: &random)
        var generator = SeededRandomSource(seed: seed)
        let harness = Harness("discovery-torture")
        let setup = try await AppStoreEndToEndTests.setUp(harness, mockArguments: ["--seed", String(seed)])
        let account = DiscoveryEndToEndTests.account
        let transactions = (0..<total).map { (String(8_000_000 + $0), "gems", ",\"appAccountToken\":\"\(account)\"") }
        try await AppStoreEndToEndTests.register(harness, environment: "Production", transactions)
        harness.configure(DiscoveryEndToEndTests.configuration(harness, grace: "1s") + "[Retry]\nMaxAttempts=10000\n")
        try await harness.configureMock(
            #"{"latency_ms":2,"status_rates":{"503":0.06,"500":0.02},"reset_rate":0.03,"garbage_rate":0.02,"truncate_rate":0.02}"#)

        // i % 4: 0 the phone's order with the notification (inside the grace); 1 the phone's
        // order one round later (often after the grace; i % 8 == 5: only once every purchase is
        // settled, so that some are late whatever the machine's speed); 2 no phone order; 3 the
        // phone's order first, the notification a round later.
        func lateForSure(_ index: Int) -> Bool { index % 8 == 5 }
        func phoneOrder(_ index: Int) -> String {
            OrderFixtures.orderJSON(
                "M-\(index)", product: "gems", receipt: nil, transactionID: String(8_000_000 + index),
                extra: "\"application_username\":\"\(account)\"")
        }
        func notification(_ index: Int) throws -> String {
            try DiscoveryEndToEndTests.oneTimeChargeFile(setup.signer, id: "otc-\(index)", transactionID: String(8_000_000 + index))
        }
        let perRound = total / kills
        var phones: Set<Int> = []
        for round in 0...kills {
            let range = (round * perRound)..<min(total, (round + 1) * perRound)
            for index in range {
                switch index % 4 {
                case 0:
                    harness.drop("n\(index).json", try notification(index))
                    harness.drop("m\(index).json", phoneOrder(index))
                    phones.insert(index)
                case 3:
                    harness.drop("m\(index).json", phoneOrder(index))
                    phones.insert(index)
                default:
                    harness.drop("n\(index).json", try notification(index))
                }
            }
            // Last round's late ones.
            if round > 0 {
                for index in ((round - 1) * perRound)..<min(total, round * perRound) {
                    if index % 4 == 1 && !lateForSure(index) {
                        harness.drop("m\(index).json", phoneOrder(index))
                        phones.insert(index)
                    }
                    if index % 4 == 3 { harness.drop("n\(index).json", try notification(index)) }
                }
            }
            guard round < kills else { break }
            let daemon = try harness.startDaemon()
            // real sleep: a random moment of another process's run, start-up included, is the torture
            try await Task.sleep(for: .milliseconds(Int.random(in: 100...1_200, using: &generator)))
            daemon.send(SIGKILL)
            #expect(await daemon.wait() == 128 + SIGKILL, "round \(round): the daemon ended on its own: \(daemon.standardError.suffix(500))")
        }
        for index in ((kills - 1) * perRound)..<total {
            if index % 4 == 1 && !lateForSure(index) && !phones.contains(index) {
                harness.drop("m\(index).json", phoneOrder(index))
                phones.insert(index)
            }
            if index % 4 == 3 { harness.drop("n\(index).json", try notification(index)) }
        }

        // The faults stop; a last daemon settles everything and stops cleanly.
        try await harness.configureMock(#"{"reset":true}"#)
        let daemon = try await harness.startDaemonAndWait()
        let settled = await eventually(timeout: .seconds(120), every: .milliseconds(200)) {
            guard let store = try? harness.store(), let discovered = try? store.discoveredPurchases(limit: total * 2) else { return false }
            let counts = harness.counts()
            return discovered.count == total && discovered.allSatisfy { $0.status.code != "waiting" }
                && counts.keys.allSatisfy { $0 == .finished }
                && (try? FileManager.default.contentsOfDirectory(atPath: harness.directory.file("spool/incoming")).isEmpty) == true
        }
        #expect(settled, "seed \(seed): \(harness.counts())")
        // The late ones: every purchase became an order or was joined by now.
        let late = (0..<total).filter(lateForSure)
        for index in late {
            harness.drop("m\(index).json", phoneOrder(index))
            phones.insert(index)
        }
        let lateFinished = await eventually(timeout: .seconds(60), every: .milliseconds(200)) {
            late.allSatisfy { (try? harness.store().order(id: "M-\($0)")?.state) == .finished }
        }
        #expect(lateFinished, "seed \(seed): \(harness.counts())")
        daemon.send(SIGTERM)
        #expect(await daemon.wait() == 0)

        let store = try harness.store()
        let stats = try await harness.mockStats()
        #expect(stats.idempotencyMismatches == 0, "a retry used another idempotency key")
        let discovered = Dictionary(uniqueKeysWithValues: try store.discoveredPurchases(limit: total * 2).map { ($0.purchase.transactionKey, $0.status) })
        for index in 0..<total {
            let transaction = String(8_000_000 + index)
            let phone = try store.order(id: "M-\(index)")
            let made = try store.order(id: "apple:\(transaction)")
            // No phone order is lost.
            #expect((phone != nil) == phones.contains(index), "seed \(seed): M-\(index)")
            // Exactly one order holds the purchase and was delivered (a request repeated after a
            // kill or a fault carries the same Idempotency-Key: the merchant grants it once).
            let delivered = ["M-\(index)", "apple:\(transaction)"].filter { stats.deliveriesSucceeded[$0] != nil }
            #expect(delivered.count == 1, "seed \(seed): purchase \(index) delivered as \(delivered), \(String(describing: discovered[transaction]))")
            if let made {
                #expect(discovered[transaction] == .becameOrder(orderID: made.orderID), "seed \(seed): \(index)")
                if let phone {
                    #expect(phone.finishedBy == .discovery && phone.reason == "same_purchase_as", "seed \(seed): \(index): \(phone)")
                    #expect(stats.deliveries["M-\(index)"] == nil, "seed \(seed): a late phone order was sent for delivery")
                }
            } else {
                #expect(phone?.state == .finished && discovered[transaction] == .joined(orderID: "M-\(index)"), "seed \(seed): \(index)")
            }
        }
        // Every path was taken: phone orders that took purchases over, orders made from
        // purchases, and late phone orders that found theirs made.
        let lateOrders = try harness.scalar("SELECT count(*) FROM orders WHERE finished_by = 'discovery'")
        let joined = discovered.values.filter { if case .joined = $0 { true } else { false } }.count
        let made = discovered.values.filter { if case .becameOrder = $0 { true } else { false } }.count
        print("discovery torture, seed \(seed): \(joined) joined, \(made) made, \(lateOrders) late phone orders")
        #expect(joined > 0 && made > 0 && lateOrders >= late.count, "seed \(seed): \(joined) joined, \(made) made, \(lateOrders) late")
        // One claim per purchase, never two orders on one transaction.
        #expect(try harness.scalar("SELECT count(*) FROM claims") == total)
        #expect(try harness.scalar("SELECT count(*) FROM (SELECT order_ref FROM transitions WHERE to_state = 'finished' GROUP BY order_ref HAVING count(*) > 1)") == 0)
    }
}
