import ReconcileStore
import CSQLite
import Foundation
import Glibc
import ReconcileCore
import Synchronization

/// The SQLite implementation of ``OrderStore`` (DESIGN §7): WAL, `synchronous=FULL`, a busy
/// timeout, numbered migrations, and one connection guarded by a mutex (plus, for the daemon, a
/// read-only one for counts that scan many index entries).
///
/// Each public method is one transaction. Callers that must not block a cooperative thread
/// (the daemon) call it from their own executor.
public final class SQLiteOrderStore: RelationalOrderStore {
    /// Who opens the store, which decides what it may do.
    public enum OpenMode: Sendable, Hashable {
        /// The daemon: creates the file, switches it to WAL and applies migrations (after
        /// copying it aside).
        case owner
        /// `reconcilectl` changing orders while no daemon runs: no creation, no migration.
        case operatorWrite
        /// `reconcilectl`'s read verbs.
        case readOnly
    }

    let connection: Mutex<SQLiteConnection>
    /// Opened on first use by ``withReader(_:)``.
    private let reader = Mutex<SQLiteConnection?>(nil)
    private let busyTimeout: Duration
    public let path: String
    /// The store's own threads (``SerializedStore``).
    public let queue = StoreQueue(label: "reconcile.store.sqlite")
    /// Where the store is, as logs and messages name it.
    public var location: String { path }
    public let mode: OpenMode

    /// Opens (and for the owner, creates and migrates) the store at `path`.
    ///
    /// - Parameter willMigrate: called before each migration step, with what it is about to do.
    /// - Throws: ``StoreError`` for a database that is foreign, newer, damaged or not migrated
    ///   (for non-owners), or ``SQLiteError``.
    public init(
        path: String, mode: OpenMode, busyTimeout: Duration = .seconds(5),
        migrator: SchemaMigrator = SchemaMigrator(), willMigrate: @Sendable (String) -> Void = { _ in }
    ) throws {
        self.path = path
        self.mode = mode
        self.busyTimeout = busyTimeout
        if mode != .owner && !FileManager.default.fileExists(atPath: path) {
            throw StoreError.missing(path: path)
        }
        let files = StoreFiles(database: path)
        if mode != .readOnly && FileManager.default.fileExists(atPath: files.restoreMarker) {
            throw StoreError.restoreInterrupted(path: path, marker: files.restoreMarker)
        }
        var depth: StartupCheck.Depth?
        if mode == .owner {
            // 0640 whatever the umask; and how much to check, decided before SQLite replays a
            // write-ahead log that may not belong to this file.
            try files.prepareForOwner()
            depth = StartupCheck.depth(size: files.databaseSize ?? 0, logHasFrames: files.walHasFrames)
        }
        let (connection, identity) = try Self.open(
            path: path, mode: mode, busyTimeout: busyTimeout, migrator: migrator, depth: depth, files: files, willMigrate: willMigrate)
        self.connection = Mutex(connection)
        opened.withLock { $0 = identity }
    }

    /// Opens, checks and (for the owner) migrates; the file's identity for the owner.
    private static func open(
        path: String, mode: OpenMode, busyTimeout: Duration, migrator: SchemaMigrator, depth: StartupCheck.Depth?,
        files: StoreFiles, willMigrate: @Sendable (String) -> Void
    ) throws -> (SQLiteConnection, FileIdentity?) {
        var opening: SQLiteConnection?
        do {
            let connection = try SQLiteConnection(
                path: path, mode: mode == .readOnly ? .readOnly : .readWrite(create: mode == .owner),
                busyTimeout: busyTimeout)
            opening = connection
            // Look before touching: a foreign, newer or damaged file is refused before anything
            // (even the journal mode) is written to it.
            if depth == .full(logBeside: true), (files.databaseSize ?? 0) > 0 {
                willMigrate("checking the database (PRAGMA quick_check): a write-ahead log from an unclean stop lies beside it")
            }
            let version = try migrator.currentVersion(of: connection)
            try migrator.refuseNewer(version, path: path)
            if let depth, version > 0 {
                let problems = try StartupCheck.problems(connection, depth: depth, fileSize: files.databaseSize)
                if !problems.isEmpty {
                    throw StoreError.damaged(path: path, problems: problems, logBeside: depth == .full(logBeside: true))
                }
            }
            if mode == .owner, version == 0, try connection.scalar("SELECT count(*) FROM sqlite_master") == 0 {
                // A new store gives the pages pruning frees back to the filesystem
                // (`pruneFinished` runs `PRAGMA incremental_vacuum`); only possible before the
                // first table exists.
                try connection.execute("PRAGMA auto_vacuum = INCREMENTAL")
            }
            if mode == .owner {
                let journalMode = try connection.queryFirst("PRAGMA journal_mode = WAL") { $0.string(0) }
                guard journalMode?.lowercased() == "wal" else {
                    throw StoreError.unreadable(path: path, reason: "cannot switch to WAL (journal_mode is \(journalMode ?? "unknown"))")
                }
            }
            // Receipts are money: a commit survives power loss (DESIGN §7).
            try connection.execute("PRAGMA synchronous = FULL")
            if mode == .owner {
                try migrator.migrate(connection, backup: true, willApply: willMigrate)
            } else if version < migrator.latestVersion {
                throw StoreError.needsMigration(path: path, found: version, latest: migrator.latestVersion)
            }
        } catch {
            // Refused: closing must not copy a write-ahead log that may not belong to the file
            // into it (nor delete it); both stay as they were found.
            opening?.keepLogOnClose()
            if let error = error as? SQLiteError, error.isCorrupt, depth == .full(logBeside: true) {
                // Unreadable only with the write-ahead log beside it: most likely another
                // database's log (a backup copied over the store after a crash).
                throw StoreError.damaged(path: path, problems: [error.message], logBeside: true)
            }
            if let error = error as? SQLiteError, error.isNotADatabase || error.isCorrupt {
                throw StoreError.unreadable(path: path, reason: error.message)
            }
            throw error
        }
        guard let connection = opening else { throw StoreError.missing(path: path) }
        let identity = mode == .owner && !connection.databaseHasMoved
            ? FileIdentity(path: path, header: connection.readDatabaseFile() ?? []) : nil
        return (connection, identity)
    }

