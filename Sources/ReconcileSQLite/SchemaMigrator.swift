import ReconcileStore
import Foundation
import ReconcileCore

/// Brings a database to the newest schema: numbered migrations, recorded in
/// `schema_migrations`, each in its own transaction, after copying the database aside.
///
/// Refuses a database written by a newer reconciled, and a database that is not one of ours.
public struct SchemaMigrator: SchemaMigrating {
    public var migrations: [Migration]

    public init(migrations: [Migration] = StoreSchema.migrations) {
        self.migrations = Self.numbered(migrations)
    }

    /// The database's schema version: 0 for an empty database.
    ///
    /// - Throws: ``StoreError`` when the file is not a reconcile database.
    public func currentVersion(of connection: SQLiteConnection) throws -> Int {
        let hasTable = try connection.scalar(
            "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'") ?? 0
        if hasTable == 0 {
            let otherTables = try connection.scalar(
                "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'") ?? 0
            if otherTables > 0 {
                throw StoreError.foreignDatabase(path: connection.path)
            }
            return 0
        }
        return Int(try connection.scalar("SELECT max(version) FROM schema_migrations") ?? 0)
    }

    /// Whether migrations are pending.
    public func needsMigration(_ connection: SQLiteConnection) throws -> Bool {
        let version = try currentVersion(of: connection)
        try refuseNewer(version, path: connection.path)
        return version < latestVersion
    }

    /// Applies the pending migrations.
    ///
    /// - Parameters:
    ///   - backup: copy a non-empty database to `PATH.pre-N` (N = the first pending version)
    ///     with `VACUUM INTO` before changing it.
    ///   - willApply: called before the backup and before each migration (the daemon extends
    ///     its start-up timeout there).
    /// - Returns: the versions applied.
    @discardableResult
    public func migrate(
        _ connection: SQLiteConnection, backup: Bool = true, now: Date = Date(),
        willApply: @Sendable (String) -> Void = { _ in }
    ) throws -> [Int] {
        let version = try currentVersion(of: connection)
        try refuseNewer(version, path: connection.path)
        let pending = migrations.filter { $0.version > version }
        guard !pending.isEmpty else { return [] }
        if backup && version > 0 {
            let copy = "\(connection.path).pre-\(pending[0].version)"
            willApply("copying the database to \(copy)")
            if FileManager.default.fileExists(atPath: copy) {
                try FileManager.default.removeItem(atPath: copy)
            }
            // Receipts are in it: 0600, whatever the umask (VACUUM INTO fills an empty file).
            guard FileManager.default.createFile(atPath: copy, contents: nil, attributes: [.posixPermissions: 0o600]) else {
                throw StoreError.cannotCopy(path: copy, reason: String(cString: strerror(errno)))
            }
            try connection.run("VACUUM INTO ?", [.text(copy)])
        }
        for migration in pending {
            willApply("migration \(migration.version): \(migration.name)")
            // Not inside a transaction: SQLite ignores this pragma there.
            if migration.rebuildsTables { try connection.execute("PRAGMA foreign_keys = OFF") }
            defer { if migration.rebuildsTables { try? connection.execute("PRAGMA foreign_keys = ON") } }
            try connection.transaction {
                if migration.version == 1 { try createLedger(connection) }
                try connection.execute(migration.sql)
                if migration.rebuildsTables {
                    let broken = try connection.query("PRAGMA foreign_key_check") { $0.string(0) }
                    guard broken.isEmpty else {
                        throw StoreError.migrationFailed(
                            path: connection.path, version: migration.version, reason: "rows of \(Set(broken).sorted().joined(separator: ", ")) refer to orders that are gone")
                    }
                }
                try record(migration, in: connection, now: now)
                try connection.execute("PRAGMA user_version = \(migration.version)")
            }
        }
        return pending.map(\.version)
    }

    func refuseNewer(_ version: Int, path: String) throws {
        try refuseNewer(version) { StoreError.newerSchema(path: path, found: $0, supported: $1) }
    }
}
