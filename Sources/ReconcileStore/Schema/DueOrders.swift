import ReconcileCore

/// Which orders each kind of work takes, as SQL both stores share: the partial index that holds
/// exactly the orders of that kind waiting for an attempt, and the condition that lets the
/// planner prove the index applies (written as literals, never from outside values).
package enum DueOrders {
    /// `orders_due_verify`, `orders_due_verify_play`, `orders_due_deliver`.
    package static func index(_ kind: WorkKind) -> String {
        "orders_due_\(kind.rawValue)"
    }

    /// The index's condition, without `next_attempt_at IS NOT NULL`; its columns prefixed with
    /// `alias.` when one is given.
    package static func condition(_ kind: WorkKind, alias: String? = nil) -> String {
        let a = alias.map { $0 + "." } ?? ""
        return switch kind {
        case .verify: "\(a)state = 'pending' AND \(a)purchase_token IS NULL"
        case .verifyPlay: "\(a)state = 'pending' AND \(a)purchase_token IS NOT NULL"
        case .deliver: "\(a)state = 'verified'"
        }
    }
}
