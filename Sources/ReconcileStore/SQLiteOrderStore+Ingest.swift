import Foundation
import ReconcileCore

extension SQLiteOrderStore {
    public func ingest(_ candidates: [IngestCandidate], verifiers: ConfiguredVerifiers, now: Date) throws -> [IngestOutcome] {
        guard !candidates.isEmpty else { return [] }
        return try write { connection in
            try candidates.map { try Self.ingest($0, verifiers: verifiers, now: now, connection: connection) }
        }
    }

    /// One spool file inside the caller's transaction: read, plan (``IngestRules``), write.
    private static func ingest(
        _ candidate: IngestCandidate, verifiers: ConfiguredVerifiers, now: Date, connection: SQLiteConnection
    ) throws -> IngestOutcome {
        let existing = try record(orderID: candidate.submission.orderID, connection: connection)
        let (plan, outcome) = IngestRules.plan(candidate, existing: existing, verifiers: verifiers, now: now)
        if let plan { try write(plan, connection: connection) }
        return outcome
    }
}
