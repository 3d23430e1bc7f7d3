import Foundation
import Testing
import ReconcileCore
import TestSupport
@testable import ReconcileStore
@testable import ReconcileSQLite
import ReconcileFoundation

@Suite("Store: ingest rules of DESIGN §3")
struct SQLiteOrderStoreIngestTests {
    let fixture = StoreFixture()

    @Test("a new order with usable proof is pending and due now; without, it waits")
    func newOrders() throws {
        let store = try fixture.open()
        let outcomes = try store.ingest(
            [candidate("A1"), candidate("A2", receipt: nil), candidate("A3", receipt: nil, transactionID: "100")],
            verifierKind: .apple, now: t0)
        #expect(outcomes == [.accepted(.pending), .accepted(.waiting), .accepted(.waiting)])
        let pending = try #require(try store.order(id: "A1"))
        #expect(pending.nextAttemptAt == t0)
        #expect(pending.receivedAt == t0)
        #expect(pending.attempts == 0)
        #expect(pending.reason == "ingested")
        #expect(try store.order(id: "A2")?.nextAttemptAt == nil)
        // Kind=http can use a transaction id.
        #expect(try store.ingest([candidate("B1", receipt: nil, transactionID: "100")], verifierKind: .http, now: t0) == [.accepted(.pending)])
        let history = try store.history(orderID: "A1")
        #expect(history.count == 1)
        #expect(history[0].from == nil)
        #expect(history[0].to == .pending)
        #expect(history[0].actor == .daemon)
        #expect(history[0].detail == "from spool file A1.json")
    }

    @Test("the same content again is a no-op")
    func identical() throws {
        let store = try fixture.open()
        _ = try store.ingest([candidate("A1")], verifierKind: .apple, now: t0)
        #expect(try store.ingest([candidate("A1")], verifierKind: .apple, now: t0 + 5) == [.unchanged])
        #expect(try store.history(orderID: "A1").count == 1)
        #expect(try store.order(id: "A1")?.updatedAt == t0)
    }

    @Test("a different product id is a conflict and changes nothing")
    func conflictingProduct() throws {
        let store = try fixture.open()
        _ = try store.ingest([candidate("A1")], verifierKind: .apple, now: t0)
        let outcome = try store.ingest([candidate("A1", product: "other", receipt: "WFla")], verifierKind: .apple, now: t0)
        guard case .conflict(let problem) = outcome[0] else { Issue.record("expected a conflict"); return }
        #expect(problem.code == .conflictingProduct)
        #expect(problem.detail == "order A1 is stored with product_id \"gems\", this file says \"other\"")
        #expect(!outcome[0].isCommitted)
        #expect(try store.order(id: "A1")?.proof.receipt == "QUJD")
    }

