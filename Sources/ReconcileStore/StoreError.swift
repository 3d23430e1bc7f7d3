/// Why the store cannot be used, in words an operator can act on.
public enum StoreError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The file holds tables, but not ours.
    case foreignDatabase(path: String)
    /// A newer reconciled wrote this database.
    case newerSchema(path: String, found: Int, supported: Int)
    /// Migrations are pending and this opener may not apply them (only the daemon does).
    case needsMigration(path: String, found: Int, latest: Int)
    /// The file is not an SQLite database, or it is damaged.
    case unreadable(path: String, reason: String)
    /// No database at the path.
    case missing(path: String)
    /// The copy made before migrating could not be written; nothing was migrated.
    case cannotCopy(path: String, reason: String)

    public var description: String {
        switch self {
        case .foreignDatabase(let path):
            "\(path) is an SQLite database, but not a reconcile store (it has other tables and no schema_migrations); refusing to touch it"
        case .newerSchema(let path, let found, let supported):
            "\(path) has schema version \(found), newer than this reconciled supports (\(supported)); run a newer reconciled or restore a backup (\(path).pre-N)"
        case .needsMigration(let path, let found, let latest):
            "\(path) has schema version \(found) and needs migrating to \(latest); start reconciled once to migrate it"
        case .unreadable(let path, let reason):
            "\(path) cannot be read as a reconcile store: \(reason)"
        case .missing(let path):
            "no store at \(path); reconciled creates it when it first starts"
        case .cannotCopy(let path, let reason):
            "cannot write \(path), the copy made before migrating: \(reason); nothing was migrated"
        }
    }
}
