import Foundation

/// The durable home of orders (DESIGN §7), as the daemon and `reconcilectl` see it.
///
/// SQLite serves it today (`SQLiteOrderStore`); the protocol is what a PostgreSQL store with
/// `FOR UPDATE SKIP LOCKED` leases would implement to serve several daemons. Every method is
/// one transaction: it commits entirely or not at all.
public protocol OrderStore: Sendable {
    /// Commits a batch of spool files in one transaction, applying the rules of DESIGN §3 in
    /// order (a later candidate sees an earlier one of the same batch).
    ///
    /// - Parameters:
    ///   - verifierKind: decides whether an order's proof is usable (`pending`) or not (`waiting`).
    /// - Returns: one outcome per candidate, in order.
    /// - Throws: when nothing could be committed (disk full, read-only, busy); then no spool
    ///   file may be deleted.
    func ingest(_ candidates: [IngestCandidate], verifierKind: VerifierKind, now: Date) throws -> [IngestOutcome]

    /// The order with this id, if stored.
    func order(id orderID: String) throws -> StoredOrder?

    /// The order's history, oldest first.
    func history(orderID: String) throws -> [TransitionRecord]

    /// How many orders are in each state (states with none are absent).
    func countsByState() throws -> [OrderState: Int]

    /// Drops receipts and raw files of `finished` and `cancelled` orders last changed before
    /// `cutoff`; rows, history and claims stay (`KeepFinished=`).
    ///
    /// - Returns: how many orders were pruned.
    func pruneFinished(before cutoff: Date, now: Date) throws -> Int
}
