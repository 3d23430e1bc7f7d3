import ReconcileStore
import CSQLite
import Glibc
import ReconcileCore

/// An error from SQLite: the extended result code, SQLite's message and the statement's SQL.
///
/// Bound parameter values are never part of it, so a receipt can never reach a log line
/// through a database error.
public struct SQLiteError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The extended result code (`SQLITE_BUSY_SNAPSHOT`, `SQLITE_CONSTRAINT_UNIQUE`, …).
    public var extendedCode: Int32
    /// SQLite's own message for the error (`sqlite3_errmsg`).
    public var message: String
    /// The SQL text (with `?` placeholders) when a statement failed.
    public var sql: String?
    /// The `errno` of the system call behind an I/O error (`sqlite3_system_errno`), when there
    /// was one: SQLite reports a full disk met while growing the `-shm` file or syncing as a
    /// "disk I/O error", and only this tells it apart.
    public var systemErrno: Int32?

    public init(extendedCode: Int32, message: String, sql: String? = nil, systemErrno: Int32? = nil) {
        self.extendedCode = extendedCode
        self.message = message
        self.sql = sql
        self.systemErrno = systemErrno.flatMap { $0 == 0 ? nil : $0 }
    }

    /// The primary result code (the low 8 bits).
    public var code: Int32 { extendedCode & 0xFF }

    public var isBusy: Bool { code == SQLITE_BUSY || code == SQLITE_LOCKED }
    /// The disk (or the quota) is full: `SQLITE_FULL`, or an I/O error whose system call failed
    /// with `ENOSPC` or `EDQUOT`.
    public var isFull: Bool {
        code == SQLITE_FULL || (code == SQLITE_IOERR && (systemErrno == ENOSPC || systemErrno == EDQUOT))
    }
    public var isReadOnly: Bool { code == SQLITE_READONLY }
    public var isNotADatabase: Bool { code == SQLITE_NOTADB }
    public var isCorrupt: Bool { code == SQLITE_CORRUPT }
    public var isConstraint: Bool { code == SQLITE_CONSTRAINT }

    public var description: String {
        var text = "SQLite error \(extendedCode) (\(String(cString: sqlite3_errstr(extendedCode)))): \(message)"
        if isFull {
            text = "disk full (\(String(cString: strerror(systemErrno ?? ENOSPC)))): \(text)"
        } else if let systemErrno, code == SQLITE_IOERR || code == SQLITE_CANTOPEN {
            text += " (\(String(cString: strerror(systemErrno))))"
        }
        if let sql { text += " [\(SQLStatement.excerpt(of: sql))]" }
        return text
    }
}

extension SQLiteError: ClassifiedStoreError {
    public var storeFailure: StoreFailure {
        if isFull { return .diskFull }
        if isReadOnly || code == SQLITE_CANTOPEN || code == SQLITE_PERM { return .readOnly }
        if isBusy { return .busy }
        return .other
    }
}
