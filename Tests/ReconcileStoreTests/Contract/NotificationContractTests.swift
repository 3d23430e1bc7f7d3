import Foundation
import ReconcileCore
import Testing
import TestSupport

/// Store notifications as every store owes them (DESIGN §4, §5a), through the protocol alone:
/// taken in once by id, matched by the claim on their transaction (or, before verification, by
/// the order's proof), applied with the order's change in one transaction, waiting while an
/// attempt is in flight. Runs against each store in ``ContractStore/all``.
@Suite("Store contract: notifications", .postgreSQLTurn)
struct NotificationContractTests {
    let owner = "node-a:1:x"
    static let t0 = Date(timeIntervalSince1970: 1_800_000_000)
    var t0: Date { Self.t0 }

    func candidate(_ orderID: String, transactionID: String? = nil) -> IngestCandidate {
        let text = OrderFixtures.orderJSON(orderID, product: "gems", receipt: transactionID == nil ? "QUJD" : nil, transactionID: transactionID)
        let bytes = Array(text.utf8)
        return IngestCandidate(submission: try! OrderFileParser().parse(bytes), raw: bytes, contentHash: "test:" + text, fileName: "\(orderID).json")
    }

    func notification(_ id: String, _ type: String, transaction: String?, revokedAt: Date? = nil) -> StoreNotification {
        StoreNotification(
            source: .appStore, notificationID: id, type: type, transactionID: transaction, productID: "gems", environment: "Production",
            signedAt: t0, revokedAt: revokedAt, revocationReason: revokedAt == nil ? nil : 0, via: .file)
    }

    /// Finishes `orderID` by matching transaction `transactionID` (which it then claims).
    func finish(_ store: any OrderStore, _ orderID: String, transactionID: String) throws {
        _ = try store.ingest([candidate(orderID)], verifierKind: .apple, now: t0)
        let claimed = try #require(try store.claimDue(.verify, now: t0, limit: 10, owner: owner, leaseUntil: t0 + 120, charge: true).first { $0.orderID == orderID })
        let items = [AppleReceiptItem(productID: "gems", transactionID: transactionID, originalTransactionID: transactionID, purchaseDateMilliseconds: 1)]
        let record = AttemptRecord(endpoint: .production, httpStatus: 200, latency: .milliseconds(9), outcome: .answered, startedAt: t0)
        let result = try store.complete(
            [AttemptCompletion(order: claimed, records: [record], resolution: .match(items: items, environment: "Production", finishes: true), charged: true)],
            owner: owner, now: t0 + 1)
        #expect(result.first?.to == .finished)
    }

    @Test("a refund revokes the finished order holding its transaction, once; the reversal finishes it again; history carries the store's time", arguments: ContractStore.all)
    func refundAndReversal(_ kind: ContractStore) async throws {
        let opened = try await kind.open()
        defer { opened.close() }
        let store = opened.store
        try finish(store, "F1", transactionID: "500")
        let before = try store.history(orderID: "F1").count
        let refund = notification("n-1", "REFUND", transaction: "500", revokedAt: t0 + 5)
        #expect(try store.ingestNotifications([refund], now: t0 + 10) == [.taken(.applied(orderID: "F1", from: .finished, to: .revoked))])
        #expect(try store.order(id: "F1")?.state == .revoked && store.order(id: "F1")?.reason == "refunded")
        let revoked = try #require(try store.history(orderID: "F1").last)
        #expect(revoked.reason == "refunded" && revoked.from == .finished && revoked.to == .revoked && revoked.actor == .daemon)
        #expect(revoked.detail?.contains("revoked at 2027-01-15T08:00:05Z") == true, "\(revoked.detail ?? "")")
        // The same notification again (a retry, or found by polling): nothing more.
        #expect(try store.ingestNotifications([refund], now: t0 + 11) == [.duplicate])
        #expect(try store.history(orderID: "F1").count == before + 1)
        let reversal = notification("n-2", "REFUND_REVERSED", transaction: "500")
        #expect(try store.ingestNotifications([reversal], now: t0 + 20) == [.taken(.applied(orderID: "F1", from: .revoked, to: .finished))])
        #expect(try store.order(id: "F1")?.state == .finished && store.order(id: "F1")?.reason == "refund_reversed")
        let listed = try store.notifications(orderID: "F1")
        #expect(listed.map(\.notification.notificationID) == ["n-1", "n-2"] && listed.map(\.outcome) == ["applied", "applied"])
        #expect(listed.first?.notification.revokedAt == t0 + 5 && listed.first?.orderID == "F1")
        // The merchant is owed one event per change, written with it.
        let notices = try store.actions(orderID: "F1").filter { $0.kind == .revocationNotice }
        #expect(notices.map(\.idempotencyKey) == ["F1:revoked:n-1", "F1:reinstated:n-2"] && notices.allSatisfy { $0.endpoint == .revocation })
    }

