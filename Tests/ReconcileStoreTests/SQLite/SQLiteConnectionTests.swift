import Testing
import TestSupport
@testable import ReconcileStore
@testable import ReconcileSQLite

@Suite("SQLite connection")
struct SQLiteConnectionTests {
    let directory = TemporaryDirectory(prefix: "sqlite")

    func open() throws -> SQLiteConnection {
        try SQLiteConnection(path: directory.file("t.db"), mode: .readWrite(create: true))
    }

    @Test("binds every value kind and reads it back")
    func binding() throws {
        let connection = try open()
        try connection.execute("CREATE TABLE t (a, b, c, d, e)")
        try connection.run("INSERT INTO t VALUES (?, ?, ?, ?, ?)", [.null, .integer(-7), .real(2.5), .text("x'y\"z"), .blob([0, 1, 255])])
        let row = try connection.queryFirst("SELECT a, b, c, d, e FROM t") {
            ($0.isNull(0), $0.int64(1), $0.double(2), $0.string(3), $0.blob(4))
        }
        #expect(row?.0 == true)
        #expect(row?.1 == -7)
        #expect(row?.2 == 2.5)
        #expect(row?.3 == "x'y\"z")
        #expect(row?.4 == [0, 1, 255])
        try connection.run("INSERT INTO t (e) VALUES (?)", [.blob([])])
        #expect(try connection.scalar("SELECT count(*) FROM t") == 2)
    }

    @Test("a transaction commits on return and rolls back on throw")
    func transactions() throws {
        struct Failure: Error {}
        let connection = try open()
        try connection.execute("CREATE TABLE t (a)")
        try connection.transaction { try connection.run("INSERT INTO t VALUES (1)") }
        #expect(throws: Failure.self) {
            try connection.transaction {
                try connection.run("INSERT INTO t VALUES (2)")
                throw Failure()
            }
        }
        #expect(try connection.scalar("SELECT count(*) FROM t") == 1)
    }

    @Test("statements are cached by SQL text")
    func cache() throws {
        let connection = try open()
        let first = try connection.prepared("SELECT 1")
        let second = try connection.prepared("SELECT 1")
        #expect(first === second)
    }

    @Test("errors carry the code and SQL, never the bound values")
    func errorsHideValues() throws {
        let connection = try open()
        try connection.execute("CREATE TABLE t (a TEXT UNIQUE)")
        try connection.run("INSERT INTO t VALUES (?)", [.text("SECRET-RECEIPT")])
        do {
            try connection.run("INSERT INTO t VALUES (?)", [.text("SECRET-RECEIPT")])
            Issue.record("duplicate insert succeeded")
        } catch let error as SQLiteError {
            #expect(error.isConstraint)
            #expect(error.sql == "INSERT INTO t VALUES (?)")
            #expect(!error.description.contains("SECRET"))
        }
        #expect(throws: SQLiteError.self) { try connection.run("SELEC nonsense") }
    }

    @Test("busy: a second writer waits for the busy timeout, then fails with SQLITE_BUSY")
    func busy() throws {
        let path = directory.file("busy.db")
        let first = try SQLiteConnection(path: path, mode: .readWrite(create: true))
        try first.execute("PRAGMA journal_mode = WAL; CREATE TABLE t (a)")
        let second = try SQLiteConnection(path: path, mode: .readWrite(create: false), busyTimeout: .milliseconds(100))
        try first.run("BEGIN IMMEDIATE")
        do {
            try second.transaction { try second.run("INSERT INTO t VALUES (1)") }
            Issue.record("second writer got the lock")
        } catch let error as SQLiteError {
            #expect(error.isBusy)
            #expect(StoreFailureKindProbe.kind(error) == "busy")
        }
        try first.run("COMMIT")
        try second.transaction { try second.run("INSERT INTO t VALUES (1)") }
    }
}

import ReconcileCore

enum StoreFailureKindProbe {
    static func kind(_ error: any Error) -> String { StoreFailure.of(error).rawValue }
}