    // MARK: - The file under the daemon

    /// The database file as the owner last left it: after opening, and after each commit.
    private let opened = Mutex<FileIdentity?>(nil)
    /// Set once the path no longer names that file, or another process wrote it.
    private let lost = Mutex<StoreError?>(nil)
    private let lossHandler = Mutex<(@Sendable (StoreError) -> Void)?>(nil)

    /// Calls `handler` (once) when the store notices that its file was replaced or written by
    /// another process; from then on every write fails with that error. The daemon stops.
    public func onLoss(_ handler: @escaping @Sendable (StoreError) -> Void) {
        lossHandler.withLock { $0 = handler }
    }

    /// The error the store stopped writing for, if it did.
    public var loss: StoreError? { lost.withLock { $0 } }

    /// Checks that the path still names the file the owner opened, with the size and header its
    /// last commit left (a `stat` and a 100-byte read). Writes do it first; the daemon also does
    /// it for `status`.
    public func verifyFile() throws {
        guard mode == .owner else { return }
        try withConnection { connection in try verifyFile(connection) }
    }

    /// The check, under the connection's lock.
    private func verifyFile(_ connection: SQLiteConnection) throws {
        guard mode == .owner else { return }
        if let lost = lost.withLock({ $0 }) { throw lost }
        guard let known = opened.withLock({ $0 }) else { return }
        let now = FileIdentity(path: path, header: connection.readDatabaseFile() ?? [])
        let failure: StoreError
        let stamp = StoreRestore.stamp(Date())
        if connection.databaseHasMoved || now.map({ !$0.isSameFile(as: known) }) ?? true {
            // Replaced (or removed): the daemon still has the database it opened, whole, with
            // its log. A copy of it is written beside, so that nothing committed to it is lost,
            // and its log goes aside: SQLite leaves a moved database's log where it is, and
            // the next start would replay it over the new file.
            let copy = "\(path).replaced-\(stamp)"
            let copied = FileManager.default.createFile(atPath: copy, contents: nil, attributes: [.posixPermissions: 0o600])
                && (try? connection.run("VACUUM INTO ?", [.text(copy)])) != nil
            if !copied { unlink(copy) }
            Self.setLogAside(path: path, stamp: stamp, connection: connection)
            failure = .replaced(path: path, copy: copied ? copy : nil)
        } else if let now, !now.isUnchanged(since: known) {
            // Overwritten in place: the log must not be copied into the new contents, nor
            // replayed over them at the next start. It goes aside, for the record.
            let aside = Self.setLogAside(path: path, stamp: stamp, connection: connection)
            failure = .changedUnderneath(path: path, logSetAside: aside)
        } else {
            return
        }
        lost.withLock { $0 = failure }
        lossHandler.withLock { $0 }?(failure)
        throw failure
    }

    /// Copies the log into the file now (`PRAGMA wal_checkpoint(TRUNCATE)`); the daemon leaves
    /// this to SQLite's automatic checkpoints at commit, tests call it.
    func checkpoint() throws {
        try withConnection { connection in
            try verifyFile(connection)
            try connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            recordFile(connection)
        }
    }

