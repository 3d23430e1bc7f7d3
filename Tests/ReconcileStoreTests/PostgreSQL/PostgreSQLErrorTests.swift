import Testing
@testable import ReconcileStore
@testable import ReconcilePostgreSQL

@Suite("PostgreSQL errors")
struct PostgreSQLErrorTests {
    @Test("SQLSTATEs fall into the categories a caller acts on")
    func categories() {
        #expect(PostgreSQLError.category(of: "40001") == .conflict)
        #expect(PostgreSQLError.category(of: "40P01") == .conflict)
        #expect(PostgreSQLError.category(of: "08006") == .connection)
        #expect(PostgreSQLError.category(of: "57P01") == .connection)
        #expect(PostgreSQLError.category(of: "23505") == .constraint)
        #expect(PostgreSQLError.category(of: "23514") == .constraint)
        #expect(PostgreSQLError.category(of: "42601") == .other)
        #expect(PostgreSQLError(category: .connection, message: "lost", commitOutcomeUnknown: true).isRetryable == false)
        #expect(PostgreSQLError(category: .connection, message: "lost").isRetryable)
        #expect(PostgreSQLError(category: .constraint, message: "dup").isRetryable == false)
    }
}
