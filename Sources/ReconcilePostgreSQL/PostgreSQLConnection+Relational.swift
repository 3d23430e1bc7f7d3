import ReconcileCore
import ReconcileStore

/// PostgreSQL's connection as the relational store uses it.
extension PostgreSQLConnection: RelationalConnection {
    public var dialect: SQLDialect { .postgresql }

    @discardableResult
    public func perform(_ statement: SQLStatement) throws -> Int {
        let (sql, values) = statement.render(.postgresql)
        return try run(sql, values.map(PostgreSQLValue.init), key: statement.template?.key)
    }

    public func performLater(_ statement: SQLStatement) throws {
        let (sql, values) = statement.render(.postgresql)
        try sendLater(sql, values.map(PostgreSQLValue.init), key: statement.template?.key, batch: statement.template?.batch)
    }

    /// Held until just before `COMMIT` (``PostgreSQLConnection/transaction(_:)``); outside a
    /// transaction, run at once.
    public func checkBeforeCommit(_ query: SQLStatement, what: @autoclosure () -> String) throws {
        guard inTransaction else {
            if try fetchOne(query, { _ in true }) != nil { throw PostgreSQLError.committedFirst(what(), sql: query.render(.postgresql).sql) }
            return
        }
        commitChecks.append((query, what()))
    }

    public func fetchEach<T>(_ statements: [SQLStatement], _ map: (PostgreSQLRow) throws -> T) throws -> [T?] {
        if let template = statements.first?.template, let batch = template.batch, batch.postgresql != nil, batch.returned != nil,
            statements.count > 1, statements.allSatisfy({ $0.template === template }),
            let rows = try fetchBatched(statements.map { $0.render(.postgresql).values.map(PostgreSQLValue.init) }, batch, map)
        {
            return rows
        }
        return try queryEach(
            statements.map { statement in
                let (sql, values) = statement.render(.postgresql)
                return (sql, values.map(PostgreSQLValue.init), statement.template?.key)
            }, map)
    }

    public func fetchAll<T>(_ statement: SQLStatement, _ map: (PostgreSQLRow) throws -> T) throws -> [T] {
        let (sql, values) = statement.render(.postgresql)
        return try query(sql, values.map(PostgreSQLValue.init), key: statement.template?.key, map)
    }

    public func fetchOne<T>(_ statement: SQLStatement, _ map: (PostgreSQLRow) throws -> T) throws -> T? {
        let (sql, values) = statement.render(.postgresql)
        return try queryFirst(sql, values.map(PostgreSQLValue.init), key: statement.template?.key, map)
    }
}

extension PostgreSQLValue {
    init(_ value: SQLValue) {
        switch value {
        case .null: self = .null
        case .integer(let number): self = .integer(number)
        case .text(let text): self = .text(text)
        case .bytes(let bytes): self = .bytes(bytes)
        case .textList(let texts): self = .textArray(texts)
        case .integerList(let numbers): self = .integerArray(numbers)
        }
    }
}

extension PostgreSQLRow: StoreRow {}
