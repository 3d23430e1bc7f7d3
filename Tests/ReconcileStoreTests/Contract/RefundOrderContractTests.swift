import Foundation
import ReconcileCore
import Testing
import TestSupport
import ReconcileFoundation

/// Refunds, reversals and the merchant's notices in the order the store meant them (DESIGN §5a;
/// the money-path audit of issue 23, items 4–8, 10 and 12), through the protocol alone: the
/// store's time decides, notices are sent one at a time per order and a newer one supersedes what
/// was not sent, a refund finds every order naming an unclaimed transaction, a refund after a
/// delivery request tells the merchant, a reversal revives, a refund that came first is applied
/// when its order takes the transaction, and keys come from the store event. Runs against each
/// store in ``ContractStore/all``.
@Suite("Store contract: refunds in the store's order", .postgreSQLTurn)
struct RefundOrderContractTests {
    let owner = "node-a:1:x"
    static let t0 = Date(timeIntervalSince1970: 1_800_000_000)
    var t0: Date { Self.t0 }
    let answered = AttemptRecord(endpoint: .production, httpStatus: 200, latency: .milliseconds(9), outcome: .answered, startedAt: t0)

    func candidate(_ orderID: String, transactionID: String? = nil) -> IngestCandidate {
        let text = OrderFixtures.orderJSON(orderID, product: "gems", receipt: transactionID == nil ? "QUJD" : nil, transactionID: transactionID)
        let bytes = Array(text.utf8)
        return IngestCandidate(submission: try! OrderFileParser().parse(bytes), raw: bytes, contentHash: "test:" + text, fileName: "\(orderID).json")
    }

    /// A store event about `transaction`, signed at `t0 + signed` seconds.
    func event(_ id: String, _ type: String, transaction: String, signed: TimeInterval) -> StoreNotification {
        StoreNotification(
            source: .appStore, notificationID: id, type: type, transactionID: transaction, productID: "gems", environment: "Production",
            signedAt: t0 + signed, revokedAt: type == "REFUND_REVERSED" ? nil : t0 + signed, revocationReason: 0, via: .file)
    }

    /// Finishes `orderID` by matching transaction `transactionID` in a receipt (it claims it).
    @discardableResult
    func finish(_ store: any OrderStore, _ orderID: String, transactionID: String, at time: Date? = nil) throws -> TurnResult {
        let time = time ?? t0
        _ = try store.ingest([candidate(orderID)], verifierKind: .apple, now: time)
        let claimed = try #require(try store.claimDue(.verify, now: time, limit: 10, owner: owner, leaseUntil: time + 120, charge: true).first { $0.orderID == orderID })
        let items = [AppleReceiptItem(productID: "gems", transactionID: transactionID, originalTransactionID: transactionID, purchaseDateMilliseconds: 1)]
        let turn = try store.commit(
            [AttemptCompletion(order: claimed, records: [answered], resolution: .match(items: items, environment: "Production", finishes: true), charged: true)],
            claims: [], owner: owner, now: time + 1)
        #expect(turn.results.first?.to == .finished)
        return turn
    }

    func notices(_ store: any OrderStore, _ orderID: String) throws -> [OutboxAction] {
        try store.actions(orderID: orderID).filter { $0.kind == .revocationNotice }
    }

    func claimNotices(_ store: any OrderStore, at time: Date) throws -> [ClaimedAction] {
        try store.claimActions(endpoint: .revocation, now: time, limit: 10, owner: owner, leaseUntil: time + 120, charge: true)
    }

    func event(of action: OutboxAction) -> String? { action.payloadText("event") }

