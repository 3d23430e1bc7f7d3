import Foundation
import ReconcileCore

extension PostgreSQLOrderStore {
    /// Commits a batch of spool files (DESIGN §3) under ``IngestRules``. Idempotent across nodes:
    /// two nodes taking in the same file store one order (the second finds it `unchanged`), and
    /// two taking in different files of one order apply both, one after the other.
    public func ingest(_ candidates: [IngestCandidate], verifierKind: VerifierKind, now: Date) throws -> [IngestOutcome] {
        guard !candidates.isEmpty else { return [] }
        return try write { connection in
            // The stored orders of the batch, locked in key order up front (no deadlock with a
            // node ingesting the same orders in another order).
            _ = try Self.records(orderIDs: candidates.map(\.submission.orderID), connection: connection)
            return try candidates.map { candidate in
                let orderID = candidate.submission.orderID
                // Read again for each file: a later file of the batch sees an earlier one.
                return try Self.planAndWrite("ingest of order \(orderID)", connection: connection) {
                    let existing = try Self.record(orderID: orderID, connection: connection)
                    let decided = IngestRules.plan(candidate, existing: existing, verifierKind: verifierKind, now: now)
                    return (decided.plan, decided.outcome)
                }.outcome
            }
        }
    }
}
