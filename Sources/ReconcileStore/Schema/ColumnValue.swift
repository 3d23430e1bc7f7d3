/// A value for an order's column as the shared plan writer produces it; each store binds it as
/// its own parameter type.
enum ColumnValue: Sendable, Hashable {
    case null
    case integer(Int64)
    case text(String)

    static func text(orNull value: String?) -> ColumnValue {
        value.map(ColumnValue.text) ?? .null
    }

    static func integer(orNull value: Int64?) -> ColumnValue {
        value.map(ColumnValue.integer) ?? .null
    }
}

extension SQLiteValue {
    init(_ value: ColumnValue) {
        switch value {
        case .null: self = .null
        case .integer(let number): self = .integer(number)
        case .text(let text): self = .text(text)
        }
    }
}

extension PostgreSQLValue {
    init(_ value: ColumnValue) {
        switch value {
        case .null: self = .null
        case .integer(let number): self = .integer(number)
        case .text(let text): self = .text(text)
        }
    }
}
