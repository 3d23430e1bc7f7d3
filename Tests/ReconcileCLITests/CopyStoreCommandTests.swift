import Foundation
import ReconcileCore
import Testing
import TestSupport
@testable import ReconcileCLI
@testable import ReconcileStore
@testable import ReconcileSQLite
@testable import ReconcilePostgreSQL

/// `reconcilectl copy-store` (DESIGN §7): the SQLite store, an order in every state, copied into
/// an empty PostgreSQL database on the tests' own server — every order, its history and its
/// claims the same there, the counts said; a database that holds orders refused. Everything
/// that waits for the server runs off Swift's cooperative pool (``offPool``), which the other
/// suites' timing tests need.
@Suite("reconcilectl copy-store", .enabled(if: PostgreSQLTestServer.isEnabled, "no PostgreSQL server (reason printed above)"))
struct CopyStoreCommandTests {
    /// A fresh database on the test server; its URI (the unix socket: no password).
    static func emptyDatabase() throws -> String {
        let server = try PostgreSQLTestServer.shared()
        let name = "copy_\(UInt32.random(in: 0 ... .max))"
        let administration = try PostgreSQLConnection(PostgreSQLConnectionOptions(uri: server.socketURI(database: "postgres")))
        // A name of our own making: CREATE DATABASE takes no parameters.
        try administration.execute("CREATE DATABASE \(name)")
        return server.socketURI(database: name)
    }

    @Test("every order, its history and claims, the store notifications and the polling checkpoints copied the same; the counts said; a second copy into the same database refused")
    func copies() async throws {
        let fixture = try CLIFixture()
        do {
            // A refund of the finished order (revoked, a revocation notice owed), one for nobody,
            // and a poll's checkpoint.
            let store = try SQLiteOrderStore(path: fixture.directory.file("state/orders.db"), mode: .owner)
            defer { store.close() }
            let notifications = [("n-1", "7777"), ("n-2", "9999")].map { id, transaction in
                StoreNotification(source: .appStore, notificationID: id, type: "REFUND", transactionID: transaction, via: .file)
            }
            #expect(try store.ingestNotifications(notifications, now: CLIFixture.now).count == 2)
            try store.advanceCheckpoint("appstore-production", to: CLIFixture.now, now: CLIFixture.now)
        }
        let uri = try await offPool { try Self.emptyDatabase() }
        let copied = try await offPool { fixture.run(["copy-store", uri]) }
        #expect(copied.status == 0, "\(copied.err)")
        #expect(copied.out.hasPrefix("copied <dir>/state/orders.db into ") && copied.out.contains("counts checked on both sides"), "\(copied.out)")
        let compared = try await offPool { try Self.compare(sqlite: fixture.directory.file("state/orders.db"), postgres: uri) }
        #expect(copied.err.isEmpty, "no progress when standard error is not a terminal: \(copied.err)")
        #expect(compared.orders >= OrderState.allCases.count)
        #expect(compared.differences.isEmpty, "\(compared.differences)")

        let again = try await offPool { fixture.run(["copy-store", uri]) }
        #expect(again.status != 0)
        #expect(again.err.contains("already holds \(compared.orders) orders; copy-store copies into an empty database only"), "\(again.err)")
    }

    @Test("a claim and a checkpoint keyed by the empty text are copied too (the first keyset page had '' as its bound)")
    func emptyKeys() async throws {
        let fixture = try CLIFixture()
        do {
            let store = try SQLiteOrderStore(path: fixture.directory.file("state/orders.db"), mode: .owner)
            defer { store.close() }
            try store.withConnection { connection in
                try connection.execute("INSERT INTO claims (transaction_id, order_ref, claimed_at, actor) SELECT '', min(id), 0, 'operator:eve' FROM orders")
            }
            try store.advanceCheckpoint("", to: CLIFixture.now, now: CLIFixture.now)
        }
        let uri = try await offPool { try Self.emptyDatabase() }
        let copied = try await offPool { fixture.run(["copy-store", uri]) }
        #expect(copied.status == 0, "\(copied.err)")
        #expect(!copied.err.contains("nothing was committed"), "\(copied.err)")
        let compared = try await offPool { try Self.compare(sqlite: fixture.directory.file("state/orders.db"), postgres: uri) }
        #expect(compared.differences.isEmpty, "\(compared.differences)")
        let there = try await offPool {
            let connection = try PostgreSQLConnection(PostgreSQLConnectionOptions(uri: uri))
            defer { connection.close() }
            return try connection.scalar("SELECT count(*) FROM claims WHERE transaction_id = ''")
        }
        #expect(there == 1)
    }

