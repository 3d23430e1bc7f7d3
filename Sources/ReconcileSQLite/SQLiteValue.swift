import ReconcileStore

/// A value bound to or read from an SQLite statement: SQLite's five storage classes.
public enum SQLiteValue: Sendable, Hashable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob([UInt8])

    /// `nil` becomes NULL.
    public static func text(orNull value: String?) -> SQLiteValue {
        value.map(SQLiteValue.text) ?? .null
    }

    public static func integer(orNull value: Int64?) -> SQLiteValue {
        value.map(SQLiteValue.integer) ?? .null
    }

    public static func integer(_ value: Int) -> SQLiteValue {
        .integer(Int64(value))
    }
}

extension SQLiteValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByNilLiteral {
    public init(stringLiteral value: String) { self = .text(value) }
    public init(integerLiteral value: Int64) { self = .integer(value) }
    public init(nilLiteral: ()) { self = .null }
}
