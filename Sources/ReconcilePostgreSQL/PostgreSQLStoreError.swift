import ReconcileStore

/// Why a PostgreSQL database cannot be used as the store, in words an operator can act on. The
/// database is named by its redacted URI (never the password).
public enum PostgreSQLStoreError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The database's schema holds tables, but not ours.
    case foreignDatabase(database: String)
    /// A newer reconciled migrated this database.
    case newerSchema(database: String, found: Int, supported: Int)
    /// Migrations are pending and this opener may not apply them.
    case needsMigration(database: String, found: Int, latest: Int)

    public var description: String {
        switch self {
        case .foreignDatabase(let database):
            "\(database) holds tables, but is not a reconcile store (it has no schema_migrations); refusing to touch it"
        case .newerSchema(let database, let found, let supported):
            "\(database) has schema version \(found), newer than this reconciled supports (\(supported)); run a newer reconciled"
        case .needsMigration(let database, let found, let latest):
            "\(database) has schema version \(found) and needs migrating to \(latest); start reconciled once to migrate it"
        }
    }
}
