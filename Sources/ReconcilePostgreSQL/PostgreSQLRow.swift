import ReconcileStore
import CPostgres

/// One row of a PostgreSQL result, read by column index (0-based), in whichever format the query
/// asked for (text or binary: each accessor reads both). Valid only inside the closure it is
/// passed to.
///
/// Reading a column as a type it cannot be (a `numeric` as an integer) is a bug in the SQL and
/// stops the process with the column named.
public struct PostgreSQLRow {
    let result: OpaquePointer
    let row: Int32

    init(result: OpaquePointer, row: Int32) {
        self.result = result
        self.row = row
    }

    public var columnCount: Int32 { PQnfields(result) }

    public func isNull(_ column: Int32) -> Bool {
        PQgetisnull(result, row, column) == 1
    }

    private func isBinary(_ column: Int32) -> Bool {
        PQfformat(result, column) == 1
    }

    /// The value's bytes as the server sent them.
    private func raw(_ column: Int32) -> UnsafeRawBufferPointer {
        let count = Int(PQgetlength(result, row, column))
        guard count > 0, let value = PQgetvalue(result, row, column) else { return UnsafeRawBufferPointer(start: nil, count: 0) }
        return UnsafeRawBufferPointer(start: value, count: count)
    }

    private func columnName(_ column: Int32) -> String {
        PQfname(result, column).map { String(cString: $0) } ?? "#\(column)"
    }

    /// Text (any text-like type; in both formats the value is its UTF-8 bytes).
    public func string(_ column: Int32) -> String {
        String(decoding: raw(column), as: UTF8.self)
    }

    public func optionalString(_ column: Int32) -> String? {
        isNull(column) ? nil : string(column)
    }

    /// An integer of any width (`smallint`, `integer`, `bigint`); 0 for NULL.
    public func int64(_ column: Int32) -> Int64 {
        guard !isNull(column) else { return 0 }
        let bytes = raw(column)
        if isBinary(column) {
            switch bytes.count {
            case 2: return Int64(Int16(bigEndian: bytes.loadUnaligned(as: Int16.self)))
            case 4: return Int64(Int32(bigEndian: bytes.loadUnaligned(as: Int32.self)))
            case 8: return Int64(bigEndian: bytes.loadUnaligned(as: Int64.self))
            default: preconditionFailure("column \(columnName(column)) is not an integer (binary value of \(bytes.count) bytes)")
            }
        }
        guard let number = Int64(String(decoding: bytes, as: UTF8.self)) else {
            preconditionFailure("column \(columnName(column)) is not an integer")
        }
        return number
    }

    public func int(_ column: Int32) -> Int {
        Int(int64(column))
    }

    public func optionalInt64(_ column: Int32) -> Int64? {
        isNull(column) ? nil : int64(column)
    }

    /// A `boolean`; false for NULL.
    public func bool(_ column: Int32) -> Bool {
        guard !isNull(column) else { return false }
        let bytes = raw(column)
        return isBinary(column) ? bytes.first == 1 : bytes.first == UInt8(ascii: "t")
    }

    /// A `bytea` (binary format: the bytes; text format: unescaped), or text's UTF-8 bytes.
    public func bytes(_ column: Int32) -> [UInt8] {
        guard !isNull(column) else { return [] }
        let bytes = raw(column)
        if isBinary(column) || PQftype(result, column) != Self.byteaType { return Array(bytes) }
        // Text format: `\x…` hex escape; libpq unescapes it.
        guard let text = PQgetvalue(result, row, column) else { return [] }
        var count = 0
        guard let unescaped = text.withMemoryRebound(to: UInt8.self, capacity: bytes.count + 1, { PQunescapeBytea($0, &count) }) else {
            preconditionFailure("column \(columnName(column)): libpq could not unescape a bytea value")
        }
        defer { PQfreemem(unescaped) }
        return Array(UnsafeBufferPointer(start: unescaped, count: count))
    }

    public func optionalBytes(_ column: Int32) -> [UInt8]? {
        isNull(column) ? nil : bytes(column)
    }

    /// The type oid of `bytea`.
    static let byteaType: Oid = 17
}
