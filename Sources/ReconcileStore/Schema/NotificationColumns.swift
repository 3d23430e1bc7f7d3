import Foundation
import ReconcileCore
import ReconcileFoundation

/// The `notifications` columns both stores write from a ``StoreNotification`` and read into a
/// ``StoredNotification``, in one place.
package enum NotificationColumns {
    /// The columns an insert sets, in the order of ``insertValues(_:receivedAt:)``.
    package static let insert = [
        "source", "notification_id", "type", "subtype", "transaction_id", "original_transaction_id", "product_id", "environment",
        "signed_at", "revoked_at", "revocation_reason", "via", "received_at", "outcome",
    ]

    package static func insertValues(_ notification: StoreNotification, receivedAt: Date) -> [SQLValue] {
        [
            .text(notification.source.rawValue), .text(notification.notificationID), .text(notification.type), .text(orNull: notification.subtype),
            .text(orNull: notification.transactionID), .text(orNull: notification.originalTransactionID), .text(orNull: notification.productID),
            .text(orNull: notification.environment), .integer(orNull: notification.signedAt?.epochMilliseconds),
            .integer(orNull: notification.revokedAt?.epochMilliseconds), .integer(orNull: notification.revocationReason.map(Int64.init)),
            .text(notification.via.rawValue), .integer(receivedAt.epochMilliseconds), .text("new"),
        ]
    }

    /// The select list ``stored(from:)`` reads: every ``NotificationColumn`` (`o` is the matched
    /// order, left joined).
    package static let select = NotificationColumn.allCases.map(\.qualifiedName).joined(separator: ", ")

    /// The position of `n.order_ref` when a query selects it right after ``select``.
    package static let orderReferenceColumn = Int32(NotificationColumn.allCases.count)

    /// The transaction a notification is matched by (``NotificationMatching``) as SQL over the
    /// bare table, as the index `notifications_transaction` holds it.
    package static let matchKey = "coalesce(transaction_id, original_transaction_id)"

    /// The types of store events that change orders (a refund, revocation, reversal or voided
    /// purchase), as an SQL list.
    package static let storeEventTypes = [
        AppStoreNotification.refund, AppStoreNotification.revoke, AppStoreNotification.refundReversed, StoreNotification.playVoidedType,
    ].map { "'\($0)'" }.joined(separator: ", ")

    /// `FROM notifications n LEFT JOIN orders o …`.
    package static let from = "FROM notifications n LEFT JOIN orders o ON o.id = n.order_ref"

    /// A notification from a row selected with ``select``.
    ///
    /// - Throws: ``StoreError/unknownValue(table:column:value:)`` for a source or channel this
    ///   version does not know.
    package static func stored(from row: some StoreRow) throws -> StoredNotification {
        typealias Column = NotificationColumn
        let notification = StoreNotification(
            source: try row.known(Column.source, as: StoreNotification.Source.self, table: "notifications"),
            notificationID: row.string(Column.notificationID), type: row.string(Column.type), subtype: row.optionalString(Column.subtype),
            transactionID: row.optionalString(Column.transactionID), originalTransactionID: row.optionalString(Column.originalTransactionID),
            productID: row.optionalString(Column.productID), environment: row.optionalString(Column.environment),
            signedAt: row.date(Column.signedAt), revokedAt: row.date(Column.revokedAt), revocationReason: row.optionalInt(Column.revocationReason),
            via: try row.known(Column.via, as: StoreNotification.Via.self, table: "notifications"))
        return StoredNotification(
            reference: row.int64(Column.id), notification: notification, receivedAt: row.date(Column.receivedAt) ?? .distantPast,
            outcome: row.string(Column.outcome), appliedAt: row.date(Column.appliedAt), orderID: row.optionalString(Column.orderID))
    }
}

/// The columns ``NotificationColumns/select`` selects, declared once; the raw value is the
/// position.
package enum NotificationColumn: Int32, SQLColumn {
    case id, source, notificationID, type, subtype, transactionID, originalTransactionID, productID, environment
    case signedAt, revokedAt, revocationReason, via, receivedAt, outcome, appliedAt, orderID

    package var name: String {
        switch self {
        case .id: "id"
        case .source: "source"
        case .notificationID: "notification_id"
        case .type: "type"
        case .subtype: "subtype"
        case .transactionID: "transaction_id"
        case .originalTransactionID: "original_transaction_id"
        case .productID: "product_id"
        case .environment: "environment"
        case .signedAt: "signed_at"
        case .revokedAt: "revoked_at"
        case .revocationReason: "revocation_reason"
        case .via: "via"
        case .receivedAt: "received_at"
        case .outcome: "outcome"
        case .appliedAt: "applied_at"
        case .orderID: "order_id"
        }
    }

    /// The column as the select list names it: the order's id from `o`, the rest from `n`.
    package var qualifiedName: String { (self == .orderID ? "o." : "n.") + name }
}
