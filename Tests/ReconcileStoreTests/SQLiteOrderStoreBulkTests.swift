import Dispatch
import Foundation
import ReconcileCore
import Synchronization
import Testing
import TestSupport
@testable import ReconcileStore
@testable import ReconcileSQLite

@Suite("Store: operator actions in batches")
struct SQLiteOrderStoreBulkTests {
    let fixture = StoreFixture()
    let alice = TransitionActor.operator("alice")

    /// `count` escalated orders E0…, taken in one second apart, and one duplicate escalation.
    func escalated(_ count: Int) throws -> SQLiteOrderStore {
        let store = try fixture.open()
        _ = try store.ingest((0..<count).map { candidate("E\($0)") } + [candidate("DUP")], verifierKind: .apple, now: t0)
        try store.write { connection in
            try connection.run("UPDATE orders SET state = 'escalated', reason = 'max_attempts', next_attempt_at = NULL, received_at = received_at + id * 1000")
            try connection.run("UPDATE orders SET reason = 'duplicate_transaction' WHERE order_id = 'DUP'")
        }
        return store
    }

    func retry(_ state: OrderState) -> OperatorRequest {
        OperatorRequest(action: .retry, target: .state(state), actor: alice, note: "outage over")
    }

    @Test("--state: every order in the state, in batches, counted; the examples are the first of each kind")
    func counts() throws {
        let store = try escalated(2_500)
        var seen: [String] = []
        let outcome = try store.applyInBatches(
            retry(.escalated), verifierKind: .apple, now: { t0 + 10 }, batchSize: 1_000, sampleSize: 5, each: { seen.append($0.orderID) })
        #expect(outcome.matched == 2_501)
        #expect(outcome.applied == 2_500)
        #expect(outcome.refused == 1)
        #expect(outcome.changed == 2_500)
        #expect(!outcome.interrupted && outcome.notReached == 0)
        #expect(outcome.examples.map(\.orderID) == ["E0", "E1", "E2", "E3", "E4", "DUP"])
        #expect(seen.count == 2_501)
        #expect(seen.prefix(3) == ["E0", "E1", "E2"])  // in the order they were taken in
        #expect(try store.countsByState() == [.pending: 2_500, .escalated: 1])
        #expect(try store.history(orderID: "E2499").last?.detail == "outage over")
    }

    @Test("between two batches the store is free: other readers and writers get their turn")
    func storeFreeBetweenBatches() throws {
        let store = try escalated(3_000)
        let answered = Mutex<[Bool]>([])
        _ = try store.applyInBatches(
            retry(.escalated), verifierKind: .apple, batchSize: 1_000,
            shouldStop: {
                // Asked before each batch, outside its transaction: a write from another
                // thread gets through at once.
                let done = DispatchSemaphore(value: 0)
                let thread = Thread {
                    _ = try? store.ingest([candidate("X\(UUID().uuidString.prefix(8))")], verifierKind: .apple, now: t0)
                    done.signal()
                }
                thread.start()
                answered.withLock { $0.append(done.wait(timeout: .now() + 5) == .success) }
                return false
            })
        #expect(answered.withLock { $0 } == [true, true, true, true])
    }

    @Test("a stop between batches ends the action and says how far it got")
    func interrupted() throws {
        let store = try escalated(2_500)
        var batches = 0
        let outcome = try store.applyInBatches(
            retry(.escalated), verifierKind: .apple, batchSize: 1_000,
            shouldStop: {
                batches += 1
                return batches > 1
            })
        #expect(outcome.interrupted)
        #expect(outcome.applied == 1_000)
        #expect(outcome.notReached == 1_501)
        #expect(try store.countsByState() == [.pending: 1_000, .escalated: 1_501])
    }

    @Test("an order that left the state before its batch is skipped, not acted on")
    func skipped() throws {
        let store = try escalated(1_500)
        var batches = 0
        let outcome = try store.applyInBatches(
            OperatorRequest(action: .hold, target: .state(.escalated), actor: alice), verifierKind: .apple, batchSize: 1_000,
            shouldStop: {
                batches += 1
                if batches == 2 { try? store.force("E1200", to: .finished) }
                return false
            })
        #expect(outcome.skipped == 1)
        #expect(outcome.applied == 1_500)
        #expect(try store.order(id: "E1200")?.state == .finished)
    }

    @Test("named orders: every outcome, in order, in batches")
    func named() throws {
        let store = try escalated(20)
        var seen: [OperatorOutcome] = []
        let outcome = try store.applyInBatches(
            OperatorRequest(action: .retry, target: .orders(["E1", "NOPE", "E2"]), actor: alice), verifierKind: .apple, batchSize: 2,
            each: { seen.append($0) })
        #expect(outcome.matched == 3 && outcome.applied == 2 && outcome.notFound == 1)
        #expect(seen.map(\.orderID) == ["E1", "NOPE", "E2"])
    }
}
