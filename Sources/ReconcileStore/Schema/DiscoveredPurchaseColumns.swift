import Foundation
import ReconcileCore
import ReconcileFoundation

/// The `discovered_purchases` columns both stores write from a ``DiscoveredPurchase`` and read
/// into a ``StoredDiscoveredPurchase``, in one place (DESIGN §5b).
package enum DiscoveredPurchaseColumns {
    /// The columns an insert sets, in the order of ``insertValues(_:status:now:)``.
    package static let insert = [
        "store", "transaction_key", "product_id", "purchased_at", "environment", "account_token", "profile_id", "signed_transaction",
        "purchase_token", "package_name", "is_subscription", "revoked_at", "via", "discovered_at", "status", "grace_until", "order_ref",
        "updated_at",
    ]

    package static func insertValues(_ purchase: DiscoveredPurchase, status: DiscoveryRules.Status, holder: Int64?, now: Date) -> [SQLValue] {
        [
            .text(purchase.store.rawValue), .text(purchase.transactionKey), .text(purchase.productID), .time(purchase.purchasedAt),
            .text(orNull: purchase.environment), .text(orNull: purchase.accountToken), .text(orNull: purchase.profileID),
            .text(orNull: purchase.proof.signedTransaction), .text(orNull: purchase.proof.purchaseToken),
            .text(orNull: purchase.proof.packageName), .integer(purchase.isSubscription ? 1 : 0), .time(purchase.revokedAt),
            .text(purchase.via.rawValue), .time(now), .text(status.code), .time(graceEnd(status)), .integer(orNull: holder), .time(now),
        ]
    }

    /// When a waiting purchase's grace ends; `nil` for any other status.
    package static func graceEnd(_ status: DiscoveryRules.Status) -> Date? {
        if case .waiting(let until) = status { return until }
        return nil
    }

    /// The select list ``stored(from:)`` reads: every ``DiscoveredPurchaseColumn`` (`o` is the
    /// order holding the purchase, left joined).
    package static let select = DiscoveredPurchaseColumn.allCases.map(\.qualifiedName).joined(separator: ", ")

    /// `FROM discovered_purchases d LEFT JOIN orders o …`.
    package static let from = "FROM discovered_purchases d LEFT JOIN orders o ON o.id = d.order_ref"

    /// A purchase from a row selected with ``select``.
    ///
    /// - Throws: ``StoreError/unknownValue(table:column:value:)`` for a store, channel or status
    ///   this version does not know, or a status that needs an order and has none.
    package static func stored(from row: some StoreRow) throws -> StoredDiscoveredPurchase {
        typealias Column = DiscoveredPurchaseColumn
        let table = "discovered_purchases"
        let store = try row.known(Column.store, as: PurchaseStore.self, table: table)
        let transactionKey = row.string(Column.transactionKey)
        let purchase = DiscoveredPurchase(
            store: store, transactionKey: transactionKey,
            productID: row.string(Column.productID), purchasedAt: row.date(Column.purchasedAt),
            environment: row.optionalString(Column.environment), accountToken: row.optionalString(Column.accountToken),
            profileID: row.optionalString(Column.profileID),
            proof: OrderProof(
                // An App Store purchase's key is its transactionId (DESIGN §5b).
                transactionID: store == .appStore ? transactionKey : nil,
                signedTransaction: row.optionalString(Column.signedTransaction), purchaseToken: row.optionalString(Column.purchaseToken),
                packageName: row.optionalString(Column.packageName)),
            isSubscription: row.int64(Column.isSubscription) != 0, revokedAt: row.date(Column.revokedAt),
            via: try row.known(Column.via, as: DiscoveredPurchase.Via.self, table: table))
        return StoredDiscoveredPurchase(
            reference: row.int64(Column.id), purchase: purchase,
            status: try status(row.string(Column.status), graceUntil: row.date(Column.graceUntil), orderID: row.optionalString(Column.orderID)),
            discoveredAt: row.date(Column.discoveredAt) ?? .distantPast, updatedAt: row.date(Column.updatedAt) ?? .distantPast)
    }

    /// The status stored as `code`.
    ///
    /// - Throws: ``StoreError/unknownValue(table:column:value:)`` for a code this version does
    ///   not know, or one that needs a time or an order the row lacks.
    package static func status(_ code: String, graceUntil: Date?, orderID: String?) throws -> DiscoveryRules.Status {
        guard let status = DiscoveryRules.Status(code: code, graceUntil: graceUntil, orderID: orderID) else {
            throw StoreError.unknownValue(table: "discovered_purchases", column: "status", value: code)
        }
        return status
    }
}

/// The columns ``DiscoveredPurchaseColumns/select`` selects, declared once; the raw value is the
/// position.
package enum DiscoveredPurchaseColumn: Int32, SQLColumn {
    case id, store, transactionKey, productID, purchasedAt, environment, accountToken, profileID, signedTransaction, purchaseToken
    case packageName, isSubscription, revokedAt, via, discoveredAt, status, graceUntil, updatedAt, orderID

    package var name: String {
        switch self {
        case .id: "id"
        case .store: "store"
        case .transactionKey: "transaction_key"
        case .productID: "product_id"
        case .purchasedAt: "purchased_at"
        case .environment: "environment"
        case .accountToken: "account_token"
        case .profileID: "profile_id"
        case .signedTransaction: "signed_transaction"
        case .purchaseToken: "purchase_token"
        case .packageName: "package_name"
        case .isSubscription: "is_subscription"
        case .revokedAt: "revoked_at"
        case .via: "via"
        case .discoveredAt: "discovered_at"
        case .status: "status"
        case .graceUntil: "grace_until"
        case .updatedAt: "updated_at"
        case .orderID: "order_id"
        }
    }

    /// The column as the select list names it: the order's id from `o`, the rest from `d`.
    package var qualifiedName: String { (self == .orderID ? "o." : "d.") + name }
}
