/// The rows of a multi-row statement (``SQLBatch``) as one JSON array of objects, which
/// `json_populate_recordset` reads typed by the table's own row type: integers as numbers, text
/// as strings, bytes as `bytea`'s hex text (`\x…`), NULL as `null`.
enum PostgreSQLJSONRows {
    /// `[{"column": value, …}, …]`, one object per use; a value whose column is `nil` is left
    /// out.
    ///
    /// - Throws: ``PostgreSQLError`` for text holding a NUL character, which PostgreSQL's text
    ///   cannot store (the error never quotes the value).
    static func encode(_ uses: [[PostgreSQLValue]], columns: [String?]) throws(PostgreSQLError) -> String {
        var json: [UInt8] = []
        json.reserveCapacity(uses.count * 64 * columns.count)
        let names = columns.map { $0.map { Array("\"\($0)\":".utf8) } }
        json.append(UInt8(ascii: "["))
        for (row, values) in uses.enumerated() {
            if row > 0 { json.append(UInt8(ascii: ",")) }
            json.append(UInt8(ascii: "{"))
            var first = true
            for (value, name) in zip(values, names) {
                guard let name else { continue }
                if !first { json.append(UInt8(ascii: ",")) }
                first = false
                json.append(contentsOf: name)
                try append(value, to: &json)
            }
            json.append(UInt8(ascii: "}"))
        }
        json.append(UInt8(ascii: "]"))
        return String(decoding: json, as: UTF8.self)
    }

    private static let hex = Array("0123456789abcdef".utf8)

    private static func append(_ value: PostgreSQLValue, to json: inout [UInt8]) throws(PostgreSQLError) {
        switch value {
        case .null:
            json.append(contentsOf: "null".utf8)
        case .integer(let number):
            json.append(contentsOf: String(number).utf8)
        case .boolean(let flag):
            json.append(contentsOf: (flag ? "true" : "false").utf8)
        case .text(let text):
            json.append(UInt8(ascii: "\""))
            for byte in text.utf8 {
                switch byte {
                case 0:
                    throw PostgreSQLError.nulInText()
                case UInt8(ascii: "\""), UInt8(ascii: "\\"):
                    json.append(UInt8(ascii: "\\"))
                    json.append(byte)
                case ..<0x20:
                    json.append(contentsOf: "\\u00".utf8)
                    json.append(hex[Int(byte >> 4)])
                    json.append(hex[Int(byte & 0xf)])
                default:
                    json.append(byte)
                }
            }
            json.append(UInt8(ascii: "\""))
        case .bytes(let bytes):
            // bytea's hex input, `\x…`, its backslash escaped for JSON.
            json.append(contentsOf: "\"\\\\x".utf8)
            for byte in bytes {
                json.append(hex[Int(byte >> 4)])
                json.append(hex[Int(byte & 0xf)])
            }
            json.append(UInt8(ascii: "\""))
        case .textArray, .integerArray:
            preconditionFailure("a batched write binds no arrays")
        }
    }
}
