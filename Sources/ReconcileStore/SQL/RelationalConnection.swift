/// What the one relational store needs of a database connection: statements written once
/// (``SQLStatement``) rendered in the connection's dialect, prepared once per connection (both
/// connections cache by SQL text), rows read through ``StoreRow``, and checks held until the
/// commit.
///
/// The methods have names of their own (`perform`, `fetchAll`, `fetchOne`) so that a string
/// literal never binds to a raw-SQL overload by accident.
public protocol RelationalConnection: AnyObject {
    associatedtype Row: StoreRow

    var dialect: SQLDialect { get }

    /// Runs a statement; returns the rows it changed.
    @discardableResult
    func perform(_ statement: SQLStatement) throws -> Int

    /// Runs a write whose answer nobody reads. A connection to a server may hold it back and
    /// send it with the next statement that needs an answer (PostgreSQL's pipeline mode), so
    /// that a transaction's writes share round trips; an error it raises is then thrown by that
    /// statement or by the commit, and the transaction rolls back as it would have. Uses of a
    /// template with a multi-row form (``SQLBatch``) may be sent as one statement.
    func performLater(_ statement: SQLStatement) throws

    /// The first row of each query, mapped, or `nil`, in order. A connection to a server sends
    /// them all (with the writes held back) in one round trip, and uses of one template with a
    /// multi-row form whose rows find their uses (``SQLBatch/returned``) as one statement.
    func fetchEach<T>(_ statements: [SQLStatement], _ map: (Row) throws -> T) throws -> [T?]

    /// Makes the transaction's commit depend on `query` returning no row: a connection to a
    /// server runs the checks together just before `COMMIT`, and when one finds a row it rolls
    /// the transaction back and fails it as a conflict with another writer, which the shared
    /// store runs again from the start (`what` names the check in that error). In-process
    /// connections, whose one writer cannot lose a race, run it at once.
    func checkBeforeCommit(_ query: SQLStatement, what: @autoclosure () -> String) throws

    /// Every row of a query, mapped.
    func fetchAll<T>(_ statement: SQLStatement, _ map: (Row) throws -> T) throws -> [T]

    /// The first row of a query, mapped, or `nil`.
    func fetchOne<T>(_ statement: SQLStatement, _ map: (Row) throws -> T) throws -> T?
}
