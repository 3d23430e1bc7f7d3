import Foundation
import ReconcileCore

/// The `notifications` columns both stores write from a ``StoreNotification`` and read into a
/// ``StoredNotification``, in one place.
enum NotificationColumns {
    /// The columns an insert sets, in the order of ``insertValues(_:receivedAt:)``.
    static let insert = [
        "source", "notification_id", "type", "subtype", "transaction_id", "original_transaction_id", "product_id", "environment",
        "signed_at", "revoked_at", "revocation_reason", "via", "received_at", "outcome",
    ]

    static func insertValues(_ notification: StoreNotification, receivedAt: Date) -> [ColumnValue] {
        [
            .text(notification.source.rawValue), .text(notification.notificationID), .text(notification.type), .text(orNull: notification.subtype),
            .text(orNull: notification.transactionID), .text(orNull: notification.originalTransactionID), .text(orNull: notification.productID),
            .text(orNull: notification.environment), .integer(orNull: notification.signedAt?.epochMilliseconds),
            .integer(orNull: notification.revokedAt?.epochMilliseconds), .integer(orNull: notification.revocationReason.map(Int64.init)),
            .text(notification.via.rawValue), .integer(receivedAt.epochMilliseconds), .text("new"),
        ]
    }

    /// The select list ``stored(from:)`` reads, by position; `o` is the matched order (left join).
    static let select = """
        n.id, n.source, n.notification_id, n.type, n.subtype, n.transaction_id, n.original_transaction_id, n.product_id, n.environment,
        n.signed_at, n.revoked_at, n.revocation_reason, n.via, n.received_at, n.outcome, n.applied_at, o.order_id
        """

    /// The transaction a notification is matched by (``NotificationMatching``) as SQL over the
    /// bare table, as the index `notifications_transaction` holds it.
    static let matchKey = "coalesce(transaction_id, original_transaction_id)"

    /// The types of store events that change orders (a refund, revocation, reversal or voided
    /// purchase), as an SQL list.
    static let storeEventTypes = [
        AppStoreNotification.refund, AppStoreNotification.revoke, AppStoreNotification.refundReversed, StoreNotification.playVoidedType,
    ].map { "'\($0)'" }.joined(separator: ", ")

    /// `FROM notifications n LEFT JOIN orders o …`.
    static let from = "FROM notifications n LEFT JOIN orders o ON o.id = n.order_ref"

    static func stored(from row: some StoreRow) -> StoredNotification {
        func date(_ index: Int32) -> Date? { row.optionalInt64(index).map(Date.init(epochMilliseconds:)) }
        let notification = StoreNotification(
            source: StoreNotification.Source(rawValue: row.string(1)) ?? .appStore, notificationID: row.string(2), type: row.string(3),
            subtype: row.optionalString(4), transactionID: row.optionalString(5), originalTransactionID: row.optionalString(6),
            productID: row.optionalString(7), environment: row.optionalString(8), signedAt: date(9), revokedAt: date(10),
            revocationReason: row.optionalInt64(11).map { Int(clamping: $0) }, via: StoreNotification.Via(rawValue: row.string(12)) ?? .file)
        return StoredNotification(
            reference: row.int64(0), notification: notification, receivedAt: date(13) ?? .distantPast, outcome: row.string(14),
            appliedAt: date(15), orderID: row.optionalString(16))
    }
}
