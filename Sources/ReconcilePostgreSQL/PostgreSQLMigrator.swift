import ReconcileStore
import Foundation
import ReconcileCore

/// Brings a PostgreSQL database to the newest schema: numbered migrations, recorded in
/// `schema_migrations`, each in its own transaction under a transaction-scoped advisory lock, so
/// that of several daemons starting at once exactly one applies each migration and the others
/// find it applied. Refuses a database migrated by a newer reconciled, and one whose schema holds
/// tables that are not ours.
public struct PostgreSQLMigrator: SchemaMigrating {
    public var migrations: [Migration]

    /// The advisory lock every reconcile migration takes (`pg_advisory_xact_lock`): "reconcil".
    public static let lockKey: Int64 = 0x7265_636F_6E63_696C

    public init(migrations: [Migration] = PostgreSQLSchema.migrations) {
        self.migrations = Self.numbered(migrations)
    }

    /// The database's schema version (in the connection's current schema): 0 when it is empty.
    ///
    /// - Throws: ``PostgreSQLStoreError/foreignDatabase(database:)`` when it holds other tables.
    public func currentVersion(of connection: PostgreSQLConnection) throws -> Int {
        // One statement, so one snapshot: read apart, another node's migration 1 committing
        // between the two counts made a fresh database look foreign.
        let (hasTable, tables) = try connection.queryFirst(
            """
            SELECT count(*) FILTER (WHERE tablename = 'schema_migrations'), count(*)
            FROM pg_catalog.pg_tables WHERE schemaname = current_schema()
            """
        ) { ($0.int64(0), $0.int64(1)) } ?? (0, 0)
        if hasTable == 0 {
            if tables > 0 { throw PostgreSQLStoreError.foreignDatabase(database: connection.options.redactedURI) }
            return 0
        }
        return Int(try connection.scalar("SELECT coalesce(max(version), 0) FROM schema_migrations") ?? 0)
    }

    /// Applies the pending migrations, one transaction each, under the advisory lock.
    ///
    /// - Parameter willApply: called before each migration this call applies.
    /// - Returns: the versions this call applied (none when another node applied them first).
    @discardableResult
    public func migrate(
        _ connection: PostgreSQLConnection, now: Date = Date(), willApply: @Sendable (String) -> Void = { _ in }
    ) throws -> [Int] {
        var applied: [Int] = []
        while true {
            let finished = try connection.transaction { () throws -> Bool in
                // Held to the end of this transaction: the version read below cannot change under us.
                try connection.run("SELECT pg_advisory_xact_lock($1)", [.integer(Self.lockKey)])
                // A migration of a large table may take long, and waits for the lock as long
                // as another node's migration runs.
                try connection.execute("SET LOCAL statement_timeout = 0; SET LOCAL lock_timeout = 0")
                let version = try currentVersion(of: connection)
                try refuseNewer(version, database: connection.options.redactedURI)
                guard let next = migrations.first(where: { $0.version > version }) else { return true }
                willApply("migration \(next.version): \(next.name)")
                if next.version == 1 { try createLedger(connection) }
                try connection.execute(next.sql)
                try record(next, in: connection, now: now)
                applied.append(next.version)
                return false
            }
            if finished { return applied }
        }
    }

    func refuseNewer(_ version: Int, database: String) throws {
        try refuseNewer(version) { PostgreSQLStoreError.newerSchema(database: database, found: $0, supported: $1) }
    }
}