    @Test("item 4: the latest store event decides — REFUND (t1), REFUND (t3), then a late REFUND_REVERSED (t2) leaves the order revoked, the merchant told once", arguments: ContractStore.all)
    func lateReversal(_ kind: ContractStore) async throws {
        let opened = try await kind.open()
        defer { opened.close() }
        let store = opened.store
        try finish(store, "F1", transactionID: "500")
        #expect(try store.ingestNotifications([event("r-1", "REFUND", transaction: "500", signed: 10)], now: t0 + 100)
            == [.taken(.applied(orderID: "F1", from: .finished, to: .revoked))])
        #expect(try store.ingestNotifications([event("r-3", "REFUND", transaction: "500", signed: 30)], now: t0 + 101)
            == [.taken(.noChange(orderID: "F1", state: .revoked))])
        #expect(try store.ingestNotifications([event("rr-2", "REFUND_REVERSED", transaction: "500", signed: 20)], now: t0 + 102)
            == [.taken(.noChange(orderID: "F1", state: .revoked))])
        #expect(try store.order(id: "F1")?.state == .revoked)
        #expect(try store.history(orderID: "F1").last?.reason == "refund_reversed_superseded")
        #expect(try notices(store, "F1").map(\.idempotencyKey) == ["F1:revoked:r-1"])
        // A reversal the store signed after every refund does reinstate it.
        #expect(try store.ingestNotifications([event("rr-4", "REFUND_REVERSED", transaction: "500", signed: 40)], now: t0 + 103)
            == [.taken(.applied(orderID: "F1", from: .revoked, to: .finished))])
    }

    @Test("item 5 and 12: an order's notices go one at a time in order; a newer one supersedes one not sent; keys come from the store event; sequence and event_time in the body", arguments: ContractStore.all)
    func noticesInOrder(_ kind: ContractStore) async throws {
        let opened = try await kind.open()
        defer { opened.close() }
        let store = opened.store
        try finish(store, "F1", transactionID: "500")
        _ = try store.ingestNotifications([event("r-1", "REFUND", transaction: "500", signed: 10)], now: t0 + 100)
        let first = try claimNotices(store, at: t0 + 101)
        #expect(first.map(\.action.idempotencyKey) == ["F1:revoked:r-1"])
        // While `revoked` is in flight, the reversal's `reinstated` is recorded and waits for it.
        _ = try store.ingestNotifications([event("rr-2", "REFUND_REVERSED", transaction: "500", signed: 20)], now: t0 + 102)
        #expect(try claimNotices(store, at: t0 + 103).isEmpty, "a later notice was sent while an earlier one was in flight")
        // The merchant answered 503: `revoked` is sent again before `reinstated`.
        let retry = OutboxCompletion(claimed: try #require(first.first), resolution: .retry(at: t0 + 110, reason: Reason(.http(503))), charged: true)
        _ = try store.completeActions([retry], owner: owner, now: t0 + 104)
        #expect(try store.nextActionDueTime(endpoint: .revocation) == t0 + 110, "the waiting notice's due time hid the earlier one's")
        let again = try claimNotices(store, at: t0 + 111)
        #expect(again.map(\.action.idempotencyKey) == ["F1:revoked:r-1"])
        _ = try store.completeActions([OutboxCompletion(claimed: try #require(again.first), resolution: .done(Reason(.delivered)), charged: true)], owner: owner, now: t0 + 112)
        let second = try claimNotices(store, at: t0 + 113)
        #expect(second.map(\.action.idempotencyKey) == ["F1:reinstated:rr-2"])
        let body = try JSONParser().parse(Array(try #require(second.first).action.payload.utf8))
        #expect(body["sequence"]?.int64Value == 2 && body["event_time"]?.stringValue == "2027-01-15T08:00:20.000Z")
        _ = try store.completeActions([OutboxCompletion(claimed: try #require(second.first), resolution: .retry(at: t0 + 200, reason: Reason(.http(503))), charged: true)], owner: owner, now: t0 + 114)
        // A third event while `reinstated` waits (not in flight): it is superseded, never sent after.
        _ = try store.ingestNotifications([event("r-3", "REFUND", transaction: "500", signed: 30)], now: t0 + 115)
        let all = try notices(store, "F1")
        #expect(all.map(\.idempotencyKey) == ["F1:revoked:r-1", "F1:reinstated:rr-2", "F1:revoked:r-3"])
        #expect(all.map(\.state) == [.done, .skipped, .pending] && all[1].reason == .superseded)
        #expect(try claimNotices(store, at: t0 + 116).map(\.action.idempotencyKey) == ["F1:revoked:r-3"])
        #expect(try store.order(id: "F1")?.state == .revoked)
    }

    @Test("item 6: without a claim, a refund reaches every order naming the transaction — the granted one is revoked and the merchant told", arguments: ContractStore.all)
    func everyOrderNamingIt(_ kind: ContractStore) async throws {
        let opened = try await kind.open()
        defer { opened.close() }
        let store = opened.store
        _ = try store.ingest([candidate("E1", transactionID: "900")], verifierKind: .appstore, now: t0)
        _ = try store.ingest([candidate("E2", transactionID: "900")], verifierKind: .appstore, now: t0)
        let claimed = try store.claimDue(.verify, now: t0, limit: 10, owner: owner, leaseUntil: t0 + 120, charge: true)
        let first = try #require(claimed.first { $0.orderID == "E1" })
        let second = try #require(claimed.first { $0.orderID == "E2" })
        // E1's verification failed for now; E2 was granted (the App Store Server API: no claim).
        _ = try store.complete(
            [
                AttemptCompletion(order: first, records: [answered], resolution: .retry(at: t0 + 3600, reason: Reason(.http(503))), charged: true),
                AttemptCompletion(order: second, records: [answered], resolution: .verified(Grant(transactionID: "900"), finishes: true, finishedBy: .verifier), charged: true),
            ], owner: owner, now: t0 + 1)
        #expect(try store.order(id: "E2")?.state == .finished)
        let outcomes = try store.ingestNotifications([event("r-1", "REFUND", transaction: "900", signed: 10)], now: t0 + 10)
        #expect(outcomes == [.taken(.applied(orderID: "E1", from: .pending, to: .rejected))])
        #expect(try store.order(id: "E1")?.state == .rejected)
        #expect(try store.order(id: "E2")?.state == .revoked, "the granted order stayed finished")
        #expect(try notices(store, "E2").map(\.idempotencyKey) == ["E2:revoked:r-1"])
        #expect(try notices(store, "E1").isEmpty)
    }

    @Test("item 7 and 8: a refund of a verified order a delivery request went out for tells the merchant `revoked`; the reversal revives it to be delivered and says `reinstated`", arguments: ContractStore.all)
    func refundAfterDeliveryRequest(_ kind: ContractStore) async throws {
        let opened = try await kind.open()
        defer { opened.close() }
        let store = opened.store
        _ = try store.ingest([candidate("V1", transactionID: "700")], verifierKind: .appstore, now: t0)
        let verifying = try #require(try store.claimDue(.verify, now: t0, limit: 10, owner: owner, leaseUntil: t0 + 120, charge: true).first)
        _ = try store.complete(
            [AttemptCompletion(order: verifying, records: [answered], resolution: .verified(Grant(transactionID: "700"), finishes: false, finishedBy: .verifier), charged: true)],
            owner: owner, now: t0 + 1)
        // The delivery request timed out at the daemon (the merchant may have granted it).
        let delivering = try #require(try store.claimDue(.deliver, now: t0 + 2, limit: 10, owner: owner, leaseUntil: t0 + 120, charge: true).first)
        let timedOut = AttemptRecord(endpoint: .delivery, httpStatus: nil, latency: .seconds(10), outcome: .transient, startedAt: t0 + 2)
        _ = try store.complete(
            [AttemptCompletion(order: delivering, records: [timedOut], resolution: .retry(at: t0 + 60, reason: Reason(.timeout)), charged: true)],
            owner: owner, now: t0 + 12)
        #expect(try store.ingestNotifications([event("r-1", "REFUND", transaction: "700", signed: 20)], now: t0 + 20)
            == [.taken(.applied(orderID: "V1", from: .verified, to: .rejected))])
        #expect(try store.order(id: "V1")?.reason == "refunded")
        #expect(try notices(store, "V1").map(event(of:)) == ["revoked"])
        #expect(try store.ingestNotifications([event("rr-2", "REFUND_REVERSED", transaction: "700", signed: 30)], now: t0 + 30)
            == [.taken(.applied(orderID: "V1", from: .rejected, to: .verified))])
        let revived = try #require(try store.order(id: "V1"))
        #expect(revived.nextAttemptAt == t0 + 30 && revived.reason == "refund_reversed")
        #expect(try notices(store, "V1").map(event(of:)) == ["revoked", "reinstated"])
        #expect(try store.claimDue(.deliver, now: t0 + 31, limit: 10, owner: owner, leaseUntil: t0 + 150, charge: true).map(\.orderID) == ["V1"])
    }

    @Test("item 10: a refund that came before its order is applied when the order claims the transaction, in the commit that claims it", arguments: ContractStore.all)
    func refundBeforeOrder(_ kind: ContractStore) async throws {
        let opened = try await kind.open()
        defer { opened.close() }
        let store = opened.store
        #expect(try store.ingestNotifications([event("r-1", "REFUND", transaction: "950", signed: 5)], now: t0) == [.taken(.unmatched)])
        let turn = try finish(store, "L1", transactionID: "950", at: t0 + 10)
        #expect(turn.notifications == [.applied(orderID: "L1", from: .finished, to: .revoked)])
        #expect(try store.order(id: "L1")?.state == .revoked)
        #expect(try notices(store, "L1").map(\.idempotencyKey) == ["L1:revoked:r-1"])
        #expect(try store.notifications(unmatchedOnly: true, limit: 10).isEmpty)
        #expect(try store.notifications(orderID: "L1").map(\.outcome) == ["applied"])
        // An order granted without a claim (the App Store Server API) takes it in too.
        #expect(try store.ingestNotifications([event("r-2", "REFUND", transaction: "960", signed: 5)], now: t0) == [.taken(.unmatched)])
        _ = try store.ingest([candidate("L2", transactionID: "960")], verifierKind: .appstore, now: t0 + 20)
        let claimed = try #require(try store.claimDue(.verify, now: t0 + 20, limit: 10, owner: owner, leaseUntil: t0 + 120, charge: true).first)
        let granted = try store.commit(
            [AttemptCompletion(order: claimed, records: [answered], resolution: .verified(Grant(transactionID: "960"), finishes: true, finishedBy: .verifier), charged: true)],
            claims: [], owner: owner, now: t0 + 21)
        #expect(granted.notifications == [.applied(orderID: "L2", from: .finished, to: .revoked)])
        // An operator's `resolve --transaction-id` claims it too.
        #expect(try store.ingestNotifications([event("r-3", "REFUND", transaction: "970", signed: 5)], now: t0) == [.taken(.unmatched)])
        _ = try store.ingest([candidate("L3")], verifierKind: .apple, now: t0 + 30)
        let resolve = OperatorRequest(action: .resolve, target: .orders(["L3"]), actor: .operator("alice"), note: "paid by hand", transactionID: "970")
        #expect(try store.apply(resolve, verifierKind: .apple, now: t0 + 31).map(\.result) == [.applied(from: .pending, to: .finished)])
        #expect(try store.order(id: "L3")?.state == .revoked)
        #expect(try notices(store, "L3").map(\.idempotencyKey) == ["L3:revoked:r-3"])
    }
}
