import Foundation
import ReconcileCore

/// Polling checkpoints on the shared store (schema version 7), as SQLite keeps them; a node that
/// finishes a poll after another never moves the checkpoint back.
extension PostgreSQLOrderStore: CheckpointStore {
    public func checkpoint(_ name: String) throws -> Date? {
        try withConnection { connection in
            try connection.queryFirst("SELECT value FROM checkpoints WHERE name = $1", [.text(name)]) { $0.int64(0) }.map(Date.init(epochMilliseconds:))
        }
    }

    public func advanceCheckpoint(_ name: String, to value: Date, now: Date) throws {
        try write { connection in
            _ = try connection.run(
                """
                INSERT INTO checkpoints (name, value, updated_at) VALUES ($1, $2, $3)
                ON CONFLICT (name) DO UPDATE SET value = GREATEST(checkpoints.value, EXCLUDED.value), updated_at = EXCLUDED.updated_at
                """, [.text(name), .integer(value.epochMilliseconds), .integer(now.epochMilliseconds)])
        }
    }

    public func takeTurn(_ name: String, until: Date, now: Date) throws -> Bool {
        try write { connection in
            try connection.queryFirst(
                """
                INSERT INTO checkpoints (name, value, updated_at) VALUES ($1, $2, $3)
                ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value, updated_at = EXCLUDED.updated_at WHERE checkpoints.value <= $3
                RETURNING name
                """, [.text(name), .integer(until.epochMilliseconds), .integer(now.epochMilliseconds)]) { _ in true } ?? false
        }
    }
}