    @Test("a reversal taken in before the refund it reverses (files read in name order): the order stays finished, nothing is owed the merchant", arguments: ContractStore.all)
    func reversalBeforeRefund(_ kind: ContractStore) async throws {
        let opened = try await kind.open()
        defer { opened.close() }
        let store = opened.store
        try finish(store, "F2", transactionID: "600")
        var refund = notification("n-1", "REFUND", transaction: "600", revokedAt: t0 + 5)
        refund.signedAt = t0 + 5
        var reversal = notification("n-2", "REFUND_REVERSED", transaction: "600")
        reversal.signedAt = t0 + 50
        #expect(try store.ingestNotifications([reversal], now: t0 + 60) == [.taken(.noChange(orderID: "F2", state: .finished))])
        #expect(try store.ingestNotifications([refund], now: t0 + 61) == [.taken(.noChange(orderID: "F2", state: .finished))])
        #expect(try store.order(id: "F2")?.state == .finished)
        #expect(try store.history(orderID: "F2").suffix(2).map(\.reason) == ["refund_reversed_ignored", "refunded_reversed_before"])
        #expect(try store.actions(orderID: "F2").isEmpty, "the merchant was told of a refund the store had reversed")
    }

    @Test("a refund of an order not yet verified ends it rejected `refunded`; one for nobody is unmatched and listed; a TEST is recorded", arguments: ContractStore.all)
    func pendingUnmatchedAndTest(_ kind: ContractStore) async throws {
        let opened = try await kind.open()
        defer { opened.close() }
        let store = opened.store
        _ = try store.ingest([candidate("P1", transactionID: "700")], verifierKind: .appstore, now: t0)
        let outcomes = try store.ingestNotifications(
            [
                notification("n-1", "REFUND", transaction: "700"), notification("n-2", "REFUND", transaction: "999"),
                notification("n-3", "TEST", transaction: nil),
            ], now: t0 + 1)
        #expect(outcomes == [.taken(.applied(orderID: "P1", from: .pending, to: .rejected)), .taken(.unmatched), .taken(.recorded)])
        let order = try #require(try store.order(id: "P1"))
        #expect(order.state == .rejected && order.reason == "refunded" && order.nextAttemptAt == nil)
        #expect(try store.claimDue(.verify, now: t0 + 100, limit: 10, owner: owner, leaseUntil: t0 + 200, charge: true).isEmpty)
        #expect(try store.notifications(unmatchedOnly: true, limit: 10).map(\.notification.notificationID) == ["n-2"])
        // Which were taken in: by id, of that source only (a redelivered Pub/Sub message is only acknowledged).
        #expect(try store.takenInNotifications(["n-1", "n-3", "n-9"], source: .appStore) == ["n-1", "n-3"])
        #expect(try store.takenInNotifications(["n-1"], source: .googlePlay).isEmpty)
        #expect(try store.notifications(unmatchedOnly: false, limit: 10).map(\.outcome) == ["applied", "unmatched", "recorded"].reversed())
    }

