import ReconcileStore
import CSQLite

/// One SQLite connection: statements cached by SQL text, parameters always bound, writes in
/// closure-scoped `BEGIN IMMEDIATE` transactions.
///
/// Not thread-safe by itself (opened with `SQLITE_OPEN_NOMUTEX`): the owner confines it, as
/// ``SQLiteOrderStore`` does behind a mutex.
public final class SQLiteConnection {
    /// How to open the file.
    public enum Mode: Sendable {
        /// Read and write; create the file when `create` is true.
        case readWrite(create: Bool)
        /// Read only: for `reconcilectl`'s read verbs.
        case readOnly
    }

    let handle: OpaquePointer
    public let path: String
    private var statements: [String: SQLiteStatement] = [:]
    /// The same statements, found by the identity of the template they came from (no hashing of
    /// the SQL text on the hot path).
    private var keyed: [ObjectIdentifier: SQLiteStatement] = [:]
    private var inTransaction = false
    private var isClosed = false

    /// Opens `path` and sets the connection up: extended result codes, `busy_timeout`,
    /// double-quoted string literals off, defensive mode, foreign keys on.
    public init(path: String, mode: Mode, busyTimeout: Duration = .seconds(5)) throws {
        var pointer: OpaquePointer?
        var flags = SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE
        switch mode {
        case .readWrite(let create): flags |= SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0)
        case .readOnly: flags |= SQLITE_OPEN_READONLY
        }
        let result = sqlite3_open_v2(path, &pointer, flags, nil)
        guard result == SQLITE_OK, let pointer else {
            // > Whether or not an error occurs when it is opened, resources associated with the
            // > database connection handle should be released by passing it to sqlite3_close().
            let message = pointer.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            let systemErrno = pointer.map { sqlite3_system_errno($0) }
            if let pointer { sqlite3_close_v2(pointer) }
            throw SQLiteError(extendedCode: result, message: "cannot open \(path): \(message)", systemErrno: systemErrno)
        }
        self.handle = pointer
        self.path = path
        sqlite3_extended_result_codes(handle, 1)
        let (seconds, attoseconds) = busyTimeout.components
        sqlite3_busy_timeout(handle, Int32(clamping: seconds * 1000 + attoseconds / 1_000_000_000_000_000))
        _ = reconcile_sqlite_disable_dqs(handle)
        _ = reconcile_sqlite_enable_defensive(handle)
        try execute("PRAGMA foreign_keys = ON")
    }

    deinit {
        close()
    }

    /// Finalises every cached statement and closes the connection.
    public func close() {
        guard !isClosed else { return }
        isClosed = true
        keyed.removeAll()
        statements.removeAll()
        sqlite3_close_v2(handle)
    }

    /// Runs SQL text without parameters (schema scripts, pragmas); several statements allowed.
    public func execute(_ sql: String) throws {
        var message: UnsafeMutablePointer<CChar>?
        let result = sqlite3_exec(handle, sql, nil, nil, &message)
        if result != SQLITE_OK {
            let text = message.map { String(cString: $0) } ?? String(cString: sqlite3_errmsg(handle))
            sqlite3_free(message)
            throw SQLiteError(extendedCode: sqlite3_extended_errcode(handle), message: text, sql: sql, systemErrno: sqlite3_system_errno(handle))
        }
    }

    /// Runs `body` with `tick` called every `instructions` virtual-machine steps of the
    /// statements it runs (`sqlite3_progress_handler`), on this thread: a progress line during a
    /// long `VACUUM INTO`. `tick` only looks; it cannot interrupt.
    public func withProgress<T>(every instructions: Int32 = 100_000, _ tick: @escaping () -> Void, _ body: () throws -> T) throws -> T {
        let context = Unmanaged.passRetained(ProgressTick(tick)).toOpaque()
        sqlite3_progress_handler(handle, instructions, { pointer in
            guard let pointer else { return 0 }
            Unmanaged<ProgressTick>.fromOpaque(pointer).takeUnretainedValue().tick()
            return 0
        }, context)
        defer {
            sqlite3_progress_handler(handle, 0, nil, nil)
            Unmanaged<ProgressTick>.fromOpaque(context).release()
        }
        return try body()
    }

    /// Runs one statement to completion.
    public func run(_ sql: String, _ parameters: [SQLiteValue] = [], key: ObjectIdentifier? = nil) throws {
        let statement = try prepared(sql, key: key)
        defer { statement.finish() }
        try statement.bind(parameters)
        while try statement.step() {}
    }

    /// Runs a query and maps each row.
    public func query<T>(
        _ sql: String, _ parameters: [SQLiteValue] = [], key: ObjectIdentifier? = nil, _ map: (SQLiteRow) throws -> T
    ) throws -> [T] {
        let statement = try prepared(sql, key: key)
        defer { statement.finish() }
        try statement.bind(parameters)
        var rows: [T] = []
        while try statement.step() {
            rows.append(try map(SQLiteRow(handle: statement.handle)))
        }
        return rows
    }

    /// The first row of a query, mapped, or `nil`.
    public func queryFirst<T>(
        _ sql: String, _ parameters: [SQLiteValue] = [], key: ObjectIdentifier? = nil, _ map: (SQLiteRow) throws -> T
    ) throws -> T? {
        let statement = try prepared(sql, key: key)
        defer { statement.finish() }
        try statement.bind(parameters)
        guard try statement.step() else { return nil }
        return try map(SQLiteRow(handle: statement.handle))
    }

    /// A single integer (a count), or `nil` when the query returns no row or NULL.
    public func scalar(_ sql: String, _ parameters: [SQLiteValue] = []) throws -> Int64? {
        try queryFirst(sql, parameters) { $0.optionalInt64(0) } ?? nil
    }

    /// Runs `body` in a `BEGIN IMMEDIATE` transaction: committed when it returns, rolled back
    /// when it throws.
    ///
    /// `IMMEDIATE` takes the write lock up front, so a busy database waits (up to the busy
    /// timeout) at `BEGIN` instead of failing half-way through with `SQLITE_BUSY`.
    public func transaction<T>(_ body: () throws -> T) throws -> T {
        precondition(!inTransaction, "nested transactions are not supported")
        try run("BEGIN IMMEDIATE")
        inTransaction = true
        defer { inTransaction = false }
        let result: T
        do {
            result = try body()
        } catch {
            try? run("ROLLBACK")
            throw error
        }
        do {
            try run("COMMIT")
        } catch {
            try? run("ROLLBACK")
            throw error
        }
        return result
    }

    /// Runs `body` in a deferred (read) transaction, so that several queries see one snapshot.
    public func readTransaction<T>(_ body: () throws -> T) throws -> T {
        precondition(!inTransaction, "nested transactions are not supported")
        try run("BEGIN DEFERRED")
        inTransaction = true
        defer { inTransaction = false }
        do {
            let result = try body()
            try run("COMMIT")
            return result
        } catch {
            try? run("ROLLBACK")
            throw error
        }
    }

    /// Rows changed by the last INSERT, UPDATE or DELETE.
    public var changes: Int { Int(sqlite3_changes(handle)) }

    public var lastInsertRowID: Int64 { sqlite3_last_insert_rowid(handle) }

    /// Whether the path this connection opened no longer names the open database file
    /// (`SQLITE_FCNTL_HAS_MOVED`: removed, or replaced by another file).
    public var databaseHasMoved: Bool {
        var moved: Int32 = 0
        guard sqlite3_file_control(handle, "main", SQLITE_FCNTL_HAS_MOVED, &moved) == SQLITE_OK else { return false }
        return moved != 0
    }

    /// The first `count` bytes of the database file, read through SQLite's own open file
    /// (`SQLITE_FCNTL_FILE_POINTER`, then the VFS's `xRead`). Never open and close the database
    /// file beside SQLite in the same process: closing any descriptor of a file drops every POSIX
    /// lock the process holds on it, SQLite's included.
    public func readDatabaseFile(count: Int = 100) -> [UInt8]? {
        var file: UnsafeMutablePointer<sqlite3_file>?
        guard sqlite3_file_control(handle, "main", SQLITE_FCNTL_FILE_POINTER, &file) == SQLITE_OK, let file,
            let methods = file.pointee.pMethods, let read = methods.pointee.xRead
        else { return nil }
        var bytes = [UInt8](repeating: 0, count: count)
        let result = bytes.withUnsafeMutableBytes { read(file, $0.baseAddress, Int32(count), 0) }
        // A short read (a file shorter than `count`) fills the rest with zeros: still comparable.
        guard result == SQLITE_OK || result == Self.SQLITE_IOERR_SHORT_READ_VALUE else { return nil }
        return bytes
    }

    /// `SQLITE_IOERR_SHORT_READ`, a macro Swift does not import.
    static let SQLITE_IOERR_SHORT_READ_VALUE = SQLITE_IOERR | (2 << 8)

    /// Makes closing leave the write-ahead log alone (`SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE`).
    public func keepLogOnClose() {
        _ = reconcile_sqlite_no_checkpoint_on_close(handle)
    }

    /// Makes a running statement stop with `SQLITE_INTERRUPT` (safe from another thread).
    public func interrupt() {
        sqlite3_interrupt(handle)
    }

    /// The cached statement for `sql` (found by `key` when given), prepared once with
    /// `SQLITE_PREPARE_PERSISTENT`.
    func prepared(_ sql: String, key: ObjectIdentifier? = nil) throws -> SQLiteStatement {
        if let key, let cached = keyed[key] { return cached }
        if let cached = statements[sql] {
            if let key { keyed[key] = cached }
            return cached
        }
        var pointer: OpaquePointer?
        let result = sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &pointer, nil)
        guard result == SQLITE_OK, let pointer else {
            throw error(result, sql: sql)
        }
        let statement = SQLiteStatement(handle: pointer, sql: sql, connection: self)
        statements[sql] = statement
        if let key { keyed[key] = statement }
        return statement
    }

    func error(_ result: Int32, sql: String?) -> SQLiteError {
        SQLiteError(
            extendedCode: sqlite3_extended_errcode(handle), message: String(cString: sqlite3_errmsg(handle)), sql: sql,
            systemErrno: sqlite3_system_errno(handle))
    }
}

/// The closure a progress handler calls, kept alive while it is installed.
private final class ProgressTick {
    let tick: () -> Void
    init(_ tick: @escaping () -> Void) { self.tick = tick }
}
