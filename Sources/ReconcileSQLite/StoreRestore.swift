import ReconcileStore
import Foundation
import Glibc

/// `reconcilectl restore FILE`: puts a backup in the store's place while no daemon runs
/// (DESIGN §10). Nothing is deleted: the store and its `-wal` and `-shm` are set aside together,
/// under one name, so that they still open as the database they were.
///
/// The caller holds the store's lock (`orders.db.lock`), which keeps a daemon from starting
/// meanwhile; a marker file (`orders.db.restoring`) keeps one from opening a half-done restore
/// after a crash.
public enum StoreRestore {
    /// What the backup holds.
    public struct BackupInfo: Sendable, Hashable {
        public var schemaVersion: Int
        public var orders: Int
    }

    /// What a restore did.
    public struct Outcome: Sendable, Hashable {
        public var backup: BackupInfo
        /// The files set aside, database first (none for a store that did not exist).
        public var setAside: [String]
    }

    /// Checks that `backup` is a reconcile store this version can use: a regular file, an SQLite
    /// database with our schema (not a newer one) that passes `PRAGMA integrity_check`.
    public static func check(backup: String, migrator: SchemaMigrator = SchemaMigrator()) throws(RestoreError) -> BackupInfo {
        var info = stat()
        guard stat(backup, &info) == 0 else { throw .backupUnreadable(path: backup, reason: String(cString: strerror(errno))) }
        guard info.st_mode & S_IFMT == S_IFREG else { throw .backupUnreadable(path: backup, reason: "not a regular file") }
        do {
            let connection = try SQLiteConnection(path: backup, mode: .readOnly)
            defer { connection.close() }
            let version: Int
            do {
                version = try migrator.currentVersion(of: connection)
            } catch let error as StoreError {
                if case .foreignDatabase = error { throw RestoreError.notAStore(path: backup) }
                throw error
            }
            guard version > 0 else { throw RestoreError.notAStore(path: backup) }
            guard version <= migrator.latestVersion else {
                throw RestoreError.newerSchema(path: backup, found: version, supported: migrator.latestVersion)
            }
            let lines = try connection.query("PRAGMA integrity_check(20)") { $0.optionalString(0) ?? "" }
            guard lines == ["ok"] else {
                throw RestoreError.damaged(path: backup, problems: lines.flatMap { $0.split(separator: "\n").map(String.init) })
            }
            let orders = Int(try connection.scalar("SELECT count(*) FROM orders") ?? 0)
            return BackupInfo(schemaVersion: version, orders: orders)
        } catch let error as RestoreError {
            throw error
        } catch let error as SQLiteError {
            if error.isNotADatabase || error.isCorrupt { throw .damaged(path: backup, problems: [error.message]) }
            throw .backupUnreadable(path: backup, reason: error.description)
        } catch {
            throw .backupUnreadable(path: backup, reason: String(describing: error))
        }
    }