    @Test("a Google Play voided purchase finds an order not verified yet by its token (no claim yet): rejected `refunded`; an unknown token is unmatched; the token is never kept", arguments: ContractStore.all)
    func playVoidedByToken(_ kind: ContractStore) async throws {
        let opened = try await kind.open()
        defer { opened.close() }
        let store = opened.store
        let bytes = Array(#"{"order_id":"G1","product_id":"gems","purchase_token":"play-token-G1"}"#.utf8)
        let play = IngestCandidate(submission: try OrderFileParser().parse(bytes), raw: bytes, contentHash: "test:G1", fileName: "G1.json")
        _ = try store.ingest([play], verifiers: ConfiguredVerifiers(kind: nil, googlePlay: true), now: t0)
        #expect(try store.order(id: "G1")?.state == .pending)
        let voided = StoreNotification.playVoided(
            PlayVoidedPurchase(purchaseToken: "play-token-G1", orderID: "GPA.1", voidedTimeMilliseconds: 1_800_000_000_000, voidedSource: 0, voidedReason: 1),
            tokenDigest: "digest-G1", via: .poll)
        let stranger = StoreNotification.playVoided(
            PlayVoidedPurchase(purchaseToken: "play-token-other", orderID: "GPA.2", voidedTimeMilliseconds: 1_800_000_000_000),
            tokenDigest: "digest-other", via: .poll)
        #expect(try store.ingestNotifications([voided, stranger], now: t0 + 10) == [
            .taken(.applied(orderID: "G1", from: .pending, to: .rejected)), .taken(.unmatched),
        ])
        #expect(try store.order(id: "G1")?.reason == "refunded")
        let kept = try store.notifications(orderID: "G1")
        #expect(kept.map(\.notification.notificationID) == ["voided:digest-G1:1800000000000"] && kept.first?.notification.purchaseToken == nil)
        #expect(kept.first?.notification.transactionID == "google:GPA.1" && kept.first?.notification.subtype == "USER")
    }

    @Test("a refund that waited for the verification is applied in the commit that ends it, before that turn's delivery claim: the refunded order is never leased for delivery", arguments: ContractStore.all)
    func appliedBeforeDeliveryClaim(_ kind: ContractStore) async throws {
        let opened = try await kind.open()
        defer { opened.close() }
        let store = opened.store
        _ = try store.ingest([candidate("D1", transactionID: "810")], verifierKind: .appstore, now: t0)
        let claimed = try #require(try store.claimDue(.verify, now: t0, limit: 10, owner: owner, leaseUntil: t0 + 120, charge: true).first)
        #expect(try store.ingestNotifications([notification("n-1", "REFUND", transaction: "810")], now: t0 + 1) == [.taken(.waitsForAttempt(orderID: "D1"))])
        let record = AttemptRecord(endpoint: .production, httpStatus: 200, latency: .milliseconds(9), outcome: .answered, startedAt: t0)
        // Verified, to be delivered; the same turn claims due deliveries.
        let turn = try store.commit(
            [AttemptCompletion(
                order: claimed, records: [record], resolution: .verified(Grant(transactionID: "810"), finishes: false, finishedBy: .verifier),
                charged: true)],
            claims: [ClaimRequest(kind: .deliver, limit: 10, charge: true, leaseUntil: t0 + 200)], owner: owner, now: t0 + 2)
        #expect(turn.notifications == [.applied(orderID: "D1", from: .verified, to: .rejected)])
        #expect(turn.claimed == [[]], "the refunded order was leased for delivery")
        #expect(try store.order(id: "D1")?.state == .rejected && store.order(id: "D1")?.reason == "refunded")
        #expect(try store.notifications(orderID: "D1").map(\.outcome) == ["applied"])
    }

    @Test("a CONSUMPTION_REQUEST with answering on queues one answer with a history row in the same transaction, the order unchanged; a repeat queues nothing; one for nobody is unmatched; off records it only", arguments: ContractStore.all)
    func consumptionRequest(_ kind: ContractStore) async throws {
        let opened = try await kind.open()
        defer { opened.close() }
        let store = opened.store
        try finish(store, "F1", transactionID: "500")
        let policy = ConsumptionPolicy(answer: true, customerConsented: true, sampleContentProvided: false, refundPreference: .decline)
        let request = notification("c-1", "CONSUMPTION_REQUEST", transaction: "500")
        #expect(try store.ingestNotifications([request], consumption: policy, now: t0 + 10) == [.taken(.noChange(orderID: "F1", state: .finished))])
        #expect(try store.order(id: "F1")?.state == .finished)
        #expect(try store.history(orderID: "F1").last?.reason == "consumption_answer_queued")
        let action = try #require(try store.actions(orderID: "F1").first)
        #expect(try store.actions(orderID: "F1").count == 1)
        #expect(action.kind == .consumptionAnswer && action.endpoint == .production && action.idempotencyKey == "F1:consumption:c-1")
        #expect(action.deadline == t0 + 12 * 3600 && action.state == .pending)
        // Due at once, for the production API's sender.
        let claimed = try store.claimActions(endpoint: .production, now: t0 + 11, limit: 10, owner: owner, leaseUntil: t0 + 100, charge: true)
        #expect(claimed.map(\.action.idempotencyKey) == ["F1:consumption:c-1"])
        #expect(try store.ingestNotifications([request], consumption: policy, now: t0 + 12) == [.duplicate])
        #expect(try store.actions(orderID: "F1").count == 1)
        #expect(try store.ingestNotifications([notification("c-2", "CONSUMPTION_REQUEST", transaction: "999")], consumption: policy, now: t0 + 13)
            == [.taken(.unmatched)])
        #expect(try store.ingestNotifications([notification("c-3", "CONSUMPTION_REQUEST", transaction: "500")], now: t0 + 14) == [.taken(.recorded)])
        #expect(try store.actions(orderID: "F1").count == 1)
    }

    @Test("an order whose attempt is in flight: the refund waits, and applies when the attempt ends", arguments: ContractStore.all)
    func waitsForAttempt(_ kind: ContractStore) async throws {
        let opened = try await kind.open()
        defer { opened.close() }
        let store = opened.store
        _ = try store.ingest([candidate("V1", transactionID: "800")], verifierKind: .appstore, now: t0)
        let claimed = try #require(try store.claimDue(.verify, now: t0, limit: 10, owner: owner, leaseUntil: t0 + 120, charge: true).first)
        #expect(try store.ingestNotifications([notification("n-1", "REFUND", transaction: "800")], now: t0 + 1) == [.taken(.waitsForAttempt(orderID: "V1"))])
        #expect(try store.order(id: "V1")?.state == .verifying)
        #expect(try store.applyWaitingNotifications(now: t0 + 2).isEmpty, "applied while the attempt was in flight")
        let record = AttemptRecord(endpoint: .production, httpStatus: 503, latency: .milliseconds(9), outcome: .transient, startedAt: t0)
        _ = try store.complete(
            [AttemptCompletion(order: claimed, records: [record], resolution: .retry(at: t0 + 60, reason: Reason(.http(503))), charged: true)],
            owner: owner, now: t0 + 3)
        // Applied in the commit that ended the attempt: nothing is left waiting.
        #expect(try store.order(id: "V1")?.state == .rejected)
        #expect(try store.applyWaitingNotifications(now: t0 + 4).isEmpty)

        // An attempt that never ended (the daemon died): its lease released at the next start,
        // the refund that waited is applied then.
        _ = try store.ingest([candidate("V2", transactionID: "801")], verifierKind: .appstore, now: t0 + 5)
        // Leased by an earlier start of this node (a shared store releases only its node's).
        let earlier = (store as? any SharedOrderStore).map { "\($0.node)/earlier-start" } ?? owner
        _ = try store.claimDue(.verify, now: t0 + 6, limit: 10, owner: earlier, leaseUntil: t0 + 120, charge: true)
        #expect(try store.ingestNotifications([notification("n-2", "REFUND", transaction: "801")], now: t0 + 7) == [.taken(.waitsForAttempt(orderID: "V2"))])
        _ = try store.releaseLeases(now: t0 + 8)
        #expect(try store.applyWaitingNotifications(now: t0 + 9) == [.applied(orderID: "V2", from: .pending, to: .rejected)])
        #expect(try store.applyWaitingNotifications(now: t0 + 10).isEmpty)
        #expect(try store.notifications(orderID: "V1").map(\.outcome) == ["applied"])
    }
}
