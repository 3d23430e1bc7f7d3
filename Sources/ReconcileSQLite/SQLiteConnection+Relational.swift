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

    public func fetchAll<T>(_ statement: SQLStatement, _ map: (SQLiteRow) throws -> T) throws -> [T] {
        let (sql, values) = statement.render(.sqlite)
        return try query(sql, values.map(SQLiteValue.init), key: statement.template?.key, map)
    }

    public func fetchOne<T>(_ statement: SQLStatement, _ map: (SQLiteRow) throws -> T) throws -> T? {
        let (sql, values) = statement.render(.sqlite)
        return try queryFirst(sql, values.map(SQLiteValue.init), key: statement.template?.key, map)
    }

    public func savepoint<T>(_ body: () throws -> T) throws -> T {
        try run("SAVEPOINT reconcile_savepoint")
        let result: T
        do {
            result = try body()
        } catch {
            try run("ROLLBACK TO SAVEPOINT reconcile_savepoint")
            try run("RELEASE SAVEPOINT reconcile_savepoint")
            throw error
        }
        try run("RELEASE SAVEPOINT reconcile_savepoint")
        return result
    }
}

extension SQLiteValue {
    init(_ value: SQLValue) {
        switch value {
        case .null: self = .null
        case .integer(let number): self = .integer(number)
        case .text(let text): self = .text(text)
        case .bytes(let bytes): self = .blob(bytes)
        case .textList(let texts): self = .text(SQLStatement.jsonArray(texts))
        case .integerList(let numbers): self = .text("[" + numbers.map(String.init).joined(separator: ",") + "]")
        }
    }
}

extension SQLiteRow: StoreRow {}
