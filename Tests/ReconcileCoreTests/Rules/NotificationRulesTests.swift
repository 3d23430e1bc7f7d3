import Foundation
import Testing
@testable import ReconcileCore

@Suite("Notification rules (what a store notification does to an order, without a store)")
struct NotificationRulesTests {
    typealias F = RuleFixtures

    func notification(_ type: String, transaction: String? = "500") -> StoreNotification {
        StoreNotification(
            source: .appStore, notificationID: "n-1", type: type, transactionID: transaction, environment: "Production",
            revokedAt: F.t0, revocationReason: 1, via: .poll)
    }

    @Test("a refund or revocation of a finished order revokes it with the store's reason and time in its history")
    func revokes() throws {
        for (type, reason) in [("REFUND", "refunded"), ("REVOKE", "revoked")] {
            let (plan, outcome) = try NotificationRules.apply(notification(type), to: F.record(.finished), now: F.now, lookups: FixedLookups())
            #expect(outcome == .applied(orderID: "A1", from: .finished, to: .revoked))
            let written = try #require(plan)
            #expect(written.record.state == .revoked && written.record.reason == reason && written.record.nextAttemptAt == nil)
            let transition = try #require(written.transitions.only)
            #expect(transition.actor == .daemon && transition.from == .finished && transition.to == .revoked)
            #expect(transition.reason == Reason(
                reason, detail: "App Store \(type), transaction 500, revoked at 2027-01-15T08:00:00Z, store's reason 1, notification n-1 (poll)"))
            let notice = try #require(written.outbox.only)
            #expect(notice.kind == .revocationNotice && notice.endpoint == .revocation && notice.idempotencyKey == "A1:revoked:1")
            #expect(notice.nextAttemptAt == F.now && notice.state == .pending)
            let body = try JSONParser().parse(Array(notice.payload.utf8))
            #expect(body["event"]?.stringValue == "revoked" && body["order_id"]?.stringValue == "A1" && body["reason"]?.stringValue == reason)
            #expect(body["transaction_id"]?.stringValue == "500" && body["revoked_at"]?.stringValue == "2027-01-15T08:00:00Z")
            #expect(body["store"]?.stringValue == "app_store" && body["quantity"]?.int64Value == 1 && body["environment"]?.stringValue == "Production")
        }
    }

    @Test("each event of an order gets its own key: the n-th revocation is <order>:revoked:<n>; a reinstatement is <order>:reinstated:<n>")
    func eventNumbers() throws {
        let earlier = OutboxAction(
            reference: 3, orderReference: 7, orderID: "A1", kind: .revocationNotice, endpoint: .revocation, idempotencyKey: "A1:revoked:1",
            payload: "{}", state: .done, createdAt: F.t0, updatedAt: F.t0)
        let lookups = FixedLookups(actions: [earlier])
        let (again, _) = try NotificationRules.apply(notification("REFUND"), to: F.record(.finished), now: F.now, lookups: lookups)
        #expect(again?.outbox.only?.idempotencyKey == "A1:revoked:2")
        let (back, _) = try NotificationRules.apply(notification("REFUND_REVERSED"), to: F.record(.revoked), now: F.now, lookups: lookups)
        let notice = try #require(back?.outbox.only)
        #expect(notice.idempotencyKey == "A1:reinstated:1")
        let body = try JSONParser().parse(Array(notice.payload.utf8))
        #expect(body["event"]?.stringValue == "reinstated" && body["revoked_at"] == .null && body["reason"]?.stringValue == "refund_reversed")
        // A refund of an order never delivered owes the merchant nothing.
        let (rejected, _) = try NotificationRules.apply(notification("REFUND"), to: F.record(.pending), now: F.now, lookups: lookups)
        #expect(rejected?.outbox.isEmpty == true)
    }

    @Test("orders not delivered yet end rejected `refunded`; rejected, expired and cancelled ones stay; an attempt in flight makes it wait")
    func notFinished() throws {
        for state in [OrderState.waiting, .pending, .verified, .escalated, .held] {
            let (plan, outcome) = try NotificationRules.apply(notification("REFUND"), to: F.record(state, resume: state == .held ? .pending : nil), now: F.now, lookups: FixedLookups())
            #expect(outcome == .applied(orderID: "A1", from: state, to: .rejected), "\(state)")
            #expect(plan?.record.reason == "refunded" && plan?.record.resumeState == nil && plan?.record.nextAttemptAt == nil, "\(state)")
        }
        for state in [OrderState.rejected, .expired, .cancelled, .revoked] {
            let (plan, outcome) = try NotificationRules.apply(notification("REFUND"), to: F.record(state), now: F.now, lookups: FixedLookups())
            #expect(outcome == .noChange(orderID: "A1", state: state), "\(state)")
            #expect(plan?.changesRecord == false && plan?.transitions.only?.reason.code == "refunded_ignored", "\(state)")
        }
        let (plan, outcome) = try NotificationRules.apply(notification("REFUND"), to: F.record(.verifying, leased: true), now: F.now, lookups: FixedLookups())
        #expect(plan == nil && outcome == .waitsForAttempt(orderID: "A1"))
    }

    @Test("a reversal finishes a revoked order again; of an order never revoked it is recorded and changes nothing")
    func reversal() throws {
        let (plan, outcome) = try NotificationRules.apply(notification("REFUND_REVERSED"), to: F.record(.revoked), now: F.now, lookups: FixedLookups())
        #expect(outcome == .applied(orderID: "A1", from: .revoked, to: .finished) && plan?.record.reason == "refund_reversed")
        let (ignored, unchanged) = try NotificationRules.apply(notification("REFUND_REVERSED"), to: F.record(.finished), now: F.now, lookups: FixedLookups())
        #expect(unchanged == .noChange(orderID: "A1", state: .finished) && ignored?.transitions.only?.reason.code == "refund_reversed_ignored")
        #expect(ignored?.changesRecord == false)
    }

    @Test("a refund whose reversal, signed later, came first changes nothing; an earlier reversal does not stop a later refund")
    func reversalFirst() throws {
        var refund = notification("REFUND")
        refund.signedAt = F.t0
        let later = FixedLookups(reversals: ["500": [F.t0.addingTimeInterval(60)]])
        let (plan, outcome) = try NotificationRules.apply(refund, to: F.record(.finished), now: F.now, lookups: later)
        #expect(outcome == .noChange(orderID: "A1", state: .finished))
        #expect(plan?.changesRecord == false && plan?.outbox.isEmpty == true && plan?.transitions.only?.reason.code == "refunded_reversed_before")
        let earlier = FixedLookups(reversals: ["500": [F.t0.addingTimeInterval(-60)]])
        let (_, again) = try NotificationRules.apply(refund, to: F.record(.finished), now: F.now, lookups: earlier)
        #expect(again == .applied(orderID: "A1", from: .finished, to: .revoked))
    }

    @Test("types that change no order are recorded; a refund for no order is unmatched")
    func recordedAndUnmatched() throws {
        for type in ["TEST", "CONSUMPTION_REQUEST", "REFUND_DECLINED", "ONE_TIME_CHARGE"] {
            #expect(try NotificationRules.apply(notification(type), to: F.record(.finished), now: F.now, lookups: FixedLookups()) == (nil, .recorded), "\(type)")
        }
        #expect(try NotificationRules.apply(notification("REFUND"), to: nil, now: F.now, lookups: FixedLookups()) == (nil, .unmatched))
        // Matched by the transaction; the original only when the transaction is not named.
        var family = notification("REVOKE", transaction: "900")
        family.originalTransactionID = "500"
        #expect(NotificationMatching.transactionID(of: family) == "900")
        family.transactionID = nil
        #expect(NotificationMatching.transactionID(of: family) == "500")
    }
}
