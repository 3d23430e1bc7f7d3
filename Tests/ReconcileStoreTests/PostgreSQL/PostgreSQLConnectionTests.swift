import Foundation
import Testing
import TestSupport
@testable import ReconcileStore
@testable import ReconcilePostgreSQL

@Suite("PostgreSQL connection", .enabled(if: PostgreSQLTestServer.isEnabled, "no PostgreSQL server (reason printed above)"), .postgreSQLTurn)
struct PostgreSQLConnectionTests {
    let secret = "MIIT-receipt-s3cret-4711"

    @Test("values go apart from the SQL and come back the same, read as text or as binary")
    func roundTrip() async throws {
        let connection = try await PostgreSQLTestDatabase.make().connect()
        try connection.execute("CREATE TABLE t (i bigint, n integer, s text, b bytea, f boolean)")
        let text = "it's \"quoted\"; DROP TABLE t; -- ünïcødé ✓ \\ {a,b}"
        let bytes: [UInt8] = [0, 1, 2, 0xff, 0, 39, 92]
        try connection.run("INSERT INTO t VALUES ($1, $2, $3, $4, $5)", [.integer(Int64.min), .integer(Int64(-7)), .text(text), .bytes(bytes), .boolean(true)])
        try connection.run("INSERT INTO t VALUES ($1, $2, $3, $4, $5)", [.integer(Int64.max), .null, .text(""), .bytes([]), .boolean(false)])
        for format in [PostgreSQLConnection.ResultFormat.text, .binary] {
            let rows = try connection.query("SELECT i, n, s, b, f FROM t ORDER BY i", format: format) {
                ($0.int64(0), $0.optionalInt64(1), $0.string(2), $0.bytes(3), $0.bool(4))
            }
            #expect(rows.count == 2)
            #expect(rows[0] == (.min, -7, text, bytes, true), "\(format)")
            #expect(rows[1] == (.max, nil, "", [], false), "\(format)")
        }
        #expect(try connection.scalar("SELECT count(*) FROM t WHERE s = ANY($1::text[])", [.textArray(["x", text, "NULL", "{}", "a,b"])]) == 1)
        #expect(try connection.scalar("SELECT count(*) FROM t WHERE i = ANY($1::bigint[])", [.integerArray([.max, 3])]) == 1)
        #expect(try connection.scalar("SELECT count(*) FROM t WHERE s = ANY($1::text[])", [.textArray([])]) == 0)
        #expect(try connection.queryFirst("SELECT s FROM t WHERE i = $1", [.integer(42)]) { $0.string(0) } == nil)
    }

