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
    /// The check at start found the database damaged. `logBeside`: a write-ahead log with
    /// frames lay beside it (an unclean stop, or a log left by the database that was there
    /// before a copy).
    case damaged(path: String, problems: [String], logBeside: Bool)
    /// The path no longer names the file the daemon opened: it was replaced or removed. `copy`:
    /// where the daemon copied the database it had open.
    case replaced(path: String, copy: String?)
    /// Another process wrote the file while the daemon had it open (a copy over it in place);
    /// the daemon's write-ahead log was moved to `logSetAside`.
    case changedUnderneath(path: String, logSetAside: String?)
    /// `reconcilectl restore` was interrupted: `marker` says what it was doing.
    case restoreInterrupted(path: String, marker: String)
    /// A migration found the database inconsistent and changed nothing.
    case migrationFailed(path: String, version: Int, reason: String)
    /// A row holds a value of a closed set (a state, a kind) this version does not know: a newer
    /// version wrote it, or the row was edited by hand. Never read as a default.
    case unknownValue(table: String, column: String, value: String)
    /// An order leased by this store is no longer in the table (rows are never deleted).
    case orderVanished(reference: Int64)
    /// A write kept losing races for the same unique key (an order id or a transaction claim) and
    /// was given up; nothing was written.
    case persistentConflict(String)

    public var description: String {
        switch self {
        case .foreignDatabase(let path):
            "\(path) is an SQLite database, but not a reconcile store (it has other tables and no schema_migrations); refusing to touch it"
        case .newerSchema(let path, let found, let supported):
            """
            \(path) has schema version \(found), newer than this reconciled supports (\(supported)); run the reconciled that \
            migrated it, or a newer one. Going back instead means restoring a copy taken before that upgrade \
            (\(path).pre-\(supported + 1), or a backup) with `reconcilectl restore`, which loses every change made since \
            the copy: orders taken in, attempts, deliveries and operator actions after it (their spool files are gone)
            """
        case .needsMigration(let path, let found, let latest):
            "\(path) has schema version \(found) and needs migrating to \(latest); start reconciled once to migrate it"
        case .unreadable(let path, let reason):
            "\(path) cannot be read as a reconcile store: \(reason)"
        case .missing(let path):
            "no store at \(path); reconciled creates it when it first starts"
        case .cannotCopy(let path, let reason):
            "cannot write \(path), the copy made before migrating: \(reason); nothing was migrated"
        case .damaged(let path, let problems, let logBeside):
            """
            \(path) fails its integrity check (\(problems.prefix(3).joined(separator: "; "))\(problems.count > 3 ? "; …" : "")); \
            it was left as it is\(logBeside ? ". A write-ahead log (\(path)-wal) from an unclean stop lay beside it: if a backup was copied over the store after a crash, that log belongs to the database that was there before" : ""). \
            Restore a good backup with `reconcilectl restore FILE`, which sets the store and its log aside (docs/operating.md, "Restoring the store")
            """
        case .replaced(let path, let copy):
            """
            \(path) no longer names the database reconciled opened: it was replaced or removed while the daemon ran \
            (a backup copied over it?); nothing more is written to it\(copy.map { ", and the database it had open was copied to \($0) with everything committed to it" } ?? ""). \
            reconciled stops, and opens what \(path) names at its next start; to restore a backup, stop reconciled \
            and use `reconcilectl restore FILE`
            """
        case .changedUnderneath(let path, let logSetAside):
            """
            \(path) was written by another process while reconciled had it open (a backup copied over it in place?); \
            nothing more is written to it\(logSetAside.map { ", and its write-ahead log was moved to \($0)" } ?? ""). \
            reconciled stops; to restore a backup, stop reconciled and use `reconcilectl restore FILE`
            """
        case .restoreInterrupted(let path, let marker):
            """
            a restore of \(path) was interrupted (\(marker) is still there); run `reconcilectl restore FILE` again to finish \
            it: nothing has been deleted, and whatever stood at \(path) is set aside again
            """
        case .migrationFailed(let path, let version, let reason):
            "migration \(version) of \(path) was not applied: \(reason); the database is as it was"
        case .unknownValue(let table, let column, let value):
            "the store's \(table).\(column) holds '\(value.prefix(40))', which this reconciled does not know (written by a newer version, or by hand); nothing was changed"
        case .orderVanished(let reference):
            "the order with reference \(reference) is no longer in the store"
        case .persistentConflict(let what):
            "gave up after repeated conflicts with other nodes: \(what); nothing was written"
        }
    }
}
