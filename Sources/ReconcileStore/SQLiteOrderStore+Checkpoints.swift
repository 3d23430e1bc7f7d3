import Foundation
import ReconcileCore

/// Polling checkpoints in SQLite (schema version 7): a row per name, its time in milliseconds.
extension SQLiteOrderStore: CheckpointStore {
    public func checkpoint(_ name: String) throws -> Date? {
        try withConnection { connection in
            try connection.scalar("SELECT value FROM checkpoints WHERE name = ?", [.text(name)]).map(Date.init(epochMilliseconds:))
        }
    }

    public func advanceCheckpoint(_ name: String, to value: Date, now: Date) throws {
        try write { connection in
            try connection.run(
                """
                INSERT INTO checkpoints (name, value, updated_at) VALUES (?, ?, ?)
                ON CONFLICT (name) DO UPDATE SET value = max(checkpoints.value, excluded.value), updated_at = excluded.updated_at
                """, [.text(name), .integer(value.epochMilliseconds), .integer(now.epochMilliseconds)])
        }
    }

    public func takeTurn(_ name: String, until: Date, now: Date) throws -> Bool {
        try write { connection in
            try connection.run(
                """
                INSERT INTO checkpoints (name, value, updated_at) VALUES (?, ?, ?)
                ON CONFLICT (name) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at WHERE checkpoints.value <= ?
                """, [.text(name), .integer(until.epochMilliseconds), .integer(now.epochMilliseconds), .integer(now.epochMilliseconds)])
            return connection.changes == 1
        }
    }
}
