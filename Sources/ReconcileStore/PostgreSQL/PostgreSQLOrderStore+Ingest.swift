import Foundation
import ReconcileCore

extension PostgreSQLOrderStore {
    /// Commits a batch of spool files (DESIGN §3) under ``IngestRules``. Idempotent across nodes:
    /// two nodes taking in the same file store one order (the second finds it `unchanged`), and
    /// two taking in different files of one order apply both, one after the other.
    public func ingest(_ candidates: [IngestCandidate], verifiers: ConfiguredVerifiers, now: Date) throws -> [IngestOutcome] {
        guard !candidates.isEmpty else { return [] }
        return try write { connection in
            // The stored orders of the batch, locked in key order up front (no deadlock with a
            // node ingesting the same orders in another order).
            _ = try Self.records(orderIDs: candidates.map(\.submission.orderID), connection: connection)
            // New orders are inserted in order-id order, whatever the batch's order: two nodes
            // inserting overlapping batches then wait for each other instead of deadlocking. Files
            // of one order keep their order (a later file sees an earlier one); the outcomes keep
            // the batch's.
            let sequence = candidates.indices.sorted {
                (candidates[$0].submission.orderID, $0) < (candidates[$1].submission.orderID, $1)
            }
            var outcomes = [IngestOutcome?](repeating: nil, count: candidates.count)
            for index in sequence {
                let candidate = candidates[index]
                let orderID = candidate.submission.orderID
                // Read again for each file: a later file of the batch sees an earlier one.
                outcomes[index] = try Self.planAndWrite("ingest of order \(orderID)", connection: connection) {
                    let existing = try Self.record(orderID: orderID, connection: connection)
                    let decided = IngestRules.plan(candidate, existing: existing, verifiers: verifiers, now: now)
                    return (decided.plan, decided.outcome)
                }.outcome
            }
            // Other nodes wake for the new orders (delivered when this transaction commits).
            try Self.notify(connection)
            return outcomes.map { $0! }
        }
    }
}
