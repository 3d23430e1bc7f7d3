import Foundation
import ReconcileCore
import ReconcileFoundation
/// A table's columns, declared once as an enum whose raw value is the column's position in the
/// select list made from the declaration (``OrderColumns/record``): a row is read by column
/// (`row.string(OrderColumn.orderID)`), never by a number written by hand.
package protocol SQLColumn: RawRepresentable<Int32>, CaseIterable, Sendable where AllCases == [Self] {
    /// The column's name in the table.
    var name: String { get }
}

extension StoreRow {
    package func isNull<C: SQLColumn>(_ column: C) -> Bool { isNull(column.rawValue) }
    package func string<C: SQLColumn>(_ column: C) -> String { string(column.rawValue) }
    package func optionalString<C: SQLColumn>(_ column: C) -> String? { optionalString(column.rawValue) }
    package func int64<C: SQLColumn>(_ column: C) -> Int64 { int64(column.rawValue) }
    package func int<C: SQLColumn>(_ column: C) -> Int { int(column.rawValue) }
    package func optionalInt64<C: SQLColumn>(_ column: C) -> Int64? { optionalInt64(column.rawValue) }
    package func optionalInt<C: SQLColumn>(_ column: C) -> Int? { optionalInt64(column.rawValue).map { Int(clamping: $0) } }
    /// A time kept in milliseconds, or `nil` for NULL.
    package func date<C: SQLColumn>(_ column: C) -> Date? { optionalInt64(column.rawValue).map(Date.init(epochMilliseconds:)) }

    /// A value of a closed set (a state, a kind), which must be one the code knows: a value it
    /// does not know is an error naming the column, never read as a default.
    package func known<C: SQLColumn, Value: RawRepresentable<String>>(_ column: C, as type: Value.Type, table: String) throws -> Value {
        try known(at: column.rawValue, as: type, table: table, column: column.name)
    }

    /// ``known(_:as:table:)`` for a column that may be NULL.
    package func optionalKnown<C: SQLColumn, Value: RawRepresentable<String>>(_ column: C, as type: Value.Type, table: String) throws -> Value? {
        try optionalKnown(at: column.rawValue, as: type, table: table, column: column.name)
    }

    /// ``known(_:as:table:)`` for a column selected at `index` (an aggregate's group, a join).
    package func known<Value: RawRepresentable<String>>(at index: Int32, as type: Value.Type, table: String, column: String) throws -> Value {
        let raw = string(index)
        guard let value = Value(rawValue: raw) else { throw StoreError.unknownValue(table: table, column: column, value: raw) }
        return value
    }

    /// ``known(at:as:table:column:)`` for a column that may be NULL.
    package func optionalKnown<Value: RawRepresentable<String>>(at index: Int32, as type: Value.Type, table: String, column: String) throws -> Value? {
        isNull(index) ? nil : try known(at: index, as: type, table: table, column: column)
    }
}
