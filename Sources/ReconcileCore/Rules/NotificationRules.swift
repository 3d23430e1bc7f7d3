import Foundation

/// What a verified store notification does to the order it is about (DESIGN §4, §5a): a
/// refund or revocation of a finished order revokes it, a reversed refund finishes it again, a
/// refund of an order not yet delivered ends it rejected `refunded`; everything else is recorded.
/// An order whose attempt is in flight waits: the notification is applied once the attempt has
/// ended (its completion is guarded by the lease, and must not be overtaken). A revocation or
/// reinstatement of a finished order owes the merchant an event (`[Revocation] URL=`): an outbox
/// action written with the change, whose idempotency key `<order_id>:<event>:<n>` counts the
/// order's events of that kind. A `CONSUMPTION_REQUEST` changes no order; answering it is
/// ``ConsumptionRules``'.
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

    /// The plan for the order `record` (`nil`: no order holds the transaction) and the outcome.
    /// A `CONSUMPTION_REQUEST` is answered as `consumption` says (``ConsumptionRules``).
    public static func apply(
        _ notification: StoreNotification, to record: OrderRecord?, now: Date, lookups: some RuleLookups,
        consumption: ConsumptionPolicy = .off
    ) throws -> (plan: OrderPlan?, outcome: Outcome) {
        let event: OrderEvent
        let reason: String
        switch notification.effect {
        case .none:
            guard ConsumptionRules.isRequest(notification) else { return (nil, .recorded) }
            return ConsumptionRules.apply(notification, to: record, policy: consumption, now: now)
        case .revoke(let code):
            event = .revocationConfirmed
            reason = code
        case .reinstate:
            event = .refundReversed
            reason = "refund_reversed"
        }
        guard let record else { return (nil, .unmatched) }
        if record.lease != nil { return (nil, .waitsForAttempt(orderID: record.orderID)) }
        let detail = Self.detail(notification)
        // Recorded in the order's history; nothing else changes.
        func unchanged(_ recorded: Reason) -> (plan: OrderPlan?, outcome: Outcome) {
            let transition = PlannedTransition(at: now, actor: .daemon, from: record.state, to: record.state, reason: recorded)
            return (.historyOnly(record, [transition]), .noChange(orderID: record.orderID, state: record.state))
        }
        // Files are read in name order and polls overlap: a reversal may come before the refund
        // it reverses. The refund then changes nothing (the store has taken it back already).
        if event == .revocationConfirmed, let signedAt = notification.signedAt,
            let transactionID = NotificationMatching.transactionID(of: notification),
            try lookups.reversalTaken(transactionID: transactionID, signedAfter: signedAt)
        {
            return unchanged(Reason("\(reason)_reversed_before", detail: Reason.joined("a reversal the store signed later came first", detail)))
        }
        // A reversal of an order that was never revoked, a refund of one that was never granted:
        // recorded, nothing changes.
        guard case .moveTo(let next)? = try? OrderLifecycle.next(from: record.state, on: event) else {
            return unchanged(Reason("\(reason)_ignored", detail: detail))
        }
        var after = record
        after.state = next
        after.updatedAt = now
        after.nextAttemptAt = nil
        after.resumeState = nil
        after.heldResumeState = nil
        after.heldReason = nil
        // An order not delivered yet ends rejected `refunded`, whatever the store called it.
        after.reason = next == .rejected ? "refunded" : reason
        let transition = PlannedTransition(
            at: now, actor: .daemon, from: record.state, to: next, reason: Reason(after.reason ?? reason, detail: detail))
        var plan = OrderPlan(record: after, transitions: [transition])
        if let event = next == .revoked ? "revoked" : record.state == .revoked ? "reinstated" : nil {
            let earlier = try lookups.actionKeys(orderReference: record.reference, kind: .revocationNotice)
                .filter { $0.hasPrefix("\(record.orderID):\(event):") }.count
            plan.outbox = [revocationNotice(event: event, number: earlier + 1, reason: reason, for: after, notification, now: now)]
        }
        return (plan, .applied(orderID: record.orderID, from: record.state, to: next))
    }

    /// The merchant's event (DESIGN §5a): the body `[Revocation] URL=` receives, as the action's
    /// payload; due at once.
    static func revocationNotice(
        event: String, number: Int, reason: String, for record: OrderRecord, _ notification: StoreNotification, now: Date
    ) -> OutboxAction {
        let grant = record.grant
        let body = JSONObject([
            "event": .string(event), "order_id": .string(record.orderID), "product_id": .string(record.productID),
            "transaction_id": .string(orNull: grant?.transactionID ?? notification.transactionID),
            "store": .string(PurchaseStore(record.proof).rawValue), "quantity": .integer(grant?.quantity ?? 1), "reason": .string(reason),
            "revoked_at": event == "revoked" ? .string(orNull: notification.revokedAt.map(RFC3339.format)) : .null,
            "environment": .string(orNull: notification.environment ?? grant?.environment), "user_id": .string(orNull: record.userID),
            "application_username": .string(orNull: record.applicationUsername),
        ])
        return OutboxAction(
            orderReference: record.reference, orderID: record.orderID, kind: .revocationNotice, endpoint: .revocation,
            idempotencyKey: "\(record.orderID):\(event):\(number)", payload: JSONWriter.string(.object(body)), nextAttemptAt: now,
            createdAt: now, updatedAt: now, reason: "queued", detail: "the merchant is told the order was \(event)")
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
