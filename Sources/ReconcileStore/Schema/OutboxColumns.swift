import Foundation
import ReconcileCore
import ReconcileFoundation

/// The `outbox` columns both stores read into an ``OutboxAction`` and write from one, in one
/// place: the select list (joined with the order for its id), its reader, and the columns an
/// update sets with their values in order.
package enum OutboxColumns {
    /// The select list ``action(from:)`` reads: every ``OutboxColumn`` (`o` is the order's row).
    package static let action = OutboxColumn.allCases.map(\.qualifiedName).joined(separator: ", ")

    /// `FROM outbox x JOIN orders o …`.
    package static let from = "FROM outbox x JOIN orders o ON o.id = x.order_ref"

    /// The order's columns a claim reads besides the action: product, purchase token, package.
    /// The condition (on `x`) that an action is next in its order's line: no earlier action of
    /// its kind for the same order is still pending. An order's revocation notices reach the
    /// merchant in the order they were recorded (DESIGN §5a), never an older word after a newer.
    package static let inOrder = """
        NOT EXISTS (SELECT 1 FROM outbox e WHERE e.order_ref = x.order_ref AND e.kind = x.kind AND e.id < x.id AND e.state = 'pending')
        """

    package static let claimExtra = "o.product_id, o.purchase_token, o.package_name"

    /// An action from a row selected with ``action``.
    ///
    /// - Throws: ``StoreError/unknownValue(table:column:value:)`` for a kind, endpoint or state
    ///   this version does not know.
    package static func action(from row: some StoreRow) throws -> OutboxAction {
        OutboxAction(
            reference: row.int64(OutboxColumn.id), orderReference: row.int64(OutboxColumn.orderReference), orderID: row.string(OutboxColumn.orderID),
            kind: try row.known(OutboxColumn.kind, as: OutboxKind.self, table: "outbox"),
            endpoint: try row.known(OutboxColumn.endpoint, as: VerificationEndpoint.self, table: "outbox"),
            idempotencyKey: row.string(OutboxColumn.idempotencyKey), payload: row.string(OutboxColumn.payload),
            state: try row.known(OutboxColumn.state, as: OutboxState.self, table: "outbox"), attempts: row.int(OutboxColumn.attempts),
            nextAttemptAt: row.date(OutboxColumn.nextAttemptAt),
            lease: row.optionalString(OutboxColumn.leaseOwner).map { OutboxAction.Lease(owner: $0, until: row.date(OutboxColumn.leasedUntil)) },
            createdAt: row.date(OutboxColumn.createdAt) ?? .distantPast, updatedAt: row.date(OutboxColumn.updatedAt) ?? .distantPast,
            deadline: row.date(OutboxColumn.deadline), warnedAt: row.date(OutboxColumn.warnedAt), reason: row.optionalString(OutboxColumn.reason).map(ReasonCode.init(rawValue:)),
            detail: row.optionalString(OutboxColumn.detail))
    }

    /// A claimed action from a row of ``action`` followed by ``claimExtra``.
    package static func claimed(from row: some StoreRow, charged: Bool) throws -> ClaimedAction {
        let extra = Int32(OutboxColumn.allCases.count)
        return ClaimedAction(
            action: try action(from: row), productID: row.string(extra),
            proof: OrderProof(purchaseToken: row.optionalString(extra + 1), packageName: row.optionalString(extra + 2)), charged: charged)
    }

    /// The columns an insert sets (with `order_ref` first), in the order of ``insertValues(_:orderReference:)``.
    package static let insert = [
        "order_ref", "kind", "endpoint", "idempotency_key", "payload", "state", "attempts", "next_attempt_at", "created_at", "updated_at",
        "deadline", "reason", "detail",
    ]

    package static func insertValues(_ action: OutboxAction, orderReference: Int64) -> [SQLValue] {
        [
            .integer(orderReference), .text(action.kind.rawValue), .text(action.endpoint.rawValue), .text(action.idempotencyKey),
            .text(action.payload), .text(action.state.rawValue), .integer(Int64(action.attempts)),
            .integer(orNull: action.nextAttemptAt?.epochMilliseconds), .integer(action.createdAt.epochMilliseconds),
            .integer(action.updatedAt.epochMilliseconds), .integer(orNull: action.deadline?.epochMilliseconds), .text(orNull: action.reason?.rawValue),
            .text(orNull: action.detail),
        ]
    }

    /// The columns a rule's change sets, in the order of ``updateValues(_:)``.
    package static let update = ["state", "attempts", "next_attempt_at", "lease_owner", "leased_until", "updated_at", "warned_at", "reason", "detail"]

    package static func updateValues(_ action: OutboxAction) -> [SQLValue] {
        [
            .text(action.state.rawValue), .integer(Int64(action.attempts)), .integer(orNull: action.nextAttemptAt?.epochMilliseconds),
            .text(orNull: action.lease?.owner), .integer(orNull: action.lease?.until?.epochMilliseconds),
            .integer(action.updatedAt.epochMilliseconds), .integer(orNull: action.warnedAt?.epochMilliseconds), .text(orNull: action.reason?.rawValue),
            .text(orNull: action.detail),
        ]
    }
}

/// The columns ``OutboxColumns/action`` selects, declared once; the raw value is the position.
package enum OutboxColumn: Int32, SQLColumn {
    case id, orderReference, orderID, kind, endpoint, idempotencyKey, payload, state, attempts, nextAttemptAt
    case leaseOwner, leasedUntil, createdAt, updatedAt, deadline, warnedAt, reason, detail

    package var name: String {
        switch self {
        case .id: "id"
        case .orderReference: "order_ref"
        case .orderID: "order_id"
        case .kind: "kind"
        case .endpoint: "endpoint"
        case .idempotencyKey: "idempotency_key"
        case .payload: "payload"
        case .state: "state"
        case .attempts: "attempts"
        case .nextAttemptAt: "next_attempt_at"
        case .leaseOwner: "lease_owner"
        case .leasedUntil: "leased_until"
        case .createdAt: "created_at"
        case .updatedAt: "updated_at"
        case .deadline: "deadline"
        case .warnedAt: "warned_at"
        case .reason: "reason"
        case .detail: "detail"
        }
    }

    /// The column as the select list names it: the order's id from `o`, the rest from `x`.
    package var qualifiedName: String { (self == .orderID ? "o." : "x.") + name }
}
