import Foundation
import Synchronization
import Testing
import ReconcileCore
import TestSupport
@testable import ReconcileStore
@testable import ReconcileSQLite
import ReconcileFoundation

@Suite("Store: queries and pruning")
struct SQLiteOrderStoreTests {
    let fixture = StoreFixture()

    @Test("the due-order queries are range scans of their partial indexes, with or without statistics", arguments: WorkKind.allCases)
    func dueQueryUsesIndex(kind: WorkKind) throws {
        let store = try fixture.open()
        _ = try store.ingest((0..<2000).map { candidate("A\($0)") }, verifierKind: .apple, now: t0)
        let plan = try store.queryPlan(SQLiteOrderStore.dueOrdersSQL(kind), [.integer(t0.epochMilliseconds), .integer(10)])
        let index = "orders_due_\(kind.rawValue)"
        #expect(plan.contains { $0.contains("USING INDEX \(index)") || $0.contains("USING COVERING INDEX \(index)") }, "\(plan)")
        #expect(!plan.contains { $0.hasPrefix("SCAN orders") }, "\(plan)")
        #expect(!plan.contains { $0.contains("TEMP B-TREE") }, "\(plan)")
        try store.withConnection { try $0.execute("ANALYZE") }
        let analyzed = try store.queryPlan(SQLiteOrderStore.dueOrdersSQL(kind), [.integer(t0.epochMilliseconds), .integer(10)])
        #expect(analyzed == plan)
    }

    @Test("counting some states reads only their range of the state index, never the finished orders")
    func countsOfSomeStates() throws {
        let store = try fixture.open()
        _ = try store.ingest((0..<500).map { candidate("C\($0)") } + [candidate("W", receipt: nil)], verifierKind: .apple, now: t0)
        try store.force("C1", to: .held)
        try store.force("C2", to: .finished)
        #expect(try store.countsByState(in: [.pending, .held, .waiting, .escalated]) == [.pending: 498, .held: 1, .waiting: 1])
        let plan = try store.queryPlan(SQLiteOrderStore.countsStatement([.pending, .held]))
        #expect(plan.contains { $0.contains("USING COVERING INDEX orders_state_received (state=?)") }, "\(plan)")
        #expect(!plan.contains { $0.hasPrefix("SCAN orders") }, "\(plan)")
    }

    @Test("the STATUS count reads on a connection of its own: it answers while a writer holds the store's lock, and sees what was committed")
    func countsDoNotWaitForTheWriter() throws {
        let store = try fixture.open()
        _ = try store.ingest((0..<10).map { candidate("C\($0)") }, verifierKind: .apple, now: t0)
        let answered = DispatchSemaphore(value: 0)
        let counted = Mutex<[OrderState: Int]?>(nil)
        try store.withConnection { _ in
            // The store's lock is held here: a count that needed it would never answer.
            Thread.detachNewThread {
                counted.withLock { $0 = try? store.countsByState(in: [.pending]) }
                answered.signal()
            }
            #expect(answered.wait(timeout: .now() + 10) == .success, "the count waited for the writer's lock")
        }
        #expect(counted.withLock { $0 } == [.pending: 10])
        try store.force("C1", to: .held)
        #expect(try store.countsByState(in: [.pending, .held]) == [.pending: 9, .held: 1])
    }

    @Test("after the wall clock stepped back, attempts scheduled beyond the limit are brought to it; nearer ones and other states stay")
    func clampAfterClockStepBack() throws {
        let store = try fixture.open()
        _ = try store.ingest([candidate("A1"), candidate("A2"), candidate("A3"), candidate("H1")], verifierKind: .apple, now: t0)
        try store.force("A1", to: .pending, nextAttempt: t0 + 7_200)  // scheduled "2 h ahead" by the old clock
        try store.force("A2", to: .pending, nextAttempt: t0 + 10)
        try store.force("A3", to: .verified, nextAttempt: t0 + 9_000)  // a delivery retry
        try store.force("H1", to: .held)
        #expect(try store.clampNextAttempts(notAfter: t0 + 60) == 2)
        #expect(try store.nextDueTime() == t0 + 10)
        #expect(try store.dueOrderIDs(at: t0 + 60, limit: 10) == ["A2", "A1"])
        #expect(try store.dueOrderIDs(.deliver, at: t0 + 60, limit: 10) == ["A3"])
        #expect(try store.order(id: "H1")?.state == .held)
    }

    @Test("due orders come earliest first; nothing else is due")
    func dueOrders() throws {
        let store = try fixture.open()
        _ = try store.ingest([candidate("A1"), candidate("A2"), candidate("A3"), candidate("W", receipt: nil)], verifierKind: .apple, now: t0)
        try store.force("A1", to: .pending, nextAttempt: t0 + 30)
        try store.force("A2", to: .pending, nextAttempt: t0 + 10)
        try store.force("A3", to: .held)
        #expect(try store.nextDueTime() == t0 + 10)
        #expect(try store.dueOrderIDs(at: t0 + 5, limit: 10) == [])
        #expect(try store.dueOrderIDs(at: t0 + 60, limit: 10) == ["A2", "A1"])
        #expect(try store.dueOrderIDs(at: t0 + 60, limit: 1) == ["A2"])
    }

