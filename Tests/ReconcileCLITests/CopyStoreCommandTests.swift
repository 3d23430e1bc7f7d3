import Foundation
import ReconcileCore
import Testing
import TestSupport
@testable import ReconcileCLI
@testable import ReconcileStore

/// `reconcilectl copy-store` (DESIGN §7): the SQLite store, an order in every state, copied into
/// an empty PostgreSQL database on the tests' own server — every order, its history and its
/// claims the same there, the counts said; a database that holds orders refused.
@Suite("reconcilectl copy-store", .enabled(if: PostgreSQLTestServer.isEnabled, "no PostgreSQL server (reason printed above)"))
struct CopyStoreCommandTests {
    /// A fresh database on the test server; its URI (the unix socket: no password).
    func emptyDatabase() throws -> String {
        let server = try PostgreSQLTestServer.shared()
        let name = "copy_\(UInt32.random(in: 0 ... .max))"
        let administration = try PostgreSQLConnection(PostgreSQLConnectionOptions(uri: server.socketURI(database: "postgres")))
        // A name of our own making: CREATE DATABASE takes no parameters.
        try administration.execute("CREATE DATABASE \(name)")
        return server.socketURI(database: name)
    }

    @Test("every order, its history and claims copied the same; the counts said; a second copy into the same database refused")
    func copies() throws {
        let fixture = try CLIFixture()
        let sqlite = try SQLiteOrderStore(path: fixture.directory.file("state/orders.db"), mode: .readOnly)
        defer { sqlite.close() }
        let orders = try sqlite.countsByState().values.reduce(0, +)
        let uri = try emptyDatabase()
        let copied = fixture.run(["copy-store", uri])
        #expect(copied.status == 0, "\(copied.err)")
        #expect(copied.out.hasPrefix("copied <dir>/state/orders.db into ") && copied.out.contains("counts checked on both sides"), "\(copied.out)")
        #expect(copied.err.contains("copied orders: \(orders)\n"), "\(copied.err)")

        let postgres = try PostgreSQLOrderStore(options: PostgreSQLConnectionOptions(uri: uri), node: "copy-test")
        defer { postgres.close() }
        #expect(try postgres.countsByState() == sqlite.countsByState())
        let ids = try sqlite.withConnection { try $0.query("SELECT order_id FROM orders ORDER BY id") { $0.string(0) } }
        #expect(ids.count == orders && orders >= OrderState.allCases.count)
        for id in ids {
            #expect(try postgres.order(id: id) == sqlite.order(id: id), "\(id)")
            #expect(try postgres.history(orderID: id) == sqlite.history(orderID: id), "\(id)")
        }
        for table in StoreCopy.tables {
            let here = try sqlite.withConnection { try $0.scalar("SELECT count(*) FROM \(table)") }
            let there = try postgres.withConnection { try $0.scalar("SELECT count(*) FROM \(table)") }
            #expect(here == there, "\(table)")
        }

        let again = fixture.run(["copy-store", uri])
        #expect(again.status != 0)
        #expect(again.err.contains("already holds \(orders) orders; copy-store copies into an empty database only"), "\(again.err)")
    }

    @Test("a URI that is not PostgreSQL's is a usage error that names it")
    func notPostgreSQL() throws {
        let fixture = try CLIFixture(populate: false)
        let result = fixture.run(["copy-store", "/var/lib/reconciled/other.db"])
        #expect(result.status == 64)
        #expect(result.err.contains("'/var/lib/reconciled/other.db' is not a PostgreSQL URI (postgresql://…)"), "\(result.err)")
    }
}