    @Test("counts that differ after the commit say the copy was committed, and what it holds")
    func differAfterCommit() async throws {
        let fixture = try CLIFixture()
        let uri = try await offPool { try Self.emptyDatabase() }
        let failure: StoreCopy.Failure? = try await offPool {
            let source = try SQLiteOrderStore(path: fixture.directory.file("state/orders.db"), mode: .readOnly)
            defer { source.close() }
            let target = try PostgreSQLOrderStore(options: PostgreSQLConnectionOptions(uri: uri), node: "copy-test")
            defer { target.close() }
            do {
                _ = try StoreCopy.copy(from: source, to: target, afterCommit: {
                    // Someone else writes to the database between the commit and the count.
                    try target.withConnection { try $0.execute("INSERT INTO checkpoints (name, value, updated_at) VALUES ('intruder', 0, 0)") }
                })
                return nil
            } catch let failure as StoreCopy.Failure {
                return failure
            }
        }
        let described = try #require(failure).description
        #expect(described.hasPrefix("the copy was committed ("), "\(described)")
        #expect(described.contains("checkpoints has 0 rows in the SQLite store and 1 in PostgreSQL"), "\(described)")
        #expect(!described.contains("nothing was committed"))
    }

    /// Every order, its history, the counts by state and every table's rows, on both sides: what
    /// differs (empty when nothing does), and how many orders there are.
    static func compare(sqlite path: String, postgres uri: String) throws -> (orders: Int, differences: [String]) {
        let sqlite = try SQLiteOrderStore(path: path, mode: .readOnly)
        defer { sqlite.close() }
        let postgres = try PostgreSQLOrderStore(options: PostgreSQLConnectionOptions(uri: uri), node: "copy-test")
        defer { postgres.close() }
        var differences: [String] = []
        if try postgres.countsByState() != sqlite.countsByState() { differences.append("counts by state") }
        if try postgres.notifications(unmatchedOnly: false, limit: 1000) != sqlite.notifications(unmatchedOnly: false, limit: 1000) {
            differences.append("notifications")
        }
        if try postgres.checkpoint("appstore-production") != sqlite.checkpoint("appstore-production") { differences.append("checkpoints") }
        let ids = try sqlite.withConnection { try $0.query("SELECT order_id FROM orders ORDER BY id") { $0.string(0) } }
        for id in ids {
            if try postgres.order(id: id) != sqlite.order(id: id) { differences.append("order \(id)") }
            if try postgres.history(orderID: id) != sqlite.history(orderID: id) { differences.append("history of \(id)") }
        }
        for table in StoreCopy.tables {
            let here = try sqlite.withConnection { try $0.scalar("SELECT count(*) FROM \(table)") }
            let there = try postgres.withConnection { try $0.scalar("SELECT count(*) FROM \(table)") }
            if here != there { differences.append("\(table): \(String(describing: here)) here, \(String(describing: there)) there") }
        }
        return (ids.count, differences)
    }

    @Test("a URI that is not PostgreSQL's is a usage error that names it")
    func notPostgreSQL() throws {
        let fixture = try CLIFixture(populate: false)
        let result = fixture.run(["copy-store", "/var/lib/reconciled/other.db"])
        #expect(result.status == 64)
        #expect(result.err.contains("'/var/lib/reconciled/other.db' is not a PostgreSQL URI (postgresql://…)"), "\(result.err)")
    }
}