    @Test("pruning drops receipts and raw files of old finished orders only")
    func prune() throws {
        let store = try fixture.open()
        _ = try store.ingest([candidate("old"), candidate("new"), candidate("live"), candidate("gone")], verifierKind: .apple, now: t0)
        try store.force("old", to: .finished)
        try store.force("gone", to: .cancelled)
        try store.force("new", to: .finished)
        try store.write { try $0.run("UPDATE orders SET updated_at = ? WHERE order_id IN ('old', 'gone', 'live')", [.integer(t0.epochMilliseconds - 100_000)]) }
        try store.write { try $0.run("INSERT INTO claims (transaction_id, order_ref, claimed_at, actor) SELECT '42', id, 0, 'daemon' FROM orders WHERE order_id = 'old'") }

        #expect(try store.pruneFinished(before: t0 - 50, now: t0) == 2)
        let old = try #require(try store.order(id: "old"))
        #expect(old.proof.receipt == nil)
        #expect(old.prunedAt == t0)
        #expect(old.state == .finished)
        #expect(try store.scalar("SELECT count(*) FROM order_proofs WHERE raw IS NULL AND receipt IS NULL") == 2)
        #expect(try store.history(orderID: "old").count == 1)
        #expect(try store.scalar("SELECT count(*) FROM claims") == 1)
        #expect(try store.order(id: "new")?.proof.receipt == "QUJD")
        #expect(try store.order(id: "live")?.proof.receipt == "QUJD")
        #expect(try store.pruneFinished(before: t0 - 50, now: t0) == 0)
    }

    @Test("pruning works through a backlog larger than one batch")
    func pruneBatches() throws {
        let store = try fixture.open()
        _ = try store.ingest((0..<1203).map { candidate("F\($0)") }, verifierKind: .apple, now: t0)
        try store.write { try $0.run("UPDATE orders SET state = 'finished'") }
        #expect(try store.pruneFinished(before: t0 + 1, now: t0 + 1) == 1203)
    }

    @Test("the status and metrics queries read the state index only: never the table, never a sort")
    func summaryQueriesUseIndex() throws {
        let store = try fixture.open()
        _ = try store.ingest((0..<2000).map { candidate("A\($0)") }, verifierKind: .apple, now: t0)
        for analyzed in [false, true] {
            if analyzed { try store.withConnection { try $0.execute("ANALYZE") } }
            let counts = try store.queryPlan(SQLiteOrderStore.countsSQL)
            #expect(counts.contains { $0.contains("USING COVERING INDEX orders_state_received") }, "\(counts)")
            #expect(!counts.contains("SCAN orders"), "\(counts)")
            #expect(!counts.contains { $0.contains("TEMP B-TREE") }, "\(counts)")
            let oldest = try store.queryPlan(SQLiteOrderStore.oldestReceivedSQL, [.text("pending")])
            #expect(oldest.contains { $0.hasPrefix("SEARCH orders USING COVERING INDEX orders_state_received (state=?)") }, "\(oldest)")
            #expect(!oldest.contains { $0.contains("TEMP B-TREE") }, "\(oldest)")
        }
    }

    @Test("summary: counts, when the oldest pending or verifying order was taken in, the next attempt")
    func summary() throws {
        let store = try fixture.open()
        #expect(try store.summary() == StoreSummary(counts: [:]))
        _ = try store.ingest([candidate("old")], verifierKind: .apple, now: t0)
        _ = try store.ingest([candidate("mid"), candidate("W", receipt: nil)], verifierKind: .apple, now: t0 + 60)
        _ = try store.ingest([candidate("new")], verifierKind: .apple, now: t0 + 120)
        try store.force("old", to: .escalated)
        try store.force("mid", to: .verifying)
        try store.force("new", to: .pending, nextAttempt: t0 + 500)
        var summary = try store.summary()
        #expect(summary.counts == [.escalated: 1, .verifying: 1, .pending: 1, .waiting: 1])
        #expect(summary.oldestPendingReceivedAt == t0 + 60)  // escalated and waiting orders do not count
        #expect(summary.nextAttemptAt == t0 + 500)
        try store.force("mid", to: .finished)
        summary = try store.summary()
        #expect(summary.oldestPendingReceivedAt == t0 + 120)
    }

    @Test("counts by state")
    func counts() throws {
        let store = try fixture.open()
        _ = try store.ingest([candidate("A1"), candidate("A2"), candidate("A3", receipt: nil)], verifierKind: .apple, now: t0)
        #expect(try store.countsByState() == [.pending: 2, .waiting: 1])
    }
}
