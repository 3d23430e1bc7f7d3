import Foundation
import Testing
import TestSupport
@testable import ReconcileStore
@testable import ReconcilePostgreSQL

/// Writes held back by `sendLater` and sent in one pipeline with the next statement that needs an
/// answer: the transaction sees and commits exactly what it would have with one round trip each,
/// and a failing write fails the transaction, only later.
@Suite("PostgreSQL pipelined writes", .enabled(if: PostgreSQLTestServer.isEnabled, "no PostgreSQL server (reason printed above)"), .postgreSQLTurn)
struct PostgreSQLPipelineTests {
    struct Abandon: Error {}

    private func connection() async throws -> PostgreSQLConnection {
        let connection = try await PostgreSQLTestDatabase.make().connect()
        try connection.execute("CREATE TABLE t (i bigint PRIMARY KEY, s text)")
        return connection
    }

    private func stored(_ connection: PostgreSQLConnection) throws -> [Int64] {
        try connection.query("SELECT i FROM t ORDER BY i") { $0.int64(0) }
    }

    @Test("held-back writes go, in order, with the next query, which sees them; the commit keeps them")
    func heldBackWrites() async throws {
        let connection = try await connection()
        let count = PostgreSQLConnection.pipelineLimit + 44
        let seen = try connection.transaction {
            for i in 1...3 { try connection.sendLater("INSERT INTO t VALUES ($1, $2)", [.integer(Int64(i)), .text("v\(i)")]) }
            // The last write of the three changes the first: order is kept.
            try connection.sendLater("UPDATE t SET s = 'changed' WHERE i = $1", [.integer(1)])
            let seen = try connection.query("SELECT s FROM t ORDER BY i") { $0.string(0) }
            // More than one pipeline's worth, sent in several, the rest before COMMIT.
            for i in 10..<(10 + count) { try connection.sendLater("INSERT INTO t VALUES ($1, NULL)", [.integer(Int64(i))]) }
            return seen
        }
        #expect(seen == ["changed", "v2", "v3"])
        #expect(try stored(connection) == [1, 2, 3] + (10..<(10 + count)).map(Int64.init))
    }

    @Test("a failing held-back write fails the next statement that needs an answer, naming its own statement; nothing is kept")
    func failureAtTheNextQuery() async throws {
        let connection = try await connection()
        try connection.run("INSERT INTO t VALUES (1, 'first')")
        var heldBack = false
        let error = try #require(throws: PostgreSQLError.self) {
            try connection.transaction {
                try connection.sendLater("INSERT INTO t VALUES ($1, 'new')", [.integer(2)])
                // Held back, so it cannot fail yet.
                try connection.sendLater("INSERT INTO t VALUES ($1, 'duplicate')", [.integer(1)])
                try connection.sendLater("INSERT INTO t VALUES ($1, 'after')", [.integer(3)])
                heldBack = true
                _ = try connection.scalar("SELECT count(*) FROM t")
            }
        }
        #expect(heldBack)
        #expect(error.isUniqueViolation && error.sql?.contains("'duplicate'") == true)
        #expect(try stored(connection) == [1])
        // The connection left pipeline mode and goes on.
        try connection.transaction {
            try connection.sendLater("INSERT INTO t VALUES ($1, 'next')", [.integer(4)])
        }
        #expect(try stored(connection) == [1, 4])
    }

    @Test("a failing held-back write with nothing after it fails the commit; nothing is kept")
    func failureAtCommit() async throws {
        let connection = try await connection()
        try connection.run("INSERT INTO t VALUES (1, 'first')")
        let error = try #require(throws: PostgreSQLError.self) {
            try connection.transaction {
                try connection.sendLater("INSERT INTO t VALUES ($1, 'new')", [.integer(2)])
                try connection.sendLater("INSERT INTO t VALUES ($1, 'duplicate')", [.integer(1)])
            }
        }
        #expect(error.isUniqueViolation && !error.commitOutcomeUnknown)
        #expect(try stored(connection) == [1])
    }

    @Test("a savepoint that throws drops what its body held back; one whose write fails goes back to the savepoint")
    func savepoints() async throws {
        let connection = try await connection()
        try connection.transaction {
            try connection.sendLater("INSERT INTO t VALUES ($1, NULL)", [.integer(1)])
            _ = try? connection.savepoint {
                try connection.sendLater("INSERT INTO t VALUES ($1, NULL)", [.integer(2)])
                throw Abandon()
            }
            _ = try? connection.savepoint {
                try connection.sendLater("INSERT INTO t VALUES ($1, NULL)", [.integer(1)])
                _ = try connection.scalar("SELECT 1")
            }
            try connection.sendLater("INSERT INTO t VALUES ($1, NULL)", [.integer(3)])
        }
        #expect(try stored(connection) == [1, 3])
    }

    @Test("several queries answered in one pipeline: each one's first row, in order, after the writes held back; one failing fails them all")
    func queriesTogether() async throws {
        let connection = try await connection()
        let select = "SELECT s FROM t WHERE i = $1"
        let insert = "INSERT INTO t VALUES ($1, $2) ON CONFLICT (i) DO NOTHING RETURNING s"
        let answers = try connection.transaction {
            try connection.sendLater("INSERT INTO t VALUES ($1, $2)", [.integer(1), .text("held back")])
            return try connection.queryEach(
                [(select, [.integer(1)], nil), (select, [.integer(2)], nil), (insert, [.integer(3), .text("new")], nil), (insert, [.integer(1), .text("taken")], nil)]
            ) { $0.string(0) }
        }
        #expect(answers == ["held back", nil, "new", nil])
        #expect(try stored(connection) == [1, 3])

        // More queries than one pipeline holds: sent in several, answered in order.
        let many = (100..<(100 + 2 * PostgreSQLConnection.pipelineLimit + 3)).map(Int64.init)
        let inserted = try connection.transaction {
            try connection.queryEach(many.map { ("INSERT INTO t VALUES ($1, NULL) RETURNING i", [.integer($0)], nil) }) { $0.int64(0) }
        }
        #expect(inserted == many.map(Optional.some))
        try connection.run("DELETE FROM t WHERE i >= 100")

        #expect(throws: PostgreSQLError.self) {
            try connection.transaction {
                _ = try connection.queryEach([(insert, [.integer(4), .text("kept?")], nil), ("SELECT 1 / $1::int", [.integer(0)], nil)]) { _ in true }
            }
        }
        #expect(try stored(connection) == [1, 3])
    }

    @Test("outside a transaction a write runs at once, and fails at once")
    func outsideATransaction() async throws {
        let connection = try await connection()
        try connection.sendLater("INSERT INTO t VALUES ($1, NULL)", [.integer(1)])
        #expect(try stored(connection) == [1])
        #expect(throws: PostgreSQLError.self) { try connection.sendLater("INSERT INTO t VALUES ($1, NULL)", [.integer(1)]) }
    }
}
