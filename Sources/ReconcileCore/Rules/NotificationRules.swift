import Foundation
import ReconcileFoundation

/// What a verified store notification does to the order it is about (DESIGN §4, §5a): a
/// refund or revocation of a finished order revokes it, a reversed refund finishes it again, a
/// refund of an order not yet delivered ends it rejected `refunded`; everything else is recorded.
/// An order whose attempt is in flight waits: the notification is applied once the attempt has
/// ended (its completion is guarded by the lease, and must not be overtaken). A revocation or
/// reinstatement of a finished order owes the merchant an event (`[Revocation] URL=`): an outbox
/// action written with the change, keyed by the store event's identity, numbered in the order's
/// sequence and superseding the order's notices not sent yet. The store's time decides: an event
/// older than one taken in already about the same transaction changes nothing. A reversed refund
/// revives an order rejected `refunded` before delivery. A `CONSUMPTION_REQUEST` changes no order;
/// answering it is ``ConsumptionRules``'.
public enum NotificationRules {
    /// What happened to the notification.
    public enum Outcome: Sendable, Hashable {
        /// The order moved.
        case applied(orderID: String, from: OrderState, to: OrderState)
        /// The order is where the notification would put it, or the notification cannot move it
        /// (a refund of a rejected order): recorded in its history.
        case noChange(orderID: String, state: OrderState)
        /// The order's attempt is in flight: applied when it ends.
        case waitsForAttempt(orderID: String)
        /// A type that changes no order (`TEST`, `CONSUMPTION_REQUEST` with answering off, …).
        case recorded
        /// No order holds its transaction.
        case unmatched

        /// How the store records it (`notifications.outcome`).
        public var code: String {
            switch self {
            case .applied: "applied"
            case .noChange: "no_change"
            case .waitsForAttempt: "waiting"
            case .recorded: "recorded"
            case .unmatched: "unmatched"
            }
        }

        public var orderID: String? {
            switch self {
            case .applied(let orderID, _, _), .noChange(let orderID, _), .waitsForAttempt(let orderID): orderID
            case .recorded, .unmatched: nil
            }
        }
    }

    /// What a notification does to every order it matches (`records`: the holder of the claim on
    /// its transaction, else every order naming the transaction, oldest first — none of them is
    /// the one "meant" more than another): one plan per order, the outcome the notification is
    /// recorded with (an order it moved, if any) and the order it is recorded against. An order
    /// whose attempt is in flight makes it wait for that attempt, and none is changed before.
    /// A notification that changes no order (a `CONSUMPTION_REQUEST`) is about the first alone.
    public static func apply(
        _ notification: StoreNotification, toEvery records: [OrderRecord], now: Date, lookups: some RuleLookups,
        consumption: ConsumptionPolicy = .off
    ) throws -> (plans: [OrderPlan], outcome: Outcome, orderReference: Int64?) {
        let changesOrders = notification.effect != StoreNotification.Effect.none
        if changesOrders, let leased = records.first(where: { $0.lease != nil }) {
            return ([], .waitsForAttempt(orderID: leased.orderID), leased.reference)
        }
        guard changesOrders, records.count > 1 else {
            let (plan, outcome) = try apply(notification, to: records.first, now: now, lookups: lookups, consumption: consumption)
            return (plan.map { [$0] } ?? [], outcome, records.first?.reference)
        }
        var plans: [OrderPlan] = []
        var outcomes: [Outcome] = []
        for record in records {
            let (plan, outcome) = try apply(notification, to: record, now: now, lookups: lookups, consumption: consumption)
            if let plan { plans.append(plan) }
            outcomes.append(outcome)
        }
        let primary = outcomes.firstIndex { if case .applied = $0 { true } else { false } } ?? 0
        return (plans, outcomes[primary], records[primary].reference)
    }

