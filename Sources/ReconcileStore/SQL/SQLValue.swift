import Foundation
import ReconcileCore
import ReconcileFoundation

/// A value bound to a statement, whatever the engine: always sent apart from the SQL text, so
/// no value is ever part of a statement, a log line or an error.
public enum SQLValue: Sendable, Hashable {
    case null
    case integer(Int64)
    case text(String)
    case bytes([UInt8])
    /// A list, matched with `\(in:)`: a `text[]` on PostgreSQL, a JSON array on SQLite.
    case textList([String])
    /// A list of integers (`bigint[]`, or a JSON array).
    case integerList([Int64])

    /// `nil` becomes NULL.
    public static func text(orNull value: String?) -> SQLValue {
        value.map(SQLValue.text) ?? .null
    }

    /// `nil` becomes NULL.
    public static func integer(orNull value: Int64?) -> SQLValue {
        value.map(SQLValue.integer) ?? .null
    }

    public static func integer(_ value: Int) -> SQLValue {
        .integer(Int64(value))
    }

    /// A time as the stores keep it: milliseconds since 1970 (`nil` becomes NULL).
    public static func time(_ value: Date?) -> SQLValue {
        .integer(orNull: value?.epochMilliseconds)
    }
}

/// What can be interpolated into an ``SQLStatement`` as a bound value.
public protocol SQLBindable {
    var sqlValue: SQLValue { get }
}

extension SQLValue: SQLBindable {
    public var sqlValue: SQLValue { self }
}

extension String: SQLBindable {
    public var sqlValue: SQLValue { .text(self) }
}

extension Int64: SQLBindable {
    public var sqlValue: SQLValue { .integer(self) }
}

extension Int: SQLBindable {
    public var sqlValue: SQLValue { .integer(Int64(self)) }
}

extension Date: SQLBindable {
    /// Milliseconds since 1970, as every time column holds it.
    public var sqlValue: SQLValue { .integer(epochMilliseconds) }
}

extension Optional: SQLBindable where Wrapped: SQLBindable {
    public var sqlValue: SQLValue { map(\.sqlValue) ?? .null }
}
