import Foundation
import ReconcileCore

/// One SQL statement, written once for both engines, with its values bound apart from the text
/// (PostgresNIO's `PostgresQuery` is the model).
///
/// Interpolating a value binds it: `"WHERE order_id = \(orderID)"` renders `order_id = ?` on
/// SQLite and `order_id = $1` on PostgreSQL, and the value travels as a parameter. SQL text goes
/// in only through `\(raw:)` (column lists, constants of the code, never a value from outside),
/// lists through `\(in:)`, engine-specific clauses through ``SQLClause``.
public struct SQLStatement: Sendable, ExpressibleByStringInterpolation {
    package enum Piece: Sendable, Hashable {
        case sql(String)
        case value(SQLValue)
        /// A list value and the membership test it renders (`= ANY(…)`, `IN (SELECT … json_each(…))`).
        case list(SQLValue)
        case clause(SQLClause)
    }

    package var pieces: [Piece]
    /// A statement rendered once (``SQLTemplate``) and the values it binds this time.
    package private(set) var template: SQLTemplate?
    private var templateValues: [SQLValue] = []

    /// `template` with `values` bound, in the order of its placeholders.
    init(template: SQLTemplate, values: [SQLValue]) {
        precondition(values.count == template.valueCount, "\(template.valueCount) values wanted, \(values.count) given")
        pieces = []
        self.template = template
        templateValues = values
    }

    public init(stringLiteral value: String) {
        pieces = [.sql(value)]
    }

    public init(stringInterpolation: StringInterpolation) {
        pieces = stringInterpolation.pieces
    }

    /// Raw SQL text: for the code's own constants only.
    public init(raw sql: String) {
        pieces = [.sql(sql)]
    }

    public struct StringInterpolation: StringInterpolationProtocol {
        var pieces: [Piece] = []

        public init(literalCapacity: Int, interpolationCount: Int) {
            pieces.reserveCapacity(interpolationCount * 2 + 1)
        }

        public mutating func appendLiteral(_ literal: String) {
            if !literal.isEmpty { pieces.append(.sql(literal)) }
        }

        /// A bound value.
        public mutating func appendInterpolation(_ value: some SQLBindable) {
            pieces.append(.value(value.sqlValue))
        }

        /// A bound value or NULL.
        public mutating func appendInterpolation<Value: SQLBindable>(_ value: Value?) {
            pieces.append(.value(value.map(\.sqlValue) ?? .null))
        }

        /// SQL text of the code's own (a column list, a constant condition).
        public mutating func appendInterpolation(raw sql: String) {
            pieces.append(.sql(sql))
        }

        /// Another statement's pieces, its values bound in place.
        public mutating func appendInterpolation(_ fragment: SQLStatement) {
            pieces += fragment.pieces
        }

        /// A clause only one dialect writes.
        public mutating func appendInterpolation(_ clause: SQLClause) {
            pieces.append(.clause(clause))
        }

        /// Membership in a list, as the operand after a column: `= ANY($1::text[])` on
        /// PostgreSQL (one parameter, one prepared statement whatever the length), `IN (SELECT
        /// value FROM json_each(?))` on SQLite (likewise).
        public mutating func appendInterpolation(in values: [String]) {
            pieces.append(.list(.textList(values)))
        }

        /// Membership in a list of integers (``appendInterpolation(in:)-([String])``).
        public mutating func appendInterpolation(in values: [Int64]) {
            pieces.append(.list(.integerList(values)))
        }
    }

    /// Appends another statement (`" AND …"`).
    public static func + (lhs: SQLStatement, rhs: SQLStatement) -> SQLStatement {
        var joined = lhs
        joined.pieces += rhs.pieces
        return joined
    }

    /// Statements joined by `separator` (`" AND "`), an empty statement for none.
    public static func joined(_ parts: [SQLStatement], separator: String) -> SQLStatement {
        var joined = SQLStatement(raw: "")
        for (index, part) in parts.enumerated() {
            if index > 0 { joined.pieces.append(.sql(separator)) }
            joined.pieces += part.pieces
        }
        return joined
    }

    /// The SQL text for `dialect` and the values to bind, in order.
    public func render(_ dialect: SQLDialect) -> (sql: String, values: [SQLValue]) {
        if let template { return (template.sql(dialect), templateValues) }
        var sql = ""
        var values: [SQLValue] = []
        for piece in pieces {
            switch piece {
            case .sql(let text):
                sql += text
            case .value(let value):
                values.append(value)
                sql += dialect.placeholder(values.count)
            case .list(let list):
                values.append(list)
                switch (dialect, list) {
                case (.postgresql, .integerList): sql += "= ANY($\(values.count)::bigint[])"
                case (.postgresql, _): sql += "= ANY($\(values.count)::text[])"
                case (.sqlite, _): sql += "IN (SELECT value FROM json_each(?))"
                }
            case .clause(let clause):
                sql += clause.render(dialect)
            }
        }
        return (sql, values)
    }
}

extension SQLStatement {
    /// Bound values separated by commas (`?, ?, ?`): a `VALUES` row.
    package static func list(_ values: [SQLValue]) -> SQLStatement {
        var statement = SQLStatement(raw: "")
        for (index, value) in values.enumerated() {
            if index > 0 { statement.pieces.append(.sql(", ")) }
            statement.pieces.append(.value(value))
        }
        return statement
    }
}

extension SQLStatement {
    /// `column = value` pairs separated by commas: an `UPDATE`'s `SET` list.
    package static func assignments(_ columns: [String], _ values: [SQLValue]) -> SQLStatement {
        var statement = SQLStatement(raw: "")
        statement.pieces.reserveCapacity(columns.count * 2)
        for (index, (column, value)) in zip(columns, values).enumerated() {
            statement.pieces.append(.sql((index == 0 ? "" : ", ") + column + " = "))
            statement.pieces.append(.value(value))
        }
        return statement
    }
}

extension SQLStatement {
    /// `sql` on one line, cut at 120 characters: what an error message quotes of the statement
    /// that failed (never its values, which are bound apart).
    package static func excerpt(of sql: String) -> String {
        let oneLine = sql.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        return oneLine.count > 120 ? String(oneLine.prefix(120)) + "…" : oneLine
    }
}
