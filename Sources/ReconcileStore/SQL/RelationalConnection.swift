/// What the one relational store needs of a database connection: statements written once
/// (``SQLStatement``) rendered in the connection's dialect, prepared once per connection (both
/// connections cache by SQL text), rows read through ``StoreRow``, and savepoints.
///
/// The methods have names of their own (`perform`, `fetchAll`, `fetchOne`) so that a string
/// literal never binds to a raw-SQL overload by accident.
public protocol RelationalConnection: AnyObject {
    associatedtype Row: StoreRow

    var dialect: SQLDialect { get }

    /// Runs a statement; returns the rows it changed.
    @discardableResult
    func perform(_ statement: SQLStatement) throws -> Int

    /// Every row of a query, mapped.
    func fetchAll<T>(_ statement: SQLStatement, _ map: (Row) throws -> T) throws -> [T]

    /// The first row of a query, mapped, or `nil`.
    func fetchOne<T>(_ statement: SQLStatement, _ map: (Row) throws -> T) throws -> T?

    /// Runs `body` under a savepoint inside the caller's transaction: when it throws, what it
    /// wrote is undone and the transaction goes on.
    func savepoint<T>(_ body: () throws -> T) throws -> T
}

extension SQLiteConnection: RelationalConnection {
    public var dialect: SQLDialect { .sqlite }

    @discardableResult
    public func perform(_ statement: SQLStatement) throws -> Int {
        let (sql, values) = statement.render(.sqlite)
        try run(sql, values.map(SQLiteValue.init))
        return changes
    }

    public func fetchAll<T>(_ statement: SQLStatement, _ map: (SQLiteRow) throws -> T) throws -> [T] {
        let (sql, values) = statement.render(.sqlite)
        return try query(sql, values.map(SQLiteValue.init), map)
    }

    public func fetchOne<T>(_ statement: SQLStatement, _ map: (SQLiteRow) throws -> T) throws -> T? {
        let (sql, values) = statement.render(.sqlite)
        return try queryFirst(sql, values.map(SQLiteValue.init), map)
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

extension PostgreSQLConnection: RelationalConnection {
    public var dialect: SQLDialect { .postgresql }

    @discardableResult
    public func perform(_ statement: SQLStatement) throws -> Int {
        let (sql, values) = statement.render(.postgresql)
        return try run(sql, values.map(PostgreSQLValue.init))
    }

    public func fetchAll<T>(_ statement: SQLStatement, _ map: (PostgreSQLRow) throws -> T) throws -> [T] {
        let (sql, values) = statement.render(.postgresql)
        return try query(sql, values.map(PostgreSQLValue.init), map)
    }

    public func fetchOne<T>(_ statement: SQLStatement, _ map: (PostgreSQLRow) throws -> T) throws -> T? {
        let (sql, values) = statement.render(.postgresql)
        return try queryFirst(sql, values.map(PostgreSQLValue.init), map)
    }
}
