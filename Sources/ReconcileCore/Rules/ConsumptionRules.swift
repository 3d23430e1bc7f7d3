import Foundation
import ReconcileFoundation

/// Answers to Apple's `CONSUMPTION_REQUEST` (DESIGN §5a; Send Consumption Information v2,
/// `PUT /inApps/v2/transactions/consumption/{transactionId}`). A request about an order the
/// daemon holds, with `ConsumptionAnswer=on` and `CustomerConsented=yes`, queues an outbox action
/// whose body says only what the daemon knows: `deliveryStatus` `DELIVERED` when the order was
/// delivered (`finished`, or `revoked` since), else `UNDELIVERED_OTHER`; `customerConsented: true`;
/// `sampleContentProvided` and `refundPreference` as configured; no `consumptionPercentage`. The
/// order itself does not change: its history records what was queued, or why nothing was.
///
/// Apple wants the answer within 12 hours of the notification (the time it signed it): a request
/// that arrives later is recorded unanswered, and an action still unsent then is escalated by its
/// sender (`consumption_deadline_passed`), never sent late.
public enum ConsumptionRules {
    /// How long after the notification Apple takes the answer.
    public static let answerWindow: TimeInterval = 12 * 3600

    /// Apple's `deliveryStatus` for what the daemon knows.
    public static let delivered = "DELIVERED"
    public static let undelivered = "UNDELIVERED_OTHER"

    /// Whether `notification` is an App Store `CONSUMPTION_REQUEST`.
    public static func isRequest(_ notification: StoreNotification) -> Bool {
        notification.source == .appStore && notification.type == AppStoreNotification.consumptionRequest
    }

    /// The plan for a consumption request about `record` (`nil`: no order holds its transaction).
    /// With answering off it is only recorded, as before; on, an unmatched request is recorded
    /// unmatched (nothing is known to answer with). An order's attempt in flight does not hold it
    /// up: the answer says what the order is now.
    static func apply(
        _ notification: StoreNotification, to record: OrderRecord?, policy: ConsumptionPolicy, now: Date
    ) -> (plan: OrderPlan?, outcome: NotificationRules.Outcome) {
        guard policy.answer else { return (nil, .recorded) }
        guard let record, let transactionID = NotificationMatching.transactionID(of: notification) else { return (nil, .unmatched) }
        let detail = NotificationRules.detail(notification)
        func history(_ code: ReasonCode, _ why: String, outbox: [OutboxAction] = []) -> (plan: OrderPlan?, outcome: NotificationRules.Outcome) {
            let transition = PlannedTransition(
                at: now, actor: .daemon, from: record.state, to: record.state, reason: Reason(code, detail: Reason.joined(why, detail)))
            var plan = OrderPlan.historyOnly(record, [transition])
            plan.outbox = outbox
            return (plan, .noChange(orderID: record.orderID, state: record.state))
        }
        guard policy.customerConsented else {
            return history(.consumptionNotAnswered, "not answered: CustomerConsented=no, and Apple accepts no answer without the customer's consent")
        }
        // Matched only by the transaction id the client wrote in its order file (the order was
        // never verified): the daemon does not know this purchase is that order's, nor whether
        // the app delivered it another way — it says nothing rather than "not delivered" (review).
        guard record.grant != nil else {
            return history(.consumptionNotAnswered, "not answered: the order's purchase was never verified, so the daemon does not know whether it was delivered")
        }
        let deadline = (notification.signedAt ?? now).addingTimeInterval(answerWindow)
        guard now < deadline else {
            return history(.consumptionDeadlinePassed, "not answered: Apple's 12-hour deadline passed at \(RFC3339.format(deadline))")
        }
        let status = deliveryStatus(of: record)
        let action = answer(transactionID: transactionID, status: status, policy: policy, for: record, notification, deadline: deadline, now: now)
        return history(.consumptionAnswerQueued, "Apple is to be told \(status) by \(RFC3339.format(deadline))", outbox: [action])
    }

    /// `DELIVERED` for an order that was delivered (`finished`, or `revoked` after it was), else
    /// `UNDELIVERED_OTHER`.
    public static func deliveryStatus(of record: OrderRecord) -> String {
        record.state == .finished || record.state == .revoked ? delivered : undelivered
    }

    /// Apple's `ConsumptionRequest`, in the order Apple documents its fields.
    public static func request(status: String, policy: ConsumptionPolicy) -> JSONObject {
        JSONObject([
            "customerConsented": .bool(true), "sampleContentProvided": .bool(policy.sampleContentProvided), "deliveryStatus": .string(status),
            "refundPreference": policy.refundPreference.map { .string($0.rawValue) },
        ])
    }

    /// The outbox action: its payload names the transaction and the environment, and holds the
    /// request body as it is sent; due at once, until `deadline`. Keyed by the notification, so
    /// each request is answered once.
    static func answer(
        transactionID: String, status: String, policy: ConsumptionPolicy, for record: OrderRecord, _ notification: StoreNotification,
        deadline: Date, now: Date
    ) -> OutboxAction {
        let environment = notification.environment ?? record.grant?.environment
        let payload = JSONObject([
            "transaction_id": .string(transactionID), "environment": .string(orNull: environment),
            "request": .object(request(status: status, policy: policy)),
        ])
        return OutboxAction(
            orderReference: record.reference, orderID: record.orderID, kind: .consumptionAnswer, endpoint: endpoint(environment: environment),
            idempotencyKey: "\(record.orderID):consumption:\(notification.notificationID)", payload: JSONWriter.string(.object(payload)),
            nextAttemptAt: now, createdAt: now, updatedAt: now, deadline: deadline, reason: .queued,
            detail: "Apple asked for consumption information; the answer says \(status)")
    }

    /// The App Store Server API the answer goes to: the sandbox's for a `Sandbox` notification,
    /// production's otherwise.
    public static func endpoint(environment: String?) -> VerificationEndpoint {
        environment == "Sandbox" ? .sandbox : .production
    }

    /// Whether Apple's deadline for the action's answer has passed: it is not sent any more.
    public static func isPastDeadline(_ action: OutboxAction, now: Date) -> Bool {
        action.kind == .consumptionAnswer && action.deadline.map { now >= $0 } == true
    }
}