    @Test("a transaction commits when its body returns, rolls back when it throws; a savepoint undoes only its part")
    func transactions() async throws {
        let connection = try await PostgreSQLTestDatabase.make().connect()
        try connection.execute("CREATE TABLE t (i bigint PRIMARY KEY)")
        try connection.transaction { try connection.run("INSERT INTO t VALUES (1)") }
        struct Abandon: Error {}
        #expect(throws: Abandon.self) {
            try connection.transaction {
                try connection.run("INSERT INTO t VALUES (2)")
                throw Abandon()
            }
        }
        try connection.transaction {
            try connection.run("INSERT INTO t VALUES (3)")
            _ = try? connection.savepoint {
                try connection.run("INSERT INTO t VALUES (4)")
                throw Abandon()
            }
            // A failed statement inside a savepoint leaves the transaction usable.
            _ = try? connection.savepoint { try connection.run("INSERT INTO t VALUES (1)") }
            try connection.run("INSERT INTO t VALUES (5)")
        }
        #expect(try connection.query("SELECT i FROM t ORDER BY i") { $0.int64(0) } == [1, 3, 5])
    }

    @Test("errors carry SQLSTATE, category and constraint, and never a parameter's value")
    func errors() async throws {
        let connection = try await PostgreSQLTestDatabase.make().connect()
        try connection.execute("CREATE TABLE claims (transaction_id text PRIMARY KEY, note text CHECK (note <> 'bad'))")
        try connection.run("INSERT INTO claims VALUES ($1, 'ok')", [.text(secret)])

        let unique = try #require(throws: PostgreSQLError.self) { try connection.run("INSERT INTO claims VALUES ($1, 'ok')", [.text(secret)]) }
        #expect(unique.sqlState == "23505" && unique.category == .constraint && unique.isUniqueViolation && unique.constraint == "claims_pkey")
        #expect(unique.sql?.contains("INSERT INTO claims") == true)

        let check = try #require(throws: PostgreSQLError.self) { try connection.run("INSERT INTO claims VALUES ($1, $2)", [.text(secret + "2"), .text("bad")]) }
        #expect(check.sqlState == "23514" && check.category == .constraint)

        // A data exception's own message quotes the value: it is replaced.
        let data = try #require(throws: PostgreSQLError.self) { try connection.scalar("SELECT $1::bigint", [.text(secret)]) }
        #expect(data.sqlState == "22P02" && data.category == .other)

        let syntax = try #require(throws: PostgreSQLError.self) { try connection.run("SELEC 1") }
        #expect(syntax.sqlState == "42601" && syntax.category == .other)

        let nul = try #require(throws: PostgreSQLError.self) { try connection.run("SELECT $1::text", [.text(secret + "\u{0}")]) }
        #expect(nul.sqlState == nil)

        for error in [unique, check, data, syntax, nul] {
            #expect(!error.description.contains(secret) && !error.message.contains(secret), "\(error)")
        }
        // The connection goes on after errors outside a transaction.
        #expect(try connection.scalar("SELECT 1") == 1)
    }

    @Test("a deadlock between two connections is a conflict, which the transaction may simply run again")
    func deadlock() async throws {
        let database = try await PostgreSQLTestDatabase.make()
        let setup = try database.connect()
        try setup.execute("CREATE TABLE t (i bigint PRIMARY KEY, v bigint); INSERT INTO t VALUES (1, 0), (2, 0)")
        // Neither asks for its second row before both hold their first: a deadlock however slow
        // either connection is to start.
        let bothHoldTheirFirst = StartingGate(2)
        let outcomes = try await StartingGate.race(2) { index -> PostgreSQLError? in
            let connection = try database.connect()
            let (first, second): (Int64, Int64) = index == 0 ? (1, 2) : (2, 1)
            do {
                try connection.transaction {
                    try connection.run("UPDATE t SET v = v + 1 WHERE i = $1", [.integer(first)])
                    bothHoldTheirFirst.wait()
                    try connection.run("UPDATE t SET v = v + 1 WHERE i = $1", [.integer(second)])
                }
                return nil
            } catch let error as PostgreSQLError {
                return error
            }
        }
        let failures = outcomes.compactMap { $0 }
        #expect(failures.count == 1, "\(outcomes)")
        #expect(failures.first?.sqlState == "40P01" && failures.first?.category == .conflict && failures.first?.isRetryable == true)
    }

    @Test("a lost connection is classified as such, and reconnecting brings it back")
    func lostConnection() async throws {
        let database = try await PostgreSQLTestDatabase.make()
        let connection = try database.connect()
        _ = try connection.scalar("SELECT $1::bigint", [.integer(1)])  // a prepared statement, to prepare again later
        let administration = try database.connect()
        _ = try administration.scalar("SELECT count(*) FROM (SELECT pg_terminate_backend($1)) t", [.integer(Int64(connection.backendPID))])
        let lost = try #require(throws: PostgreSQLError.self) { try connection.scalar("SELECT $1::bigint", [.integer(1)]) }
        #expect(lost.category == .connection && lost.isRetryable, "\(lost)")
        #expect(!connection.isConnected)
        try connection.reconnect()
        #expect(try connection.scalar("SELECT $1::bigint", [.integer(2)]) == 2)
    }

    @Test("over TCP the password is needed; a wrong one fails as a connection error that does not contain it")
    func password() async throws {
        let database = try await PostgreSQLTestDatabase.make()
        let server = database.server
        let right = try PostgreSQLConnection(PostgreSQLConnectionOptions(uri: server.tcpURI(database: database.name), password: server.password))
        #expect(try right.scalar("SELECT 1") == 1)
        let wrongPassword = "wrong-\(secret)"
        let wrong = try #require(throws: PostgreSQLError.self) {
            try PostgreSQLConnection(PostgreSQLConnectionOptions(uri: server.tcpURI(database: database.name), password: wrongPassword))
        }
        #expect(wrong.category == .connection && wrong.message.contains("password authentication failed"), "\(wrong)")
        #expect(!wrong.description.contains(wrongPassword))
        // A password inside the URI is not shown either.
        let inURI = "postgresql://\(server.user):\(wrongPassword)@127.0.0.1:\(server.port)/\(database.name)"
        let failed = try #require(throws: PostgreSQLError.self) { try PostgreSQLConnection(PostgreSQLConnectionOptions(uri: inURI)) }
        #expect(!failed.description.contains(wrongPassword) && failed.description.contains(":***@127.0.0.1"), "\(failed)")
    }

    @Test("nothing listening: a connection error naming the place, without its password")
    func unreachable() async throws {
        let failed = try #require(throws: PostgreSQLError.self) {
            try PostgreSQLConnection(PostgreSQLConnectionOptions(uri: "postgresql://u:\(secret)@127.0.0.1:1/db", connectTimeoutSeconds: 2))
        }
        #expect(failed.category == .connection && failed.description.contains("postgresql://u:***@127.0.0.1:1/db"), "\(failed)")
        #expect(!failed.description.contains(secret))
    }
}
