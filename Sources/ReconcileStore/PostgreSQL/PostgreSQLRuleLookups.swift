import Foundation
import ReconcileCore

/// The rules' lookups inside a PostgreSQL transaction. Each is a statement of its own, so under
/// `READ COMMITTED` it sees what other nodes committed up to then: a claim that another node took
/// after this transaction began is seen when the rule is asked again.
struct PostgreSQLRuleLookups: RuleLookups {
    let connection: PostgreSQLConnection

    func claimants(of transactionIDs: [String]) throws -> [String: String] {
        guard !transactionIDs.isEmpty else { return [:] }
        let pairs = try connection.query(
            "SELECT c.transaction_id, o.order_id FROM claims c JOIN orders o ON o.id = c.order_ref WHERE c.transaction_id = ANY($1::text[])",
            [.textArray(Array(Set(transactionIDs)))]
        ) { ($0.string(0), $0.string(1)) }
        return Dictionary(pairs, uniquingKeysWith: { first, _ in first })
    }

    func latestDetail(orderReference: Int64, reason: String) throws -> String? {
        try connection.queryFirst(
            "SELECT detail FROM transitions WHERE order_ref = $1 AND reason = $2 ORDER BY id DESC LIMIT 1",
            [.integer(orderReference), .text(reason)]
        ) { $0.optionalString(0) } ?? nil
    }

    func laterStoreEvent(transactionID: String, signedAfter date: Date) throws -> String? {
        try connection.queryFirst(
            "SELECT type FROM notifications WHERE \(NotificationColumns.matchKey) = $1 AND type IN (\(NotificationColumns.storeEventTypes)) AND signed_at > $2 ORDER BY signed_at DESC LIMIT 1",
            [.text(transactionID), .integer(date.epochMilliseconds)], { $0.string(0) })
    }

    /// Locked for the transaction: the rule may supersede those not sent yet, and one a sender
    /// leases meanwhile is seen leased.
    func revocationNotices(orderReference: Int64) throws -> [OutboxAction] {
        try connection.query(
            "SELECT \(OutboxColumns.action) \(OutboxColumns.from) WHERE x.order_ref = $1 AND x.kind = $2 ORDER BY x.id FOR UPDATE OF x",
            [.integer(orderReference), .text(OutboxKind.revocationNotice.rawValue)], OutboxColumns.action(from:))
    }

    func deliveryRequested(orderReference: Int64) throws -> Bool {
        try connection.queryFirst(
            "SELECT 1 FROM attempts WHERE order_ref = $1 AND kind = 'deliver' LIMIT 1", [.integer(orderReference)], { _ in true }) ?? false
    }

    /// Locked for the transaction: the rule writes them back as it decides. Only escalated ones:
    /// an action in flight is neither waited for nor locked against its sender.
    func escalatedActions(orderReference: Int64) throws -> [OutboxAction] {
        try connection.query(
            "SELECT \(OutboxColumns.action) \(OutboxColumns.from) WHERE x.order_ref = $1 AND x.state = 'escalated' ORDER BY x.id FOR UPDATE OF x",
            [.integer(orderReference)], OutboxColumns.action(from:))
    }
}
