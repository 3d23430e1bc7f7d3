import Foundation
import Testing
import ReconcileCore
import TestSupport
@testable import ReconcileStore
@testable import ReconcileSQLite

@Suite("Store: operator actions")
struct SQLiteOrderStoreOperatorTests {
    let fixture = StoreFixture()
    let owner = "host:1:abc"
    let alice = TransitionActor.operator("alice")
    let bob = TransitionActor.operator("bob")

    func act(
        _ store: SQLiteOrderStore, _ action: OperatorAction, _ orderID: String, by actor: TransitionActor? = nil, note: String? = nil,
        force: Bool = false, at time: Date = t0 + 10
    ) throws -> OperatorOutcome.Result? {
        try store.apply(
            OperatorRequest(action: action, target: .orders([orderID]), actor: actor ?? alice, note: note, force: force),
            verifierKind: .apple, now: time
        ).first?.result
    }

    func claim(_ store: SQLiteOrderStore, _ kind: WorkKind = .verify) throws -> [ClaimedOrder] {
        try store.claimDue(kind, now: t0, limit: 10, owner: owner, leaseUntil: t0 + 60, charge: true)
    }

    func record() -> AttemptRecord {
        AttemptRecord(endpoint: .production, environment: "Production", httpStatus: 200, verifierStatus: 0, latency: .milliseconds(5), outcome: .answered, startedAt: t0)
    }

    /// An order escalated because its delivery was refused: it resumes at `verified`.
    func deliveryEscalated(_ store: SQLiteOrderStore, _ orderID: String) throws {
        _ = try store.ingest([candidate(orderID)], verifierKind: .apple, now: t0)
        let items = [AppleReceiptItem(productID: "gems", transactionID: "T-\(orderID)")]
        _ = try store.complete(
            try claim(store).map { AttemptCompletion(order: $0, records: [record()], resolution: .match(items: items, environment: "Production", finishes: false), charged: true) },
            owner: owner, now: t0)
        _ = try store.complete(
            try claim(store, .deliver).map { AttemptCompletion(order: $0, records: [record()], resolution: .escalate(Reason(.endpointHTTP(.delivery, 422))), charged: true) },
            owner: owner, now: t0)
    }

    @Test("hold then release keeps an order escalated during delivery resuming at verified: retry delivers, never re-verifies")
    func holdReleaseDeliveryEscalation() throws {
        let store = try fixture.open()
        try deliveryEscalated(store, "D1")
        #expect(try store.order(id: "D1")?.resumeState == .verified)
        #expect(try act(store, .hold, "D1") == .applied(from: .escalated, to: .held))
        #expect(try store.order(id: "D1")?.resumeState == .escalated)
        #expect(try act(store, .release, "D1") == .applied(from: .held, to: .escalated))
        let released = try #require(try store.order(id: "D1"))
        #expect(released.resumeState == .verified)
        #expect(released.reason == "delivery_http_422")
        #expect(try act(store, .retry, "D1") == .applied(from: .escalated, to: .verified))
        #expect(try store.order(id: "D1")?.nextAttemptAt == t0 + 10)
    }

    @Test("a duplicate_transaction escalation still needs --force after a hold and a release")
    func holdReleaseDuplicate() throws {
        let store = try fixture.open()
        _ = try store.ingest([candidate("A1"), candidate("B2")], verifierKind: .apple, now: t0)
        let items = [AppleReceiptItem(productID: "gems", transactionID: "1000")]
        _ = try store.complete(
            try claim(store).map { AttemptCompletion(order: $0, records: [record()], resolution: .match(items: items, environment: "Production", finishes: true), charged: true) },
            owner: owner, now: t0)
        #expect(try store.order(id: "B2")?.reason == "duplicate_transaction")
        #expect(try act(store, .hold, "B2") == .applied(from: .escalated, to: .held))
        #expect(try store.order(id: "B2")?.reason == "hold")
        #expect(try act(store, .release, "B2") == .applied(from: .held, to: .escalated))
        #expect(try store.order(id: "B2")?.reason == "duplicate_transaction")
        guard case .refused(let why)? = try act(store, .retry, "B2") else {
            Issue.record("a retry without --force went through")
            return
        }
        #expect(why.contains("transaction 1000 is claimed by order A1"))
        #expect(try act(store, .retry, "B2", force: true) == .applied(from: .escalated, to: .pending))
    }

    @Test("proof that revives a held order's state replaces what was kept aside for its release")
    func proofWhileHeld() throws {
        let store = try fixture.open()
        try deliveryEscalated(store, "D1")
        #expect(try act(store, .hold, "D1") == .applied(from: .escalated, to: .held))
        _ = try store.ingest([candidate("D1", receipt: "TkVX")], verifierKind: .apple, now: t0 + 20)
        #expect(try store.order(id: "D1")?.state == .held)
        #expect(try store.order(id: "D1")?.resumeState == .pending)
        #expect(try act(store, .release, "D1", at: t0 + 30) == .applied(from: .held, to: .pending))
        let released = try #require(try store.order(id: "D1"))
        #expect(released.resumeState == nil)
        #expect(released.reason == "proof_replaced")
        #expect(released.nextAttemptAt == t0 + 30)
    }

    @Test("one action waits per attempt in flight: a second is refused naming the first, which is applied when the attempt ends")
    func oneDeferredAction() throws {
        let store = try fixture.open()
        _ = try store.ingest([candidate("A1")], verifierKind: .apple, now: t0)
        let order = try #require(try claim(store).first)
        #expect(try act(store, .hold, "A1", by: alice, note: "fraud check") == .deferred(state: .verifying))
        guard case .refused(let why)? = try act(store, .resolve, "A1", by: bob, note: "granted by hand") else {
            Issue.record("a second deferred action was accepted")
            return
        }
        #expect(why == "an earlier hold by operator:alice waits for the attempt in flight to end; try again once it has")
        let results = try store.complete(
            [AttemptCompletion(order: order, records: [record()], resolution: .retry(at: t0 + 100, reason: Reason(.apple(21005))), charged: true)],
            owner: owner, now: t0 + 20)
        // The scheduler learns that the operator, not the answer, decided where the order went.
        #expect(results.first?.to == .held)
        #expect(results.first?.appliedAction == .hold)
        #expect(results.first?.appliedBy == alice)
        let held = try #require(try store.order(id: "A1"))
        #expect(held.state == .held)
        #expect(try store.history(orderID: "A1").last?.actor == alice)
        #expect(try store.history(orderID: "A1").last?.detail == "fraud check")
        #expect(try act(store, .resolve, "A1", by: bob, note: "granted by hand") == .applied(from: .held, to: .finished))
    }
}
