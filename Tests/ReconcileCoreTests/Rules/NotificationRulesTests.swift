import Foundation
import Testing
@testable import ReconcileCore
import ReconcileFoundation

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
        for (type, reason) in [("REFUND", ReasonCode.refunded), ("REVOKE", .revoked)] {
            let (plan, outcome) = try NotificationRules.apply(notification(type), to: F.record(.finished), now: F.now, lookups: FixedLookups())
            #expect(outcome == .applied(orderID: "A1", from: .finished, to: .revoked))
            let written = try #require(plan)
            #expect(written.record.state == .revoked && written.record.reason == reason && written.record.nextAttemptAt == nil)
            let transition = try #require(written.transitions.only)
            #expect(transition.actor == .daemon && transition.from == .finished && transition.to == .revoked)
            #expect(transition.reason == Reason(
                reason, detail: "App Store \(type), transaction 500, revoked at 2027-01-15T08:00:00Z, store's reason 1, notification n-1 (poll)"))
            let notice = try #require(written.outbox.only)
            #expect(notice.kind == .revocationNotice && notice.endpoint == .revocation && notice.idempotencyKey == "A1:revoked:n-1")
            #expect(notice.nextAttemptAt == F.now && notice.state == .pending)
            let body = try JSONParser().parse(Array(notice.payload.utf8))
            #expect(body["event"]?.stringValue == "revoked" && body["order_id"]?.stringValue == "A1" && body["reason"]?.stringValue == reason.rawValue)
            #expect(body["transaction_id"]?.stringValue == "500" && body["revoked_at"]?.stringValue == "2027-01-15T08:00:00Z")
            #expect(body["store"]?.stringValue == "app_store" && body["quantity"]?.int64Value == 1 && body["environment"]?.stringValue == "Production")
            #expect(body["sequence"]?.int64Value == 1 && body["event_time"]?.stringValue == "2027-01-15T08:00:00.000Z", "no signed time: the revocation time")
        }
    }

    @Test("an event's key comes from the store event (unique across restores); its sequence grows with the order's notices; its event_time is the store's")
    func keysAndSequence() throws {
        let earlier = OutboxAction(
            reference: 3, orderReference: 7, orderID: "A1", kind: .revocationNotice, endpoint: .revocation, idempotencyKey: "A1:revoked:n-0",
            payload: #"{"event":"revoked"}"#, state: .done, createdAt: F.t0, updatedAt: F.t0)
        let lookups = FixedLookups(actions: [earlier])
        var refund = notification("REFUND")
        refund.notificationID = "n-2"
        refund.signedAt = F.t0.addingTimeInterval(1.5)
        let (again, _) = try NotificationRules.apply(refund, to: F.record(.finished), now: F.now, lookups: lookups)
        let revoked = try #require(again?.outbox.only)
        #expect(revoked.idempotencyKey == "A1:revoked:n-2")
        let revokedBody = try JSONParser().parse(Array(revoked.payload.utf8))
        #expect(revokedBody["sequence"]?.int64Value == 2 && revokedBody["event_time"]?.stringValue == "2027-01-15T08:00:01.500Z")
        let (back, _) = try NotificationRules.apply(notification("REFUND_REVERSED"), to: F.record(.revoked), now: F.now, lookups: lookups)
        let notice = try #require(back?.outbox.only)
        #expect(notice.idempotencyKey == "A1:reinstated:n-1")
        let body = try JSONParser().parse(Array(notice.payload.utf8))
        #expect(body["event"]?.stringValue == "reinstated" && body["revoked_at"] == .null && body["reason"]?.stringValue == "refund_reversed")
        #expect(body["sequence"]?.int64Value == 2)
        // A refund of an order never delivered owes the merchant nothing.
        let (rejected, _) = try NotificationRules.apply(notification("REFUND"), to: F.record(.pending), now: F.now, lookups: lookups)
        #expect(rejected?.outbox.isEmpty == true)
        // An id with bytes a header cannot carry is percent-encoded, never cut.
        #expect(NotificationRules.keySafe("a b\r\n%é-1.2:3_x") == "a%20b%0D%0A%25%C3%A9-1.2:3_x")
    }

    @Test("a new notice supersedes the order's notices not sent yet or given up on; one in flight or sent is left to finish")
    func supersedes() throws {
        func notice(_ reference: Int64, _ state: OutboxState, leased: Bool = false) -> OutboxAction {
            OutboxAction(
                reference: reference, orderReference: 7, orderID: "A1", kind: .revocationNotice, endpoint: .revocation,
                idempotencyKey: "A1:x:\(reference)", payload: #"{"event":"reinstated"}"#, state: state,
                lease: leased ? OutboxAction.Lease(owner: F.owner, until: F.now) : nil, createdAt: F.t0, updatedAt: F.t0)
        }
        let lookups = FixedLookups(actions: [notice(1, .done), notice(2, .escalated), notice(3, .pending, leased: true), notice(4, .pending)])
        let (plan, _) = try NotificationRules.apply(notification("REFUND"), to: F.record(.finished), now: F.now, lookups: lookups)
        let written = try #require(plan)
        #expect(written.outboxUpdates.map(\.reference) == [2, 4])
        #expect(written.outboxUpdates.allSatisfy { $0.state == .skipped && $0.reason == .superseded && $0.nextAttemptAt == nil })
        #expect(written.outboxUpdates.first?.detail == "superseded by A1:revoked:n-1: the merchant is told the latest word only")
        let body = try JSONParser().parse(Array(try #require(written.outbox.only).payload.utf8))
        #expect(body["sequence"]?.int64Value == 5)
    }

    @Test("a refund of an order a delivery request went out for tells the merchant `revoked` (delivery is at least once); without one, nothing")
    func refundAfterDeliveryRequest() throws {
        let charged = F.record(.verified)
        var delivered = charged
        delivered.deliveryAttempts = 2
        let (plan, outcome) = try NotificationRules.apply(notification("REFUND"), to: delivered, now: F.now, lookups: FixedLookups())
        #expect(outcome == .applied(orderID: "A1", from: .verified, to: .rejected) && plan?.record.reason == .refunded)
        #expect(plan?.outbox.only?.idempotencyKey == "A1:revoked:n-1")
        // A probe is not charged, but its request went: the history says so.
        let probed = FixedLookups(deliveryRequests: [charged.reference])
        #expect(try NotificationRules.apply(notification("REFUND"), to: charged, now: F.now, lookups: probed).plan?.outbox.count == 1)
        #expect(try NotificationRules.apply(notification("REFUND"), to: charged, now: F.now, lookups: FixedLookups()).plan?.outbox.isEmpty == true)
    }

    @Test("a reversal revives an order rejected `refunded` before delivery: verified (to deliver) with a grant, else pending, due now; `reinstated` follows a `revoked`")
    func reversalRevives() throws {
        var granted = F.record(.rejected)
        granted.reason = .refunded
        granted.grant = Grant(transactionID: "500")
        let (plan, outcome) = try NotificationRules.apply(notification("REFUND_REVERSED"), to: granted, now: F.now, lookups: FixedLookups())
        #expect(outcome == .applied(orderID: "A1", from: .rejected, to: .verified))
        #expect(plan?.record.nextAttemptAt == F.now && plan?.record.reason == .refundReversed && plan?.outbox.isEmpty == true)
        var unverified = granted
        unverified.grant = nil
        let (pending, _) = try NotificationRules.apply(notification("REFUND_REVERSED"), to: unverified, now: F.now, lookups: FixedLookups())
        #expect(pending?.record.state == .pending && pending?.record.nextAttemptAt == F.now)
        // The merchant heard `revoked` (a delivery request had gone out): it now hears `reinstated`.
        let told = OutboxAction(
            reference: 3, orderReference: granted.reference, orderID: "A1", kind: .revocationNotice, endpoint: .revocation,
            idempotencyKey: "A1:revoked:n-0", payload: #"{"event":"revoked"}"#, state: .done, createdAt: F.t0, updatedAt: F.t0)
        let (back, _) = try NotificationRules.apply(notification("REFUND_REVERSED"), to: granted, now: F.now, lookups: FixedLookups(actions: [told]))
        #expect(back?.outbox.only?.idempotencyKey == "A1:reinstated:n-1")
        // Rejected for another reason: a reversal changes nothing.
        var other = granted
        other.reason = .noMatchingPurchase
        #expect(try NotificationRules.apply(notification("REFUND_REVERSED"), to: other, now: F.now, lookups: FixedLookups()).outcome
            == .noChange(orderID: "A1", state: .rejected))
    }

    @Test("every order naming an unclaimed transaction is changed; one in flight makes the notification wait and changes none")
    func everyOrder() throws {
        var first = F.record(.pending)
        first.reference = 1
        var second = F.record(.finished, id: "A2")
        second.reference = 2
        let (plans, outcome, reference) = try NotificationRules.apply(notification("REFUND"), toEvery: [first, second], now: F.now, lookups: FixedLookups())
        #expect(plans.map(\.record.state) == [.rejected, .revoked] && outcome == .applied(orderID: "A1", from: .pending, to: .rejected) && reference == 1)
        #expect(plans.last?.outbox.only?.idempotencyKey == "A2:revoked:n-1")
        var leased = F.record(.verifying, id: "A2", leased: true)
        leased.reference = 2
        let (none, waits, on) = try NotificationRules.apply(notification("REFUND"), toEvery: [first, leased], now: F.now, lookups: FixedLookups())
        #expect(none.isEmpty && waits == .waitsForAttempt(orderID: "A2") && on == 2)
    }

    @Test("orders not delivered yet end rejected `refunded`; rejected, expired and cancelled ones stay; an attempt in flight makes it wait")
    func notFinished() throws {
        for state in [OrderState.waiting, .pending, .verified, .escalated, .held] {
            let (plan, outcome) = try NotificationRules.apply(notification("REFUND"), to: F.record(state, resume: state == .held ? .pending : nil), now: F.now, lookups: FixedLookups())
            #expect(outcome == .applied(orderID: "A1", from: state, to: .rejected), "\(state)")
            #expect(plan?.record.reason == .refunded && plan?.record.resumeState == nil && plan?.record.nextAttemptAt == nil, "\(state)")
        }
        for state in [OrderState.rejected, .expired, .cancelled, .revoked] {
            let (plan, outcome) = try NotificationRules.apply(notification("REFUND"), to: F.record(state), now: F.now, lookups: FixedLookups())
            #expect(outcome == .noChange(orderID: "A1", state: state), "\(state)")
            #expect(plan?.changesRecord == false && plan?.transitions.only?.reason.code == .notificationIgnored(.refunded), "\(state)")
        }
        let (plan, outcome) = try NotificationRules.apply(notification("REFUND"), to: F.record(.verifying, leased: true), now: F.now, lookups: FixedLookups())
        #expect(plan == nil && outcome == .waitsForAttempt(orderID: "A1"))
    }

    @Test("a reversal finishes a revoked order again; of an order never revoked it is recorded and changes nothing")
    func reversal() throws {
        let (plan, outcome) = try NotificationRules.apply(notification("REFUND_REVERSED"), to: F.record(.revoked), now: F.now, lookups: FixedLookups())
        #expect(outcome == .applied(orderID: "A1", from: .revoked, to: .finished) && plan?.record.reason == .refundReversed)
        let (ignored, unchanged) = try NotificationRules.apply(notification("REFUND_REVERSED"), to: F.record(.finished), now: F.now, lookups: FixedLookups())
        #expect(unchanged == .noChange(orderID: "A1", state: .finished) && ignored?.transitions.only?.reason.code == .notificationIgnored(.refundReversed))
        #expect(ignored?.changesRecord == false)
    }

    @Test("the store's time decides: a refund whose reversal, signed later, came first changes nothing; a late reversal does not undo a later refund")
    func storeTimeDecides() throws {
        var refund = notification("REFUND")
        refund.signedAt = F.t0
        let later = FixedLookups(storeEvents: ["500": [("REFUND_REVERSED", F.t0.addingTimeInterval(60))]])
        let (plan, outcome) = try NotificationRules.apply(refund, to: F.record(.finished), now: F.now, lookups: later)
        #expect(outcome == .noChange(orderID: "A1", state: .finished))
        #expect(plan?.changesRecord == false && plan?.outbox.isEmpty == true && plan?.transitions.only?.reason.code == .revocationReversedBefore(.refunded))
        let earlier = FixedLookups(storeEvents: ["500": [("REFUND_REVERSED", F.t0.addingTimeInterval(-60))]])
        let (_, again) = try NotificationRules.apply(refund, to: F.record(.finished), now: F.now, lookups: earlier)
        #expect(again == .applied(orderID: "A1", from: .finished, to: .revoked))
        // REFUND (t1) revoked it, REFUND (t3) was taken in, then a late REFUND_REVERSED (t2).
        var reversal = notification("REFUND_REVERSED")
        reversal.signedAt = F.t0.addingTimeInterval(2)
        let refunds = FixedLookups(storeEvents: ["500": [("REFUND", F.t0.addingTimeInterval(1)), ("REFUND", F.t0.addingTimeInterval(3))]])
        let (stale, kept) = try NotificationRules.apply(reversal, to: F.record(.revoked), now: F.now, lookups: refunds)
        #expect(kept == .noChange(orderID: "A1", state: .revoked))
        #expect(stale?.outbox.isEmpty == true && stale?.transitions.only?.reason.code == .notificationSuperseded(.refundReversed))
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
