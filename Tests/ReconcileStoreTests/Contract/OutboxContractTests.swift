import Foundation
import ReconcileCore
import Testing
import TestSupport
@testable import ReconcileStore
@testable import ReconcilePostgreSQL

/// The outbox's behaviour every store owes (DESIGN §5a), through the protocol alone: a Google
/// Play order that finishes owes one acknowledgement, written with the order's change; it is
/// leased by one sender at a time, completed only under its lease, and a lease left by a stopped
/// start is handed back. Runs against each store in ``ContractStore/all``.
@Suite("Store contract: the outbox", .postgreSQLTurn)
struct OutboxContractTests {
    let owner = "node-a/1:x"
    static let t0 = Date(timeIntervalSince1970: 1_800_000_000)
    var t0: Date { Self.t0 }
    let followUp = PlayFollowUp(acknowledge: true, consume: false, packageName: "com.example.app")

    func playCandidate(_ orderID: String) -> IngestCandidate {
        let text = OrderFixtures.orderJSON(
            orderID, product: "gems", receipt: nil, extra: #""purchase_token":"tok-\#(orderID)","package_name":"com.example.app""#)
        let bytes = Array(text.utf8)
        return IngestCandidate(submission: try! OrderFileParser().parse(bytes), raw: bytes, contentHash: "test:" + text, fileName: "\(orderID).json")
    }

    /// Ingests Play order `orderID` and finishes it as Google verified it, unacknowledged.
    func finishPlayOrder(_ store: any OrderStore, _ orderID: String) throws {
        let verifiers = ConfiguredVerifiers(kind: nil, googlePlay: true)
        #expect(try store.ingest([playCandidate(orderID)], verifiers: verifiers, now: t0) == [.accepted(.pending)])
        let claimed = try #require(try store.claimDue(.verifyPlay, now: t0, limit: 10, owner: owner, leaseUntil: t0 + 120, charge: true).first)
        let grant = Grant(
            transactionID: "GPA.\(orderID)", productID: "gems", quantity: 1, purchaseDateMilliseconds: Int64(t0.timeIntervalSince1970 * 1000),
            environment: "Production", acknowledgementState: 0, consumptionState: 0)
        let record = AttemptRecord(endpoint: .googlePlay, httpStatus: 200, latency: .milliseconds(9), outcome: .answered, startedAt: t0)
        let result = try store.complete(
            [AttemptCompletion(
                order: claimed, records: [record], resolution: .verified(grant, finishes: true, finishedBy: .verifier), charged: true,
                playFollowUp: followUp)],
            owner: owner, now: t0 + 1)
        #expect(result.first?.to == .finished)
    }

    func claimActions(_ store: any OrderStore, owner: String? = nil, at time: Date? = nil) throws -> [ClaimedAction] {
        let time = time ?? t0 + 2
        return try store.claimActions(endpoint: .googlePlay, now: time, limit: 10, owner: owner ?? self.owner, leaseUntil: time + 120, charge: true)
    }

    @Test("a finished Play order owes one acknowledgement, due at once; one lease at a time; done under its lease, then nothing is owed", arguments: ContractStore.all)
    func acknowledgement(_ kind: ContractStore) async throws {
        let opened = try await kind.open()
        defer { opened.close() }
        let store = opened.store
        try finishPlayOrder(store, "P1")
        let owed = try store.actions(orderID: "P1")
        #expect(owed.map(\.kind) == [.playAcknowledge] && owed.first?.state == .pending && owed.first?.nextAttemptAt == t0 + 1)
        #expect(try store.outboxSummary().pending == 1)
        #expect(try store.nextActionDueTime(endpoint: .googlePlay) == t0 + 1)

        let leased = try claimActions(store)
        #expect(leased.map(\.action.orderID) == ["P1"] && leased.first?.proof.purchaseToken == "tok-P1")
        #expect(try claimActions(store, owner: "node-b/2:y").isEmpty, "a leased action is not leased again")
        #expect(try store.nextActionDueTime(endpoint: .googlePlay) == nil)

        // Another owner's completion is refused; the lease holder's is applied.
        let action = try #require(leased.first)
        let foreign = try store.completeActions([OutboxCompletion(claimed: action, resolution: .done(Reason(.acknowledged)), charged: true)], owner: "node-b/2:y", now: t0 + 3)
        #expect(foreign.first?.applied == false)
        let done = try store.completeActions([OutboxCompletion(claimed: action, resolution: .done(Reason(.acknowledged)), charged: true)], owner: owner, now: t0 + 3)
        #expect(done.first?.applied == true && done.first?.state == .done)
        #expect(try store.actions(orderID: "P1").map(\.state) == [.done])
        #expect(try store.outboxSummary().pending == 0)
        #expect(try claimActions(store, at: t0 + 1000).isEmpty)
    }

    @Test("retry of a finished order sends its escalated follow-up again: due now, attempts from zero, the order still finished, the retry in its history; with nothing escalated it is refused", arguments: ContractStore.all)
    func retryEscalatedAction(_ kind: ContractStore) async throws {
        let opened = try await kind.open()
        defer { opened.close() }
        let store = opened.store
        try finishPlayOrder(store, "P3")
        let request = OperatorRequest(action: .retry, target: .orders(["P3"]), actor: .operator("alice"), note: "Play is back")
        let early = try store.apply(request, verifiers: nil, now: t0 + 2)
        #expect(early.first?.result == .refused("cannot retry: the order is finished, and no follow-up of it is escalated"))
        #expect(try store.actions(orderID: "P3").first?.state == .pending, "a refused retry changed the action")

        let leased = try #require(try claimActions(store).first)
        let escalation = OutboxCompletion(claimed: leased, resolution: .escalate(Reason(.maxAttempts)), charged: true)
        #expect(try store.completeActions([escalation], owner: owner, now: t0 + 3).first?.state == .escalated)
        #expect(try claimActions(store, at: t0 + 1000).isEmpty)

        let outcome = try store.apply(request, verifiers: nil, now: t0 + 10)
        #expect(outcome.first?.result == .applied(from: .finished, to: .finished))
        let action = try #require(try store.actions(orderID: "P3").first)
        #expect(action.state == .pending && action.attempts == 0 && action.nextAttemptAt == t0 + 10 && action.lease == nil)
        #expect(try store.order(id: "P3")?.state == .finished)
        let last = try #require(try store.history(orderID: "P3").last)
        #expect(last.reason == "retry_actions" && last.actor == .operator("alice") && last.detail == "play_acknowledge sent again; Play is back")
        let again = try claimActions(store, at: t0 + 11)
        #expect(again.map(\.action.idempotencyKey) == [leased.action.idempotencyKey], "the same Idempotency-Key")
        #expect(again.first?.action.attempts == 1)
    }

    @Test("a start hands back the actions its earlier start had leased: due again, the same Idempotency-Key", arguments: ContractStore.all)
    func releasedAtStart(_ kind: ContractStore) async throws {
        let opened = try await kind.open()
        defer { opened.close() }
        let store = opened.store
        try finishPlayOrder(store, "P2")
        // Leased by an earlier start of this node (a shared store releases only its node's).
        let earlier = (store as? any SharedOrderStore).map { "\($0.node)/earlier-start" } ?? owner
        let key = try #require(try claimActions(store, owner: earlier).first?.action.idempotencyKey)
        _ = try store.releaseLeases(now: t0 + 5)
        let again = try claimActions(store, at: t0 + 6)
        #expect(again.map(\.action.idempotencyKey) == [key])
        #expect(again.first?.action.attempts == 2, "each lease counted an attempt")
    }

    @Test("a shared store: an action whose node died is rescued by another once its lease ends, and the heartbeat says when that is")
    func rescuedOnSharedStore() async throws {
        guard PostgreSQLTestServer.isEnabled else { return }
        let opened = try await ContractStore.postgres.open()
        defer { opened.close() }
        let dead = try #require(opened.store as? PostgreSQLOrderStore)
        let database = try #require(opened.keepAlive as? PostgreSQLTestDatabase)
        let alive = try await offPool { try database.openStore(node: "alive") }
        defer { alive.close() }
        try finishPlayOrder(dead, "P3")
        let leased = try #require(try claimActions(dead, owner: dead.leaseOwner).first)
        let view = try alive.heartbeat(NodeReport(inFlight: 0, circuits: [:], startedAt: t0, version: "test"), liveWithin: .seconds(60))
        let leaseEnd = try #require(view.nextForeignLeaseEnd, "the action's lease is a foreign lease to wake for")
        #expect(abs(leaseEnd.timeIntervalSince(view.databaseNow) - 120) < 60)
        #expect(try alive.rescueExpiredLeases(limit: 10).isEmpty && claimActions(alive, owner: alive.leaseOwner).isEmpty, "not before its lease ends")
        try database.connect().run(
            "UPDATE outbox SET leased_until = (extract(epoch FROM clock_timestamp()) * 1000)::bigint - 1000 WHERE lease_owner IS NOT NULL")
        _ = try alive.rescueExpiredLeases(limit: 10)
        let rescued = try claimActions(alive, owner: alive.leaseOwner, at: Date().addingTimeInterval(1))
        #expect(rescued.map(\.action.idempotencyKey) == [leased.action.idempotencyKey])
        // The dead node's late completion is refused.
        let late = try dead.completeActions([OutboxCompletion(claimed: leased, resolution: .done(Reason(.acknowledged)), charged: true)], owner: dead.leaseOwner, now: t0 + 200)
        #expect(late.first?.applied == false)
    }
}
