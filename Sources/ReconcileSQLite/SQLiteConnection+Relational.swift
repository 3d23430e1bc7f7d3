import Foundation
import ReconcileCore
import ReconcileStore

/// SQLite's connection as the relational store uses it.
extension SQLiteConnection: RelationalConnection {
    public var dialect: SQLDialect { .sqlite }

    @discardableResult
    public func perform(_ statement: SQLStatement) throws -> Int {
        let (sql, values) = statement.render(.sqlite)
        try run(sql, values.map(SQLiteValue.init), key: statement.template?.key)
        return changes
    }

    /// Runs at once: SQLite is in the process, there is no round trip to share.
    public func performLater(_ statement: SQLStatement) throws {
        try perform(statement)
    }

    /// Runs at once: with one writer at a time nothing can change before the commit.
    public func checkBeforeCommit(_ query: SQLStatement, what: @autoclosure () -> String) throws {
        if try fetchOne(query, { _ in true }) != nil { throw StoreError.persistentConflict(what()) }
    }

    public func fetchEach<T>(_ statements: [SQLStatement], _ map: (SQLiteRow) throws -> T) throws -> [T?] {
        try statements.map { try fetchOne($0, map) }
    }

    public func fetchAll<T>(_ statement: SQLStatement, _ map: (SQLiteRow) throws -> T) throws -> [T] {
        let (sql, values) = statement.render(.sqlite)
        return try query(sql, values.map(SQLiteValue.init), key: statement.template?.key, map)
    }

    public func fetchOne<T>(_ statement: SQLStatement, _ map: (SQLiteRow) throws -> T) throws -> T? {
        let (sql, values) = statement.render(.sqlite)
        return try queryFirst(sql, values.map(SQLiteValue.init), key: statement.template?.key, map)
    }
}

extension SQLiteValue {
    /// A JSON array of strings, for SQLite's `json_each`.
    static func jsonArray(_ texts: [String]) -> String {
        var json = "["
        for (index, text) in texts.enumerated() {
            if index > 0 { json += "," }
            json += "\""
            for scalar in text.unicodeScalars {
                switch scalar {
                case "\"": json += "\\\""
                case "\\": json += "\\\\"
                case _ where scalar.value < 0x20: json += String(format: "\\u%04x", scalar.value)
                default: json.unicodeScalars.append(scalar)
                }
            }
            json += "\""
        }
        return json + "]"
    }

    init(_ value: SQLValue) {
        switch value {
        case .null: self = .null
        case .integer(let number): self = .integer(number)
        case .text(let text): self = .text(text)
        case .bytes(let bytes): self = .blob(bytes)
        case .textList(let texts): self = .text(Self.jsonArray(texts))
        case .integerList(let numbers): self = .text("[" + numbers.map(String.init).joined(separator: ",") + "]")
        }
    }
}

extension SQLiteRow: StoreRow {}
