import Foundation
import ReconcileCore
import ReconcileFoundation

/// Polling checkpoints (schema version 7): a row per name, its time in milliseconds; a node that
/// finishes a poll after another never moves a checkpoint back.
extension RelationalOrderStore {
    public func checkpoint(_ name: String) throws -> Date? {
        try withConnection { connection in
            try connection.fetchOne("SELECT value FROM checkpoints WHERE name = \(name)") { Date(epochMilliseconds: $0.int64(0)) }
        }
    }

    public func advanceCheckpoint(_ name: String, to value: Date, now: Date) throws {
        _ = try write { connection in
            try connection.perform(
                """
                INSERT INTO checkpoints (name, value, updated_at) VALUES (\(name), \(value), \(now))
                ON CONFLICT (name) DO UPDATE SET value = \(.greatest("checkpoints.value", "excluded.value")), updated_at = excluded.updated_at
                """)
        }
    }

    public func takeTurn(_ name: String, until: Date, now: Date) throws -> Bool {
        try write { connection in
            try connection.fetchOne(
                """
                INSERT INTO checkpoints (name, value, updated_at) VALUES (\(name), \(until), \(now))
                ON CONFLICT (name) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at WHERE checkpoints.value <= \(now)
                RETURNING name
                """
            ) { _ in true } ?? false
        }
    }
}