    /// Checks `backup`, then installs a copy of it as `database`: the copy is written beside the
    /// store (`VACUUM INTO`: consistent, compact, with the backup's own log if it has one, and
    /// set to give freed pages back), synced, given `owner` and mode 0640; then the store, its
    /// `-wal` and its `-shm` are renamed aside to `DATABASE.replaced-STAMP` (`-wal`, `-shm`) and
    /// the copy renamed into place.
    ///
    /// - Parameter owner: user and group for the new file (root gives them; `nil` keeps the
    ///   caller's).
    public static func install(
        backup: String, database: String, owner: (uid: uid_t, gid: gid_t)?, now: Date = Date(),
        migrator: SchemaMigrator = SchemaMigrator(), progress: @escaping (_ written: String) -> Void = { _ in }
    ) throws(RestoreError) -> Outcome {
        let files = StoreFiles(database: database)
        let directory = (database as NSString).deletingLastPathComponent
        if let source = FileIdentity(path: backup), let current = FileIdentity(path: database), source.isSameFile(as: current) {
            throw .backupIsTheStore(path: backup)
        }
        let checked = try check(backup: backup, migrator: migrator)

        // 1. The copy, complete and synced, under a temporary name.
        let temporary = database + ".restore.tmp"
        unlink(temporary)  // left by an interrupted restore; never the store itself
        let created = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, StoreFiles.mode)
        guard created >= 0 else { throw .cannotWrite(path: temporary, reason: String(cString: strerror(errno))) }
        fchmod(created, StoreFiles.mode)
        if let owner, fchown(created, owner.uid, owner.gid) != 0 {
            let reason = String(cString: strerror(errno))
            close(created)
            unlink(temporary)
            throw .cannotWrite(path: temporary, reason: "chown: \(reason)")
        }
        close(created)
        do {
            let source = try SQLiteConnection(path: backup, mode: .readOnly)
            defer { source.close() }
            // Setting it on a store that has it already would write (and this is read-only).
            if try source.scalar("PRAGMA auto_vacuum") == 0 { try source.execute("PRAGMA auto_vacuum = INCREMENTAL") }
            try source.withProgress({ progress(temporary) }) { try source.run("VACUUM INTO ?", [.text(temporary)]) }
            try sync(temporary)
            let copy = try SQLiteConnection(path: temporary, mode: .readOnly)
            defer { copy.close() }
            let orders = Int(try copy.scalar("SELECT count(*) FROM orders") ?? -1)
            guard orders == checked.orders else {
                throw RestoreError.cannotWrite(path: temporary, reason: "the copy holds \(orders) orders, the backup \(checked.orders)")
            }
        } catch {
            unlink(temporary)
            if let error = error as? RestoreError { throw error }
            throw .cannotWrite(path: temporary, reason: String(describing: error))
        }

        // 2. The marker, then the store and its log aside, then the copy in place.
        let stamp = Self.stamp(now)
        var base = "\(database).replaced-\(stamp)"
        var suffix = 1
        while ["", "-wal", "-shm"].contains(where: { FileManager.default.fileExists(atPath: base + $0) }) {
            suffix += 1
            base = "\(database).replaced-\(stamp)-\(suffix)"
        }
        do {
            try writeSynced(files.restoreMarker, "restoring \(backup) over \(database); the store set aside as \(base)\n")
            try sync(directory)
        } catch {
            unlink(temporary)
            throw error
        }
        var setAside: [String] = []
        for (path, tail) in [(files.database, ""), (files.wal, "-wal"), (files.shm, "-shm")] where FileManager.default.fileExists(atPath: path) {
            guard rename(path, base + tail) == 0 else {
                throw .cannotWrite(path: path, reason: "rename to \(base + tail): \(String(cString: strerror(errno)))")
            }
            setAside.append(base + tail)
        }
        guard rename(temporary, database) == 0 else {
            throw .cannotWrite(path: database, reason: "rename from \(temporary): \(String(cString: strerror(errno)))")
        }
        try sync(directory)
        unlink(files.restoreMarker)
        try sync(directory)
        return Outcome(backup: checked, setAside: setAside)
    }

    /// `20261130T072606Z`: a UTC time for file names.
    public static func stamp(_ date: Date) -> String {
        var seconds = time_t(date.timeIntervalSince1970.rounded(.down))
        var parts = tm()
        gmtime_r(&seconds, &parts)
        return String(
            format: "%04d%02d%02dT%02d%02d%02dZ", Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1, Int(parts.tm_mday),
            Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec))
    }

    static func sync(_ path: String) throws(RestoreError) {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw .cannotWrite(path: path, reason: "open: \(String(cString: strerror(errno)))") }
        defer { close(descriptor) }
        guard fsync(descriptor) == 0 else { throw .cannotWrite(path: path, reason: "fsync: \(String(cString: strerror(errno)))") }
    }

    static func writeSynced(_ path: String, _ text: String) throws(RestoreError) {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0o640)
        guard descriptor >= 0 else { throw .cannotWrite(path: path, reason: String(cString: strerror(errno))) }
        defer { close(descriptor) }
        let bytes = Array(text.utf8)
        guard bytes.withUnsafeBytes({ write(descriptor, $0.baseAddress, $0.count) }) == bytes.count, fsync(descriptor) == 0 else {
            throw .cannotWrite(path: path, reason: String(cString: strerror(errno)))
        }
    }
}
