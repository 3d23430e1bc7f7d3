import ReconcileFoundation
import ReconcileStore
import CSQLite

/// A prepared statement. Owned by its ``SQLiteConnection`` (which caches it by SQL text) and
/// only used on the connection's thread.
public final class SQLiteStatement {
    let handle: OpaquePointer
    public let sql: String
    private unowned let connection: SQLiteConnection

    init(handle: OpaquePointer, sql: String, connection: SQLiteConnection) {
        self.handle = handle
        self.sql = sql
        self.connection = connection
    }

    deinit {
        sqlite3_finalize(handle)
    }

    /// Resets the statement and binds `parameters` to `?1…?n`.
    func bind(_ parameters: [SQLiteValue]) throws(SQLiteError) {
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
        let expected = Int(sqlite3_bind_parameter_count(handle))
        precondition(parameters.count == expected, "statement needs \(expected) parameters, got \(parameters.count): \(sql)")
        for (offset, value) in parameters.enumerated() {
            let index = Int32(offset + 1)
            let result: Int32
            switch value {
            case .null: result = sqlite3_bind_null(handle, index)
            case .integer(let number): result = sqlite3_bind_int64(handle, index, number)
            case .real(let number): result = sqlite3_bind_double(handle, index, number)
            case .text(let text): result = sqlite3_bind_text(handle, index, text, -1, reconcile_sqlite_transient())
            case .blob(let bytes):
                result = bytes.withUnsafeBytes { buffer in
                    sqlite3_bind_blob64(handle, index, buffer.baseAddress ?? UnsafeRawPointer(bitPattern: 1), sqlite3_uint64(buffer.count), reconcile_sqlite_transient())
                }
            }
            guard result == SQLITE_OK else { throw connection.error(result, sql: sql) }
        }
    }

    /// Steps once: `true` when a row is ready.
    func step() throws(SQLiteError) -> Bool {
        let result = sqlite3_step(handle)
        switch result {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default:
            let error = connection.error(result, sql: sql)
            sqlite3_reset(handle)
            throw error
        }
    }

    /// Resets the statement so that it releases its read snapshot.
    func finish() {
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
    }
}

/// The current row of a stepping statement, read by column index (0-based). Valid only inside
/// the closure it is passed to.
public struct SQLiteRow {
    let handle: OpaquePointer

    init(handle: OpaquePointer) {
        self.handle = handle
    }

    public func isNull(_ column: Int32) -> Bool {
        sqlite3_column_type(handle, column) == SQLITE_NULL
    }

    public func int64(_ column: Int32) -> Int64 {
        sqlite3_column_int64(handle, column)
    }

    public func int(_ column: Int32) -> Int {
        Int(sqlite3_column_int64(handle, column))
    }

    public func optionalInt64(_ column: Int32) -> Int64? {
        isNull(column) ? nil : int64(column)
    }

    public func double(_ column: Int32) -> Double {
        sqlite3_column_double(handle, column)
    }

    public func string(_ column: Int32) -> String {
        guard let text = sqlite3_column_text(handle, column) else { return "" }
        let count = Int(sqlite3_column_bytes(handle, column))
        return String(decoding: UnsafeBufferPointer(start: text, count: count), as: UTF8.self)
    }

    public func optionalString(_ column: Int32) -> String? {
        isNull(column) ? nil : string(column)
    }

    public func blob(_ column: Int32) -> [UInt8] {
        let count = Int(sqlite3_column_bytes(handle, column))
        guard count > 0, let bytes = sqlite3_column_blob(handle, column) else { return [] }
        return Array(UnsafeRawBufferPointer(start: bytes, count: count))
    }

    public func optionalBlob(_ column: Int32) -> [UInt8]? {
        isNull(column) ? nil : blob(column)
    }
}
