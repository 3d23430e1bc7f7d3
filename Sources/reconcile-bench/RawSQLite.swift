import CSQLite
import Foundation

/// One SQLite connection driven straight through the C API, with no ReconcileStore in between:
/// what the `store-limit` scenario measures the database itself with. Statements are prepared
/// once by their caller and kept.
///
/// Counts the write-ahead log's frames each commit appends (a WAL hook that also checkpoints at
/// 1,000 frames, as SQLite's own default hook does).
final class RawSQLite {
    let handle: OpaquePointer
    private let frames: UnsafeMutablePointer<FrameCount>

    /// Frames in the log after the last commit, and frames appended by all commits so far.
    struct FrameCount {
        var inLog: Int32 = 0
        var appended: Int = 0
    }

    /// Opens `path` (which must exist) as the store does: WAL, `synchronous=FULL`, foreign keys on.
    init(path: String) throws {
        var pointer: OpaquePointer?
        let result = sqlite3_open_v2(path, &pointer, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nil)
        guard result == SQLITE_OK, let pointer else {
            if let pointer { sqlite3_close_v2(pointer) }
            throw BenchmarkError("cannot open \(path): SQLite error \(result)")
        }
        handle = pointer
        frames = .allocate(capacity: 1)
        frames.initialize(to: FrameCount())
        try execute("PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON")
        sqlite3_wal_hook(
            handle,
            { context, database, name, inLog in
                let count = context!.assumingMemoryBound(to: FrameCount.self)
                // A log that restarted after a checkpoint counts from zero again.
                count.pointee.appended += Int(inLog >= count.pointee.inLog ? inLog - count.pointee.inLog : inLog)
                count.pointee.inLog = inLog
                if inLog >= 1_000 {
                    sqlite3_wal_checkpoint_v2(database, name, SQLITE_CHECKPOINT_PASSIVE, nil, nil)
                }
                return SQLITE_OK
            }, UnsafeMutableRawPointer(frames))
    }

    deinit {
        sqlite3_close_v2(handle)
        frames.deallocate()
    }

    /// Frames (pages) the commits so far appended to the write-ahead log.
    var framesAppended: Int { frames.pointee.appended }

    func execute(_ sql: String) throws {
        try check(sqlite3_exec(handle, sql, nil, nil, nil), sql)
    }

    func prepare(_ sql: String) throws -> OpaquePointer {
        var statement: OpaquePointer?
        try check(sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil), sql)
        guard let statement else { throw BenchmarkError("empty statement: \(sql)") }
        return statement
    }

    /// Steps a statement that returns no rows and resets it.
    func run(_ statement: OpaquePointer) throws {
        let result = sqlite3_step(statement)
        sqlite3_reset(statement)
        try check(result, String(cString: sqlite3_sql(statement)))
    }

    func check(_ result: Int32, _ sql: @autoclosure () -> String) throws {
        guard result == SQLITE_OK || result == SQLITE_DONE || result == SQLITE_ROW else {
            throw BenchmarkError("SQLite error \(result) (\(String(cString: sqlite3_errmsg(handle)))) in: \(sql())")
        }
    }

    var lastInsertRowID: Int64 { sqlite3_last_insert_rowid(handle) }
}

/// Binding helpers over the C API (text copied by SQLite: `SQLITE_TRANSIENT`).
extension OpaquePointer {
    func bind(_ index: Int32, _ value: Int64) { sqlite3_bind_int64(self, index, value) }
    func bind(_ index: Int32, _ value: String) { sqlite3_bind_text(self, index, value, -1, reconcile_sqlite_transient()) }
    func bind(_ index: Int32, bytes: UnsafeRawBufferPointer) {
        sqlite3_bind_blob64(self, index, bytes.baseAddress, sqlite3_uint64(bytes.count), reconcile_sqlite_transient())
    }
    func bindText(_ index: Int32, bytes: UnsafeRawBufferPointer) {
        sqlite3_bind_text64(
            self, index, bytes.baseAddress?.assumingMemoryBound(to: CChar.self), sqlite3_uint64(bytes.count), reconcile_sqlite_transient(),
            UInt8(SQLITE_UTF8))
    }
    func bindNull(_ index: Int32) { sqlite3_bind_null(self, index) }
}
