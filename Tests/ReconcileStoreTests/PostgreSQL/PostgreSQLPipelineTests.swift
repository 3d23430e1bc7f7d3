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

    @Test("writes past the queue's limit go out at once while the transaction goes on; one that failed fails the commit, and nothing is kept")
    func streamedFailure() async throws {
        let connection = try await connection()
        try connection.run("INSERT INTO t VALUES (1, 'first')")
        let count = 2 * PostgreSQLConnection.pipelineLimit
        var sentMeanwhile = 0
        let error = try #require(throws: PostgreSQLError.self) {
            try connection.transaction {
                try connection.sendLater("INSERT INTO t VALUES ($1, 'duplicate')", [.integer(1)])
                let before = connection.statementsRun
                for i in 10..<(10 + count) { try connection.sendLater("INSERT INTO t VALUES ($1, NULL)", [.integer(Int64(i))]) }
                // Streamed, unanswered: the failure is not known yet (a pipeline that waited
                // for its answers would have thrown in the loop).
                sentMeanwhile = connection.statementsRun - before
            }
        }
        #expect(sentMeanwhile >= PostgreSQLConnection.pipelineLimit, "nothing went out before the commit")
        #expect(error.isUniqueViolation && error.sql?.contains("'duplicate'") == true && !error.commitOutcomeUnknown)
        #expect(try stored(connection) == [1])
        try connection.transaction {
            for i in 2...(count + 1) { try connection.sendLater("INSERT INTO t VALUES ($1, NULL)", [.integer(Int64(i))]) }
        }
        #expect(try stored(connection) == (1...(count + 1)).map(Int64.init))
    }

    @Test("a savepoint whose body streamed a failing write and threw goes back to the savepoint; the transaction goes on")
    func streamedSavepoint() async throws {
        let connection = try await connection()
        try connection.transaction {
            try connection.sendLater("INSERT INTO t VALUES ($1, NULL)", [.integer(1)])
            _ = try? connection.savepoint {
                try connection.sendLater("INSERT INTO t VALUES ($1, NULL)", [.integer(1)])  // fails, streamed
                for i in 100..<(100 + 2 * PostgreSQLConnection.pipelineLimit) {
                    try connection.sendLater("INSERT INTO t VALUES ($1, NULL)", [.integer(Int64(i))])
                }
                throw Abandon()
            }
            try connection.sendLater("INSERT INTO t VALUES ($1, NULL)", [.integer(3)])
        }
        #expect(try stored(connection) == [1, 3])
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

/// Held-back writes of one template with a multi-row form (`SQLBatch`), for different orders,
/// sent as one statement: every row lands exactly as if each had gone alone, each order's writes
/// keep their order, and a write without a batch form keeps its place.
@Suite("PostgreSQL multi-row writes", .enabled(if: PostgreSQLTestServer.isEnabled, "no PostgreSQL server (reason printed above)"), .postgreSQLTurn)
struct PostgreSQLBatchedWriteTests {
    private static let mark = SQLValue.null
    /// `(order, note, data)`: a history-like row keyed by its order.
    static let insertRow = SQLTemplate(
        "INSERT INTO r (k, note, data) VALUES (\(mark), \(mark), \(mark))",
        batch: .insert(into: "r", columns: ["k", "note", "data"], key: "k"))
    /// `(order, note, data)` again, sent as binary arrays through `unnest`.
    static let insertWide = SQLTemplate(
        "INSERT INTO r (k, note, data) VALUES (\(mark), \(mark), \(mark))",
        batch: .unnest(into: "r", columns: [("k", "bigint"), ("note", "text"), ("data", "bytea")], key: "k"))
    /// `(note, id)`: an update by key.
    static let updateOrder = SQLTemplate("UPDATE o SET note = \(mark) WHERE id = \(mark)", batch: .update("o", columns: ["note"]))
    /// `(id, note)`: an insert whose row is read back, matched by its note.
    static let insertOrder = SQLTemplate(
        "INSERT INTO o (id, note) VALUES (\(mark), \(mark)) ON CONFLICT (id) DO NOTHING RETURNING id, note",
        batch: .insert(into: "o", columns: ["id", "note"], key: "id", suffix: "ON CONFLICT (id) DO NOTHING RETURNING id, note")
            .returning(1, inColumn: 1))
    /// The same, its rows sent as binary arrays through `unnest` (an order's insert).
    static let insertOrderUnnested = SQLTemplate(
        "INSERT INTO o (id, note) VALUES (\(mark), \(mark)) ON CONFLICT (id) DO NOTHING RETURNING id, note",
        batch: .unnest(into: "o", columns: [("id", "bigint"), ("note", "text")], key: "id", suffix: "ON CONFLICT (id) DO NOTHING RETURNING id, note")
            .returning(1, inColumn: 1))

    private func connection() async throws -> PostgreSQLConnection {
        let connection = try await PostgreSQLTestDatabase.make().connect()
        try connection.execute(
            """
            CREATE TABLE o (id bigint PRIMARY KEY, note text);
            CREATE TABLE r (id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, k bigint NOT NULL, note text CHECK (note <> 'refused'), data bytea);
            INSERT INTO o SELECT g, 'start' FROM generate_series(1, 5) AS g;
            """)
        return connection
    }

    private func rows(_ connection: PostgreSQLConnection) throws -> [String] {
        try connection.query("SELECT k, coalesce(note, '-'), coalesce(encode(data, 'hex'), '-') FROM r ORDER BY id") {
            "\($0.int64(0)) \($0.string(1)) \($0.string(2))"
        }
    }

    @Test("uses for different orders become one statement; the rows land in order, text and bytes exactly")
    func oneStatement() async throws {
        let connection = try await connection()
        // Text JSON must escape, and bytes, exactly as given.
        let awkward = "quote \" backslash \\ tab \t newline \n bell \u{7} é 😀 {braces} [1,2] null"
        let before = connection.statementsRun
        try connection.transaction {
            for order in 1...5 {
                try connection.performLater(Self.updateOrder([.text("turn \(order)"), .integer(order)]))
                try connection.performLater(Self.insertRow([.integer(order), .text(order == 3 ? awkward : "n\(order)"), .bytes([0, UInt8(order), 0xff])]))
                try connection.performLater(Self.insertRow([.integer(order), .null, .null]))
            }
        }
        // One update, one insert (BEGIN and COMMIT are not prepared statements).
        #expect(connection.statementsRun - before == 2)
        let notes = try connection.query("SELECT note FROM o ORDER BY id") { $0.string(0) }
        #expect(notes == (1...5).map { "turn \($0)" })
        // Each order's two rows in the order they were written, the orders in turn.
        #expect(try rows(connection) == (1...5).flatMap { ["\($0) n\($0) 00\(String(format: "%02x", $0))ff", "\($0) - -"] }.map {
            $0.replacingOccurrences(of: "3 n3", with: "3 \(awkward)")
        })
    }

    @Test("uses sent as binary arrays land exactly, in order, in one statement: long text, bytes with NULs, NULLs")
    func binaryArrays() async throws {
        let connection = try await connection()
        let long = String(repeating: "receipt \" \\ é 😀 ", count: 200)
        let before = connection.statementsRun
        try connection.transaction {
            for order in 1...4 {
                try connection.performLater(
                    Self.insertWide([.integer(order), order == 2 ? .null : .text(order == 3 ? long : "n\(order)"), order == 4 ? .null : .bytes([0, UInt8(order), 0, 0xff])]))
            }
        }
        #expect(connection.statementsRun - before == 1)
        let stored = try connection.query("SELECT k, note, data FROM r ORDER BY id") { ($0.int64(0), $0.optionalString(1), $0.optionalBytes(2)) }
        #expect(stored.map(\.0) == [1, 2, 3, 4])
        #expect(stored.map(\.1) == ["n1", nil, long, "n4"])
        #expect(stored.map(\.2) == [[0, 1, 0, 0xff], [0, 2, 0, 0xff], [0, 3, 0, 0xff], nil])
        let nul = try #require(throws: PostgreSQLError.self) {
            try connection.transaction {
                try connection.performLater(Self.insertWide([.integer(1), .text("x"), .null]))
                try connection.performLater(Self.insertWide([.integer(2), .text("secret\u{0}value"), .null]))
            }
        }
        #expect(nul.message.contains("NUL") && !nul.message.contains("secret"))
        #expect(try connection.scalar("SELECT count(*) FROM r") == 4)
    }

    @Test("a second update of one order goes in a statement of its own, after the first; a write without a batch form keeps its place")
    func orderKept() async throws {
        let connection = try await connection()
        let before = connection.statementsRun
        try connection.transaction {
            try connection.performLater(Self.updateOrder([.text("first"), .integer(1)]))
            try connection.performLater(Self.updateOrder([.text("first"), .integer(2)]))
            try connection.performLater(Self.updateOrder([.text("second"), .integer(1)]))
            // A plain write: nothing written after it joins a statement before it.
            try connection.performLater("UPDATE o SET note = note || ' seen' WHERE id IN (1, 2, 3)")
            try connection.performLater(Self.updateOrder([.text("after"), .integer(3)]))
            try connection.performLater(Self.updateOrder([.text("after"), .integer(4)]))
        }
        // {1, 2}, {1}, the plain write, {3, 4}.
        #expect(connection.statementsRun - before == 4)
        let notes = try connection.query("SELECT note FROM o ORDER BY id") { $0.string(0) }
        #expect(notes == ["second seen", "first seen", "after", "after", "start"])
    }

    @Test("a failing row fails the commit naming the multi-row statement, and nothing is kept")
    func failure() async throws {
        let connection = try await connection()
        let error = try #require(throws: PostgreSQLError.self) {
            try connection.transaction {
                try connection.performLater(Self.insertRow([.integer(1), .text("fine"), .null]))
                try connection.performLater(Self.insertRow([.integer(2), .text("refused"), .null]))
                try connection.performLater(Self.insertRow([.integer(3), .text("fine"), .null]))
            }
        }
        #expect(error.sql?.contains("json_populate_recordset") == true && !error.commitOutcomeUnknown)
        #expect(try rows(connection).isEmpty)
        // A NUL character cannot be stored: said without the value.
        let nul = try #require(throws: PostgreSQLError.self) {
            try connection.transaction {
                try connection.performLater(Self.insertRow([.integer(1), .text("secret\u{0}value"), .null]))
                try connection.performLater(Self.insertRow([.integer(2), .text("x"), .null]))
            }
        }
        #expect(nul.message.contains("NUL") && !nul.message.contains("secret"))
        #expect(try rows(connection).isEmpty)
    }

    @Test("rows read back from one multi-row insert find their uses; a use that inserted nothing reads nil", arguments: ["json", "unnest"])
    func readBack(form: String) async throws {
        let connection = try await connection()
        let template = form == "json" ? Self.insertOrder : Self.insertOrderUnnested
        let before = connection.statementsRun
        let ids = try connection.transaction {
            try connection.fetchEach([7, 3, 8, 6].map { template([.integer($0), .text("new \($0)")]) }) { $0.int64(0) }
        }
        #expect(ids == [7, 3, 8, 6].map { $0 == 3 ? nil : Int64($0) })
        #expect(connection.statementsRun - before == 1)
        #expect(try connection.query("SELECT note FROM o WHERE id IN (6, 7, 8) ORDER BY id") { $0.string(0) } == ["new 6", "new 7", "new 8"])
        // Two uses that the returned value cannot tell apart go one by one.
        let same = try connection.transaction {
            try connection.fetchEach([9, 10].map { template([.integer($0), .text("same")]) }) { $0.int64(0) }
        }
        #expect(same == [9, 10])
    }

    @Test("many uses read back in several streamed statements: each row finds its use, in one round trip", arguments: ["json", "unnest"])
    func readBackStreamed(form: String) async throws {
        let connection = try await connection()
        let template = form == "json" ? Self.insertOrder : Self.insertOrderUnnested
        let count = 3 * PostgreSQLConnection.streamedUseLimit + 7
        let keys = (0..<Int64(count)).map { $0 * 7 % Int64(count) + 100 }  // shuffled
        let before = connection.statementsRun
        let ids = try connection.transaction {
            try connection.fetchEach(keys.map { template([.integer($0), .text("n\($0)")]) }) { $0.int64(0) }
        }
        #expect(ids == keys.map(Optional.init))
        #expect(connection.statementsRun - before == 4)
        #expect(try connection.scalar("SELECT count(*) FROM o WHERE id >= 100 AND note = 'n' || id") == Int64(count))
    }
}

