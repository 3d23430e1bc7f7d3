import ReconcileStore

/// Why `reconcilectl restore` did not install a backup, in words an operator can act on. The
/// store is untouched unless the message says otherwise.
public enum RestoreError: Error, Sendable, Hashable, CustomStringConvertible {
    case backupUnreadable(path: String, reason: String)
    /// An SQLite file without our schema (or an empty one).
    case notAStore(path: String)
    case newerSchema(path: String, found: Int, supported: Int)
    /// `PRAGMA integrity_check` found problems.
    case damaged(path: String, problems: [String])
    /// The backup named is the store itself.
    case backupIsTheStore(path: String)
    /// A step of the installation failed.
    case cannotWrite(path: String, reason: String)

    public var description: String {
        switch self {
        case .backupUnreadable(let path, let reason):
            "cannot read the backup \(path): \(reason); the store is untouched"
        case .notAStore(let path):
            "\(path) is not a reconcile store (no schema_migrations table, or an empty database); the store is untouched"
        case .newerSchema(let path, let found, let supported):
            "\(path) has schema version \(found), newer than this version supports (\(supported)); restore it with the version that wrote it, or a newer one; the store is untouched"
        case .damaged(let path, let problems):
            "\(path) fails its integrity check (\(problems.prefix(3).joined(separator: "; "))\(problems.count > 3 ? "; …" : "")); choose another backup; the store is untouched"
        case .backupIsTheStore(let path):
            "\(path) is the store itself; name a backup"
        case .cannotWrite(let path, let reason):
            "cannot restore: \(path): \(reason)"
        }
    }
}