    /// Renames the log and the shared-memory index to `PATH-wal.STAMP.stale` and
    /// `PATH-shm.STAMP.stale`; closing then leaves them alone. Returns the log's new name.
    @discardableResult
    private static func setLogAside(path: String, stamp: String, connection: SQLiteConnection) -> String? {
        connection.keepLogOnClose()
        let files = StoreFiles(database: path)
        let aside = "\(path)-wal.\(stamp).stale"
        let moved = rename(files.wal, aside) == 0
        _ = rename(files.shm, "\(path)-shm.\(stamp).stale")
        return moved ? aside : nil
    }

    /// Remembers the file as this commit left it.
    private func recordFile(_ connection: SQLiteConnection) {
        guard mode == .owner, lost.withLock({ $0 == nil }) else { return }
        opened.withLock { $0 = FileIdentity(path: path, header: connection.readDatabaseFile() ?? []) ?? $0 }
    }

    /// Runs `body` with the connection, under the store's lock.
    public func withConnection<T: Sendable>(_ body: (SQLiteConnection) throws -> T) throws -> T {
        // On the store's writer: an fsync waits there, whoever asked.
        try queue.serially { try connection.withLock { connection in try body(connection) } }
    }

    /// Runs `body` with a read-only connection of its own. In WAL mode it reads a snapshot
    /// without the store's lock, so a long count (the STATUS line's, over a million pending
    /// orders) never holds up a commit. Read-only stores use their one connection.
    public func withReader<T: Sendable>(_ body: (SQLiteConnection) throws -> T) throws -> T {
        guard mode != .readOnly else { return try withConnection(body) }
        return try reader.withLock { reader in
            if reader == nil {
                reader = try SQLiteConnection(path: path, mode: .readOnly, busyTimeout: busyTimeout)
            }
            return try body(reader!)
        }
    }

    /// Runs `body` in one read snapshot of the store's connection.
    public func readSnapshot<T: Sendable>(_ body: (SQLiteConnection) throws -> T) throws -> T {
        try withConnection { connection in try connection.readTransaction { try body(connection) } }
    }

    /// Runs `body` in a write transaction, after checking that the file is still the one opened.
    public func write<T: Sendable>(_ body: (SQLiteConnection) throws -> T) throws -> T {
        try withConnection { connection in
            try verifyFile(connection)
            let result = try connection.transaction { try body(connection) }
            recordFile(connection)
            return result
        }
    }

    /// Closes the connection; the store cannot be used afterwards.
    public func close() {
        reader.withLock { $0?.close() }
        connection.withLock { $0.close() }
    }

    // MARK: - Diagnostics

    /// The query plan SQLite chooses for `statement`, its values bound.
    public func queryPlan(_ statement: SQLStatement) throws -> [String] {
        let (sql, values) = statement.render(.sqlite)
        return try queryPlan(sql, values.map(SQLiteValue.init))
    }

    /// The query plan SQLite chooses for `sql`, one detail line per step (for tests that prove
    /// an index is used).
    public func queryPlan(_ sql: String, _ parameters: [SQLiteValue] = []) throws -> [String] {
        try withConnection { connection in
            try connection.query("EXPLAIN QUERY PLAN " + sql, parameters) { $0.string(3) }
        }
    }
}

extension SQLiteOrderStore {
    /// The due-order selection of `kind` as SQLite runs it (for tests that prove its index).
    static func dueOrdersSQL(_ kind: WorkKind) -> String {
        dueOrders(kind, now: Date(), limit: 1).render(.sqlite).sql
    }

    /// The count by state as SQLite runs it (for tests that prove its index).
    static var countsSQL: String { countsStatement.render(.sqlite).sql }


    /// The oldest order of one state (bound) as SQLite runs it (for tests that prove its index).
    static var oldestReceivedSQL: String { oldestReceived("pending").render(.sqlite).sql }

    /// Appends one transition to an order's history, inside the caller's transaction (tests
    /// that build histories by hand).
    static func recordTransition(
        _ connection: SQLiteConnection, orderRef: Int64, at: Date, actor: TransitionActor, from: OrderState?,
        to: OrderState, reason: ReasonCode, detail: String? = nil, attemptRef: Int64? = nil
    ) throws {
        try StoreTransaction(connection).insertTransition(
            orderReference: orderRef, at: at, actor: actor, from: from, to: to, reason: reason, detail: detail, attemptReference: attemptRef)
    }

    /// The ids of up to `limit` orders of `kind` due at `now`, earliest first (without leasing).
    public func dueOrderIDs(_ kind: WorkKind = .verify, at now: Date, limit: Int) throws -> [String] {
        try withConnection { connection in
            try connection.fetchAll(Self.dueOrders(kind, now: now, limit: limit)) { try OrderColumns.record(from: $0).orderID }
        }
    }
}
