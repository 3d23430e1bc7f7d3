/// Why the test server could not start.
public struct PostgreSQLTestServerError: Error, Sendable, CustomStringConvertible {
    public var reason: String

    public init(_ reason: String) {
        self.reason = reason
    }

    public var description: String { "cannot start a PostgreSQL server for the tests: \(reason)" }
}
