import Foundation
import ReconcileCore

/// The `outbox` columns both stores read into an ``OutboxAction`` and write from one, in one
/// place: the select list (joined with the order for its id), its reader, and the columns an
/// update sets with their values in order.
enum OutboxColumns {
    /// The select list ``action(from:)`` reads, by position; `o` is the order's row.
    static let action = """
        x.id, x.order_ref, o.order_id, x.kind, x.endpoint, x.idempotency_key, x.payload, x.state, x.attempts, x.next_attempt_at,
        x.lease_owner, x.leased_until, x.created_at, x.updated_at, x.deadline, x.warned_at, x.reason, x.detail
        """

    /// `FROM outbox x JOIN orders o …`.
    static let from = "FROM outbox x JOIN orders o ON o.id = x.order_ref"

    /// The order's columns a claim reads besides the action: product, purchase token, package.
    /// The condition (on `x`) that an action is next in its order's line: no earlier action of
    /// its kind for the same order is still pending. An order's revocation notices reach the
    /// merchant in the order they were recorded (DESIGN §5a), never an older word after a newer.
    static let inOrder = """
        NOT EXISTS (SELECT 1 FROM outbox e WHERE e.order_ref = x.order_ref AND e.kind = x.kind AND e.id < x.id AND e.state = 'pending')
        """

    static let claimExtra = "o.product_id, o.purchase_token, o.package_name"

    static func action(from row: some StoreRow) -> OutboxAction {
        func date(_ index: Int32) -> Date? { row.optionalInt64(index).map(Date.init(epochMilliseconds:)) }
        return OutboxAction(
            reference: row.int64(0), orderReference: row.int64(1), orderID: row.string(2),
            kind: OutboxKind(rawValue: row.string(3)) ?? .playAcknowledge,
            endpoint: VerificationEndpoint(rawValue: row.string(4)) ?? .googlePlay, idempotencyKey: row.string(5), payload: row.string(6),
            state: OutboxState(rawValue: row.string(7)) ?? .escalated, attempts: row.int(8), nextAttemptAt: date(9),
            lease: row.optionalString(10).map { OutboxAction.Lease(owner: $0, until: date(11)) }, createdAt: date(12) ?? .distantPast,
            updatedAt: date(13) ?? .distantPast, deadline: date(14), warnedAt: date(15), reason: row.optionalString(16),
            detail: row.optionalString(17))
    }

    /// A claimed action from a row of ``action`` followed by ``claimExtra``.
    static func claimed(from row: some StoreRow, charged: Bool) -> ClaimedAction {
        ClaimedAction(
            action: action(from: row), productID: row.string(18),
            proof: OrderProof(purchaseToken: row.optionalString(19), packageName: row.optionalString(20)), charged: charged)
    }

    /// The columns an insert sets (with `order_ref` first), in the order of ``insertValues(_:orderReference:)``.
    static let insert = [
        "order_ref", "kind", "endpoint", "idempotency_key", "payload", "state", "attempts", "next_attempt_at", "created_at", "updated_at",
        "deadline", "reason", "detail",
    ]

    static func insertValues(_ action: OutboxAction, orderReference: Int64) -> [ColumnValue] {
        [
            .integer(orderReference), .text(action.kind.rawValue), .text(action.endpoint.rawValue), .text(action.idempotencyKey),
            .text(action.payload), .text(action.state.rawValue), .integer(Int64(action.attempts)),
            .integer(orNull: action.nextAttemptAt?.epochMilliseconds), .integer(action.createdAt.epochMilliseconds),
            .integer(action.updatedAt.epochMilliseconds), .integer(orNull: action.deadline?.epochMilliseconds), .text(orNull: action.reason),
            .text(orNull: action.detail),
        ]
    }

    /// The columns a rule's change sets, in the order of ``updateValues(_:)``.
    static let update = ["state", "attempts", "next_attempt_at", "lease_owner", "leased_until", "updated_at", "warned_at", "reason", "detail"]

    static func updateValues(_ action: OutboxAction) -> [ColumnValue] {
        [
            .text(action.state.rawValue), .integer(Int64(action.attempts)), .integer(orNull: action.nextAttemptAt?.epochMilliseconds),
            .text(orNull: action.lease?.owner), .integer(orNull: action.lease?.until?.epochMilliseconds),
            .integer(action.updatedAt.epochMilliseconds), .integer(orNull: action.warnedAt?.epochMilliseconds), .text(orNull: action.reason),
            .text(orNull: action.detail),
        ]
    }
}
