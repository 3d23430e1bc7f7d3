import Foundation
import ReconcileCore
import ReconcileCrypto
import ReconcileFoundation

/// The JSON shapes of `list` and `show` (DESIGN §10), version 1. Times are RFC 3339 UTC with
/// `Z`; receipts are never shown, only their length and a short SHA-256.
enum OrderJSON {
    static func time(_ date: Date?) -> JSONValue {
        date.map { .string(RFC3339.format($0)) } ?? .null
    }

    /// One row of `list --json`.
    static func summary(_ order: StoredOrder) -> JSONObject {
        JSONObject([
            "order_id": .string(order.orderID), "product_id": .string(order.productID), "state": .string(order.state.rawValue),
            "attempts": .integer(order.attempts), "next_attempt": time(order.nextAttemptAt), "received_at": time(order.receivedAt),
            "updated_at": time(order.updatedAt), "reason": .string(orNull: order.reason?.rawValue),
            // Only on an order the phone never sent (DESIGN §5b): the phone's own keep their shape.
            "origin": order.origin.map { .string($0.rawValue) },
        ])
    }

    /// `show --json`: the order's fields and its history.
    static func detail(
        _ order: StoredOrder, history: [TransitionRecord], actions: [OutboxAction] = [], notifications: [StoredNotification] = []
    ) -> JSONObject {
        var object = JSONObject(["version": .integer(1)])
        for member in summary(order).members { object[member.key] = member.value }
        object["delivery_attempts"] = .integer(order.deliveryAttempts)
        object["resume_state"] = .string(orNull: order.resumeState?.rawValue)
        object["receipt"] = order.proof.receipt.map { receipt in
            .object(JSONObject(["length": .integer(receipt.utf8.count), "sha256": .string(SHA256.fingerprint(receipt))]))
        } ?? .null
        object["signed_transaction"] = order.proof.signedTransaction.map { signed in
            .object(JSONObject(["length": .integer(signed.utf8.count), "sha256": .string(SHA256.fingerprint(signed))]))
        } ?? .null
        object["transaction_id"] = .string(orNull: order.proof.transactionID)
        object["store"] = .string(PurchaseStore(order.proof).rawValue)
        object["purchase_token"] = order.proof.purchaseToken.map { token in
            .object(JSONObject(["length": .integer(token.utf8.count), "sha256": .string(SHA256.fingerprint(token))]))
        } ?? .null
        object["package_name"] = .string(orNull: order.proof.packageName)
        object["application_username"] = .string(orNull: order.applicationUsername)
        object["user_id"] = .string(orNull: order.userID)
        object["amount"] = .string(orNull: order.amount)
        object["currency"] = .string(orNull: order.currency)
        object["created_at"] = time(order.createdAt)
        object["verified_transaction_id"] = .string(orNull: order.verifiedTransactionID)
        object["environment"] = .string(orNull: order.environment)
        object["finished_by"] = .string(orNull: order.finishedBy?.rawValue)
        object["lease_owner"] = .string(orNull: order.leaseOwner)
        object["pruned_at"] = time(order.prunedAt)
        object["history"] = .array(history.map { record in
            .object(JSONObject([
                "at": time(record.at), "actor": .string(record.actor.description), "from": .string(orNull: record.from?.rawValue),
                "to": .string(record.to.rawValue), "reason": .string(record.reason.rawValue), "detail": .string(orNull: record.detail),
                "verifier_status": record.verifierStatus.map(JSONValue.integer) ?? .null,
                "http_status": record.httpStatus.map(JSONValue.integer) ?? .null, "environment": .string(orNull: record.environment),
                "endpoint": .string(orNull: record.endpoint), "latency_ms": record.latencyMilliseconds.map(JSONValue.integer) ?? .null,
            ]))
        })
        object["actions"] = .array(actions.map { .object(action($0)) })
        object["notifications"] = .array(notifications.map { .object(notification($0)) })
        return object
    }

    /// One outbox action (`show`'s `actions`, `list --actions-due`).
    static func action(_ action: OutboxAction) -> JSONObject {
        JSONObject([
            "order_id": .string(action.orderID), "kind": .string(action.kind.rawValue), "endpoint": .string(action.endpoint.rawValue),
            "state": .string(action.state.rawValue), "attempts": .integer(action.attempts), "next_attempt": time(action.nextAttemptAt),
            "created_at": time(action.createdAt), "updated_at": time(action.updatedAt), "deadline": time(action.deadline),
            "warned_at": time(action.warnedAt), "reason": .string(orNull: action.reason?.rawValue), "detail": .string(orNull: action.detail),
        ])
    }

    /// A store notification in `notifications --json` and `show --json`: what it said, never
    /// its signed payload.
    static func notification(_ stored: StoredNotification) -> JSONObject {
        let notification = stored.notification
        return JSONObject([
            "source": .string(notification.source.rawValue), "notification_id": .string(notification.notificationID),
            "type": .string(notification.type), "subtype": .string(orNull: notification.subtype),
            "transaction_id": .string(orNull: notification.transactionID),
            "original_transaction_id": .string(orNull: notification.originalTransactionID), "product_id": .string(orNull: notification.productID),
            "environment": .string(orNull: notification.environment), "signed_at": time(notification.signedAt),
            "revoked_at": time(notification.revokedAt), "revocation_reason": notification.revocationReason.map { .integer($0) } ?? .null,
            "via": .string(notification.via.rawValue), "received_at": time(stored.receivedAt), "outcome": .string(stored.outcome),
            "applied_at": time(stored.appliedAt), "order_id": .string(orNull: stored.orderID),
        ])
    }

    /// A purchase a store reported on its own, in `discovered --json`: what the store said and
    /// where it stands — never its signed transaction or purchase token.
    static func discovered(_ stored: StoredDiscoveredPurchase) -> JSONObject {
        let purchase = stored.purchase
        var graceUntil: Date?
        if case .waiting(let until) = stored.status { graceUntil = until }
        return JSONObject([
            "store": .string(purchase.store.rawValue), "transaction_key": .string(purchase.transactionKey),
            "product_id": .string(purchase.productID), "purchased_at": time(purchase.purchasedAt),
            "environment": .string(orNull: purchase.environment), "application_username": .string(orNull: purchase.accountToken),
            "user_id": .string(orNull: purchase.profileID), "revoked_at": time(purchase.revokedAt), "via": .string(purchase.via.rawValue),
            "status": .string(stored.status.code), "order_id": .string(orNull: stored.status.orderID), "grace_until": time(graceUntil),
            "discovered_at": time(stored.discoveredAt), "updated_at": time(stored.updatedAt),
        ])
    }

    /// The outbox's backlog in `status --json` (and the daemon's status answer).
    static func outboxSummary(_ summary: OutboxSummary) -> JSONObject {
        JSONObject([
            "pending": .integer(summary.pending), "escalated": .integer(summary.escalated),
            "oldest_pending": time(summary.oldestPendingCreatedAt), "next_attempt": time(summary.nextAttemptAt),
        ])
    }

    /// Reads ``outboxSummary(_:)-swift.type.method`` back.
    static func outboxSummary(_ value: JSONValue) -> OutboxSummary {
        OutboxSummary(
            pending: Int(value["pending"]?.int64Value ?? 0), escalated: Int(value["escalated"]?.int64Value ?? 0),
            oldestPendingCreatedAt: value["oldest_pending"]?.stringValue.flatMap(RFC3339.parse),
            nextAttemptAt: value["next_attempt"]?.stringValue.flatMap(RFC3339.parse))
    }
}
