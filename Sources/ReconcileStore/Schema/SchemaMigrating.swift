import Foundation
import ReconcileCore

/// What both engines' migrators share: migrations numbered 1, 2, 3, … with no gap, the newest
/// version they bring a store to, and the refusal of a store written by a newer reconciled.
/// How a migration is applied (SQLite's copy aside and table rebuilds; PostgreSQL's advisory
/// lock across nodes) stays each engine's own.
public protocol SchemaMigrating: Sendable {
    /// In version order, the first being 1.
    var migrations: [Migration] { get }
}

extension SchemaMigrating {
    /// The newest version this migrator knows.
    public var latestVersion: Int { migrations.last?.version ?? 0 }

    /// `migrations`, checked to be numbered 1, 2, 3, … (a programming error otherwise).
    public static func numbered(_ migrations: [Migration]) -> [Migration] {
        precondition(
            migrations.enumerated().allSatisfy { $0.offset + 1 == $0.element.version },
            "migrations must be numbered 1, 2, 3, …")
        return migrations
    }

    /// Throws `newer(found, latestVersion)` when the store's version is newer than this
    /// migrator knows: a newer reconciled wrote it, and this one must not touch it.
    public func refuseNewer(_ version: Int, _ newer: (_ found: Int, _ supported: Int) -> any Error) throws {
        if version > latestVersion { throw newer(version, latestVersion) }
    }

    /// Creates the table of applied migrations, before migration 1 (in its transaction).
    public func createLedger(_ connection: some RelationalConnection) throws {
        try connection.perform(
            """
            CREATE TABLE IF NOT EXISTS schema_migrations (
                version integer PRIMARY KEY,
                name text NOT NULL,
                applied_at bigint NOT NULL
            )
            """)
    }

    /// Records `migration` as applied (in its transaction).
    public func record(_ migration: Migration, in connection: some RelationalConnection, now: Date) throws {
        try connection.perform(
            "INSERT INTO schema_migrations (version, name, applied_at) VALUES (\(migration.version), \(migration.name), \(now))")
    }
}