    /// The plan for the order `record` (`nil`: no order holds the transaction) and the outcome.
    /// A `CONSUMPTION_REQUEST` is answered as `consumption` says (``ConsumptionRules``).
    public static func apply(
        _ notification: StoreNotification, to record: OrderRecord?, now: Date, lookups: some RuleLookups,
        consumption: ConsumptionPolicy = .off
    ) throws -> (plan: OrderPlan?, outcome: Outcome) {
        let event: OrderEvent
        let reason: ReasonCode
        switch notification.effect {
        case .none:
            guard ConsumptionRules.isRequest(notification) else { return (nil, .recorded) }
            return ConsumptionRules.apply(notification, to: record, policy: consumption, now: now)
        case .revoke(let code):
            event = .revocationConfirmed
            reason = code
        case .reinstate:
            event = .refundReversed
            reason = .refundReversed
        }
        guard let record else { return (nil, .unmatched) }
        if record.lease != nil { return (nil, .waitsForAttempt(orderID: record.orderID)) }
        let detail = Self.detail(notification)
        // Recorded in the order's history; nothing else changes.
        func unchanged(_ recorded: Reason) -> (plan: OrderPlan?, outcome: Outcome) {
            let transition = PlannedTransition(at: now, actor: .daemon, from: record.state, to: record.state, reason: recorded)
            return (.historyOnly(record, [transition]), .noChange(orderID: record.orderID, state: record.state))
        }
        // Files are read in name order, polls overlap and web handlers retry: the store's own
        // time of the event decides, not its arrival. The latest store event about a transaction
        // decides; an earlier one that arrives after it changes nothing.
        if let signedAt = notification.signedAt, let transactionID = NotificationMatching.transactionID(of: notification),
            let later = try lookups.laterStoreEvent(transactionID: transactionID, signedAfter: signedAt)
        {
            if event == .revocationConfirmed && later == AppStoreNotification.refundReversed {
                return unchanged(Reason(.revocationReversedBefore(reason), detail: Reason.joined("a reversal the store signed later came first", detail)))
            }
            return unchanged(Reason(.notificationSuperseded(reason), detail: Reason.joined("a later \(later) the store signed came first", detail)))
        }
        let next: OrderState
        // A reversed refund of an order that ended rejected `refunded` before it was delivered:
        // the customer paid after all. Back to where its proof allows — `verified` to be
        // delivered when verification granted it, else `pending` to be verified — due now.
        let revives = event == .refundReversed && record.state == .rejected && record.reason == .refunded
        if revives {
            next = record.grant != nil ? .verified : .pending
        } else {
            // A reversal of an order that was never revoked, a refund of one that was never
            // granted: recorded, nothing changes.
            guard case .moveTo(let moved)? = try? OrderLifecycle.next(from: record.state, on: event) else {
                return unchanged(Reason(.notificationIgnored(reason), detail: detail))
            }
            next = moved
        }
        var after = record
        after.state = next
        after.updatedAt = now
        after.nextAttemptAt = revives ? now : nil
        after.resumeState = nil
        after.heldResumeState = nil
        after.heldReason = nil
        // An order not delivered yet ends rejected `refunded`, whatever the store called it.
        after.reason = next == .rejected ? .refunded : reason
        let transition = PlannedTransition(
            at: now, actor: .daemon, from: record.state, to: next, reason: Reason(after.reason ?? reason, detail: detail))
        var plan = OrderPlan(record: after, transitions: [transition])
        let notices = try lookups.revocationNotices(orderReference: record.reference)
        let merchantEvent: String?
        if next == .revoked {
            merchantEvent = "revoked"
        } else if next == .rejected {
            // Delivery is at least once: an order any delivery request went out for may have
            // been granted by the merchant, who must hear that the money went back.
            let mayBeGranted = try record.deliveryAttempts > 0 || lookups.deliveryRequested(orderReference: record.reference)
            merchantEvent = mayBeGranted ? "revoked" : nil
        } else if record.state == .revoked || (revives && notices.last?.payloadText("event") == "revoked") {
            merchantEvent = "reinstated"
        } else {
            merchantEvent = nil
        }
        if let merchantEvent {
            let notice = revocationNotice(
                event: merchantEvent, sequence: notices.count + 1, reason: reason, for: after, notification, now: now)
            // The merchant's last word must be the latest: an earlier notice not yet sent (or
            // given up on) is superseded by this one; one in flight is waited for (the outbox
            // sends an order's notices one at a time, in order).
            plan.outboxUpdates = notices.filter { ($0.state == .pending && $0.lease == nil) || $0.state == .escalated }.map {
                OutboxRules.supersede($0, by: notice.idempotencyKey, now: now)
            }
            plan.outbox = [notice]
        }
        return (plan, .applied(orderID: record.orderID, from: record.state, to: next))
    }

    /// The merchant's event (DESIGN §5a): the body `[Revocation] URL=` receives, as the action's
    /// payload; due at once. Its idempotency key `<order_id>:<event>:<notification id>` comes from
    /// the store event's own identity, so it is unique across restores of the store; `sequence`
    /// counts the order's notices (it grows with each) and `event_time` is the store's time of
    /// the event, by which a receiver orders what it is told.
    static func revocationNotice(
        event: String, sequence: Int, reason: ReasonCode, for record: OrderRecord, _ notification: StoreNotification, now: Date
    ) -> OutboxAction {
        let grant = record.grant
        let eventTime = notification.signedAt ?? notification.revokedAt ?? now
        let body = JSONObject([
            "event": .string(event), "order_id": .string(record.orderID), "product_id": .string(record.productID),
            "transaction_id": .string(orNull: grant?.transactionID ?? notification.transactionID),
            "store": .string(PurchaseStore(record.proof).rawValue), "quantity": .integer(grant?.quantity ?? 1), "reason": .string(reason.rawValue),
            "revoked_at": event == "revoked" ? .string(orNull: notification.revokedAt.map(RFC3339.format)) : .null,
            "environment": .string(orNull: notification.environment ?? grant?.environment), "user_id": .string(orNull: record.userID),
            "application_username": .string(orNull: record.applicationUsername), "sequence": .integer(sequence),
            "event_time": .string(RFC3339.formatWithMilliseconds(eventTime)),
        ])
        return OutboxAction(
            orderReference: record.reference, orderID: record.orderID, kind: .revocationNotice, endpoint: .revocation,
            idempotencyKey: "\(record.orderID):\(event):\(keySafe(notification.notificationID))", payload: JSONWriter.string(.object(body)),
            nextAttemptAt: now, createdAt: now, updatedAt: now, reason: .queued, detail: "the merchant is told the order was \(event)")
    }

    /// A store's notification id as it may stand in an HTTP header: letters, digits and `.:_-`
    /// as they are, every other byte percent-encoded (so two ids never meet in one key).
    static func keySafe(_ id: String) -> String {
        var out = ""
        for byte in id.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "."), UInt8(ascii: ":"), UInt8(ascii: "_"), UInt8(ascii: "-"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                out += String(format: "%%%02X", byte)
            }
        }
        return out
    }

    /// The history's detail: the store, the notification, the store's revocation time and reason.
    static func detail(_ notification: StoreNotification) -> String {
        var parts = ["\(notification.source == .appStore ? "App Store" : "Google Play") \(notification.type)"]
        if let id = notification.transactionID { parts.append("transaction \(id)") }
        if let revokedAt = notification.revokedAt { parts.append("revoked at \(RFC3339.format(revokedAt))") }
        if let reason = notification.revocationReason { parts.append("store's reason \(reason)") }
        parts.append("notification \(notification.notificationID) (\(notification.via.rawValue))")
        return parts.joined(separator: ", ")
    }
}