    @Test("anything for a finished or cancelled order is a logged duplicate")
    func terminal() throws {
        let store = try fixture.open()
        _ = try store.ingest([candidate("A1"), candidate("A2")], verifierKind: .apple, now: t0)
        try store.force("A1", to: .finished)
        try store.force("A2", to: .cancelled)
        let outcomes = try store.ingest([candidate("A1", receipt: "WFla"), candidate("A2", receipt: "WFla")], verifierKind: .apple, now: t0 + 1)
        #expect(outcomes == [
            .duplicateIgnored(state: .finished, why: "the order is finished; a later file changes nothing"),
            .duplicateIgnored(state: .cancelled, why: "the order is cancelled; a later file changes nothing"),
        ])
        #expect(try store.order(id: "A1")?.proof.receipt == "QUJD")
        #expect(try store.order(id: "A1")?.state == .finished)
        let last = try #require(try store.history(orderID: "A1").last)
        #expect(last.reason == "duplicate_ignored")
        #expect(last.from == .finished && last.to == .finished)
    }

    @Test(
        "new proof revives dormant orders and makes them due now",
        arguments: [OrderState.waiting, .pending, .rejected, .escalated, .expired])
    func newProof(state: OrderState) throws {
        let store = try fixture.open()
        _ = try store.ingest([candidate("A1", receipt: nil)], verifierKind: .apple, now: t0)
        try store.force("A1", to: state)
        let outcome = try store.ingest([candidate("A1", receipt: "TkVX")], verifierKind: .apple, now: t0 + 60)
        #expect(outcome == [.proofReplaced(from: state, to: .pending)])
        let order = try #require(try store.order(id: "A1"))
        #expect(order.state == .pending)
        #expect(order.proof.receipt == "TkVX")
        #expect(order.nextAttemptAt == t0 + 60)
        #expect(order.receivedAt == t0)  // the age clock keeps running
        #expect(try store.history(orderID: "A1").last?.reason == "proof_replaced")
    }

    @Test("held keeps its state; the proof waits for the release")
    func heldKeepsState() throws {
        let store = try fixture.open()
        _ = try store.ingest([candidate("A1", receipt: nil)], verifierKind: .apple, now: t0)
        try store.force("A1", to: .held, resume: .waiting)
        #expect(try store.ingest([candidate("A1", receipt: "TkVX")], verifierKind: .apple, now: t0) == [.proofReplaced(from: .held, to: .held)])
        let order = try #require(try store.order(id: "A1"))
        #expect(order.state == .held)
        #expect(order.resumeState == .pending)
        #expect(order.nextAttemptAt == nil)
        #expect(order.proof.receipt == "TkVX")
    }

    @Test("an order being verified gets the proof for its next try; a verified one keeps going")
    func inFlight() throws {
        let store = try fixture.open()
        _ = try store.ingest([candidate("A1"), candidate("A2")], verifierKind: .apple, now: t0)
        try store.force("A1", to: .verifying)
        try store.force("A2", to: .verified)
        let outcomes = try store.ingest([candidate("A1", receipt: "TkVX"), candidate("A2", receipt: "TkVX")], verifierKind: .apple, now: t0)
        #expect(outcomes == [.proofReplaced(from: .verifying, to: .verifying), .proofReplaced(from: .verified, to: .verified)])
        #expect(try store.order(id: "A1")?.proof.receipt == "TkVX")
        #expect(try store.scalar("SELECT proof_revision FROM orders WHERE order_id = 'A1'") == 2)
    }

    @Test("a later file without new proof changes nothing but is recorded")
    func noNewProof() throws {
        let store = try fixture.open()
        _ = try store.ingest([candidate("A1")], verifierKind: .apple, now: t0)
        let outcomes = try store.ingest(
            [candidate("A1", extra: "\"user_id\":\"u2\""), candidate("A1", receipt: nil, extra: "\"note\":1")], verifierKind: .apple, now: t0)
        #expect(outcomes == [.duplicateIgnored(state: .pending, why: "no new proof"), .duplicateIgnored(state: .pending, why: "no new proof")])
        #expect(try store.history(orderID: "A1").count == 3)
    }

    @Test("proof the verifier cannot use is kept, and the order keeps waiting")
    func unusableProof() throws {
        let store = try fixture.open()
        _ = try store.ingest([candidate("A1", receipt: nil)], verifierKind: .apple, now: t0)
        let outcome = try store.ingest([candidate("A1", receipt: nil, transactionID: "123")], verifierKind: .apple, now: t0)
        #expect(outcome == [.proofReplaced(from: .waiting, to: .waiting)])
        #expect(try store.order(id: "A1")?.proof.transactionID == "123")
        #expect(try store.order(id: "A1")?.state == .waiting)
    }

    @Test("a later file never takes proof away")
    func proofMerges() throws {
        let store = try fixture.open()
        _ = try store.ingest([candidate("A1", receipt: "QUJD")], verifierKind: .http, now: t0)
        _ = try store.ingest([candidate("A1", receipt: nil, transactionID: "77")], verifierKind: .http, now: t0)
        let proof = try #require(try store.order(id: "A1")?.proof)
        #expect(proof == OrderProof(receipt: "QUJD", transactionID: "77"))
    }

    @Test("a future created_at is clamped to the ingest time")
    func clampsCreatedAt() throws {
        let store = try fixture.open()
        _ = try store.ingest(
            [candidate("A1", extra: "\"created_at\":\"2099-01-01T00:00:00Z\""), candidate("A2", extra: "\"created_at\":\"2020-01-01T00:00:00Z\"")],
            verifierKind: .apple, now: t0)
        #expect(try store.order(id: "A1")?.createdAt == t0)
        #expect(try store.order(id: "A2")?.createdAt == RFC3339.parse("2020-01-01T00:00:00Z"))
    }

    @Test("a batch is applied in order: a later file sees an earlier one")
    func batchOrder() throws {
        let store = try fixture.open()
        let outcomes = try store.ingest(
            [candidate("A1", receipt: nil), candidate("A1", receipt: "TkVX"), candidate("A1", receipt: "TkVX")],
            verifierKind: .apple, now: t0)
        #expect(outcomes == [.accepted(.waiting), .proofReplaced(from: .waiting, to: .pending), .unchanged])
    }

    @Test("a failed batch commits nothing")
    func atomicBatch() throws {
        let store = try fixture.open()
        try store.write { try $0.execute("CREATE TRIGGER boom BEFORE INSERT ON orders WHEN NEW.order_id = 'BAD' BEGIN SELECT RAISE(ABORT, 'boom'); END") }
        #expect(throws: SQLiteError.self) {
            _ = try store.ingest([candidate("A1"), candidate("BAD")], verifierKind: .apple, now: t0)
        }
        #expect(try store.order(id: "A1") == nil)
    }
}