/// Checks held until just before `COMMIT` (`checkBeforeCommit`): a claim settled there instead
/// of with a round trip of its own.
@Suite("PostgreSQL checks before commit", .enabled(if: PostgreSQLTestServer.isEnabled, "no PostgreSQL server (reason printed above)"), .postgreSQLTurn)
struct PostgreSQLCommitCheckTests {
    private static let mark = SQLValue.null
    static let taken = SQLTemplate("SELECT i FROM t WHERE i = \(mark) AND s <> \(mark)")

    private func connection() async throws -> PostgreSQLConnection {
        let connection = try await PostgreSQLTestDatabase.make().connect()
        try connection.execute("CREATE TABLE t (i bigint PRIMARY KEY, s text); INSERT INTO t VALUES (1, 'mine'), (2, 'theirs')")
        return connection
    }

    @Test("checks that find nothing let the transaction commit; one that finds a row fails it as a conflict, naming it, and nothing is kept")
    func conflict() async throws {
        let connection = try await connection()
        let before = connection.statementsRun
        try connection.transaction {
            try connection.performLater("INSERT INTO t VALUES (3, 'new')")
            try connection.checkBeforeCommit(Self.taken([.integer(1), .text("mine")]), what: "row 1")
            try connection.checkBeforeCommit(Self.taken([.integer(3), .text("new")]), what: "row 3")
        }
        // The insert and the two checks in one pipeline.
        #expect(connection.statementsRun - before == 3)
        #expect(try connection.scalar("SELECT count(*) FROM t") == 3)

        let error = try #require(throws: PostgreSQLError.self) {
            try connection.transaction {
                try connection.performLater("INSERT INTO t VALUES (4, 'new')")
                try connection.checkBeforeCommit(Self.taken([.integer(1), .text("mine")]), what: "row 1")
                try connection.checkBeforeCommit(Self.taken([.integer(2), .text("mine")]), what: "row 2 is someone else's")
            }
        }
        #expect(error.category == .conflict && error.message.contains("row 2 is someone else's"))
        #expect(try connection.scalar("SELECT count(*) FROM t") == 3)
        // The failed transaction's checks are gone with it.
        try connection.transaction { try connection.performLater("INSERT INTO t VALUES (5, 'next')") }
        #expect(try connection.scalar("SELECT count(*) FROM t") == 4)
    }

    @Test("a check registered in a savepoint whose body throws is dropped with it")
    func savepoint() async throws {
        let connection = try await connection()
        struct Abandon: Error {}
        try connection.transaction {
            _ = try? connection.savepoint {
                try connection.checkBeforeCommit(Self.taken([.integer(2), .text("mine")]), what: "row 2")
                throw Abandon()
            }
            try connection.performLater("INSERT INTO t VALUES (6, 'kept')")
        }
        #expect(try connection.scalar("SELECT count(*) FROM t WHERE i = 6") == 1)
    }
}
