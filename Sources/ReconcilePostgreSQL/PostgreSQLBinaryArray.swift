/// One value of many uses of a statement as a one-dimensional array in PostgreSQL's binary
/// format (`array_recv`), for a multi-row statement that reads its rows through `unnest`
/// (``SQLBatch/arrayTypes``): long text and bytes go as they are, with nothing to escape or parse.
enum PostgreSQLBinaryArray {
    /// The array's bytes, sent as a binary parameter whose type the SQL gives (`$1::text[]`).
    ///
    /// - Parameter type: `bigint`, `text` or `bytea`; every value must be of it, or NULL.
    /// - Throws: ``PostgreSQLError`` for text holding a NUL character, which PostgreSQL's text
    ///   cannot store (the error never quotes the value).
    static func encode(_ values: [PostgreSQLValue], type: String) throws(PostgreSQLError) -> [UInt8] {
        let oid: UInt32 =
            switch type {
            case "bigint": 20
            case "text": 25
            case "bytea": 17
            default: preconditionFailure("no binary array of \(type)")
            }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(20 + values.count * 16)
        append(Int32(1), to: &bytes)  // dimensions
        append(Int32(values.contains(.null) ? 1 : 0), to: &bytes)  // has NULLs
        append(oid, to: &bytes)
        append(Int32(values.count), to: &bytes)  // length
        append(Int32(1), to: &bytes)  // lower bound
        for value in values {
            switch (value, type) {
            case (.null, _):
                append(Int32(-1), to: &bytes)
            case (.integer(let number), "bigint"):
                append(Int32(8), to: &bytes)
                append(UInt64(bitPattern: number), to: &bytes)
            case (.text(let text), "text"):
                let utf8 = Array(text.utf8)
                guard !utf8.contains(0) else {
                    throw PostgreSQLError.nulInText()
                }
                append(Int32(utf8.count), to: &bytes)
                bytes += utf8
            case (.bytes(let raw), "bytea"):
                append(Int32(raw.count), to: &bytes)
                bytes += raw
            default:
                preconditionFailure("a value that is not of the array's type \(type)")
            }
        }
        return bytes
    }

    private static func append<Integer: FixedWidthInteger>(_ value: Integer, to bytes: inout [UInt8]) {
        withUnsafeBytes(of: value.bigEndian) { bytes += $0 }
    }
}
