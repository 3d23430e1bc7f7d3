import ReconcileStore
import Foundation

/// A parameter bound to a PostgreSQL statement. Values travel apart from the SQL text (libpq's
/// extended protocol), so no value is ever part of a statement, a log line or an error.
///
/// Integers, text and arrays go in PostgreSQL's text format and the server reads them as the type
/// the statement gives the parameter; bytes go in binary format (for a `bytea` parameter). An
/// array needs a cast in the SQL (`= ANY($1::text[])`), since nothing else tells its type.
public enum PostgreSQLValue: Sendable, Hashable {
    case null
    case integer(Int64)
    case text(String)
    case bytes([UInt8])
    case boolean(Bool)
    /// A `text[]` (in the SQL: `$1::text[]`).
    case textArray([String])
    /// A `bigint[]` (in the SQL: `$1::bigint[]`).
    case integerArray([Int64])

    /// `nil` becomes NULL.
    public static func text(orNull value: String?) -> PostgreSQLValue {
        value.map(PostgreSQLValue.text) ?? .null
    }

    public static func integer(orNull value: Int64?) -> PostgreSQLValue {
        value.map(PostgreSQLValue.integer) ?? .null
    }

    public static func integer(_ value: Int) -> PostgreSQLValue {
        .integer(Int64(value))
    }

    /// The bytes libpq sends and whether they are binary; `nil` for NULL.
    ///
    /// - Throws: ``PostgreSQLError`` for text holding a NUL character, which PostgreSQL's text
    ///   cannot store (the error never quotes the value).
    func encoded() throws(PostgreSQLError) -> (bytes: [UInt8], binary: Bool)? {
        switch self {
        case .null:
            return nil
        case .integer(let number):
            return (Array(String(number).utf8), false)
        case .text(let text):
            guard !text.utf8.contains(0) else {
                throw PostgreSQLError.nulInText()
            }
            return (Array(text.utf8), false)
        case .bytes(let bytes):
            return (bytes, true)
        case .boolean(let flag):
            return (Array((flag ? "t" : "f").utf8), false)
        case .textArray(let texts):
            var literal = "{"
            for (index, text) in texts.enumerated() {
                guard !text.utf8.contains(0) else {
                    throw PostgreSQLError.nulInText("text array")
                }
                if index > 0 { literal += "," }
                // Every element quoted, so that NULL, empty strings, braces and commas are plain text.
                literal += "\"" + text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
            }
            return (Array((literal + "}").utf8), false)
        case .integerArray(let numbers):
            return (Array(("{" + numbers.map(String.init).joined(separator: ",") + "}").utf8), false)
        }
    }
}
