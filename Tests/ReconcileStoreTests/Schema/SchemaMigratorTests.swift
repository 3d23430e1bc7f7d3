import Foundation
import Testing
import ReconcileCore
import TestSupport
@testable import ReconcileStore
@testable import ReconcileSQLite
import ReconcileFoundation

@Suite("Schema migrations")
struct SchemaMigratorTests {
    let fixture = StoreFixture()

    /// Migration `version` with a statement that fails after all of its own (as a crash would
    /// cut it).
    static func cutHalfWay(_ version: Int) -> Migration {
        var broken = StoreSchema.migrations.first { $0.version == version }!
        broken.sql += "\nINSERT INTO no_such_table VALUES (1);"
        return broken
    }

    /// A migration one past this build's newest, as a later reconciled would bring.
    static let extra = Migration(version: StoreSchema.latestVersion + 1, name: "notes", sql: "ALTER TABLE orders ADD COLUMN note TEXT")

    @Test("a fresh store gets the whole schema, WAL and synchronous=FULL")
    func fresh() throws {
        let store = try fixture.open()
        #expect(try store.scalar("SELECT max(version) FROM schema_migrations") == Int64(StoreSchema.latestVersion))
        #expect(try store.scalar("PRAGMA user_version") == Int64(StoreSchema.latestVersion))
        #expect(try store.withConnection { try $0.queryFirst("PRAGMA journal_mode") { $0.string(0) } } == "wal")
        #expect(try store.scalar("PRAGMA synchronous") == 2)  // FULL
        #expect(try store.scalar("PRAGMA foreign_keys") == 1)
        #expect(!FileManager.default.fileExists(atPath: fixture.path + ".pre-1"))
    }

    @Test("migrates an older schema after copying it aside, keeping the data")
    func migratesOlder() throws {
        do {
            let old = try SQLiteOrderStore(path: fixture.path, mode: .owner, migrator: SchemaMigrator(migrations: [StoreSchema.migrations[0]]))
            // Written as the version-1 schema has it (today's code reads columns it lacks).
            try old.write { connection in
                try connection.run(
                    """
                    INSERT INTO orders (order_id, product_id, state, content_hash, received_at, updated_at, next_attempt_at)
                    VALUES ('A1', 'gems', 'pending', 'h', 0, 0, 0)
                    """)
            }
            old.close()
        }
        let migrator = SchemaMigrator(migrations: StoreSchema.migrations + [Self.extra])
        let store = try SQLiteOrderStore(path: fixture.path, mode: .owner, migrator: migrator)
        #expect(try store.scalar("SELECT max(version) FROM schema_migrations") == Int64(Self.extra.version))
        #expect(try store.scalar("SELECT count(*) FROM pragma_table_info('orders') WHERE name = 'note'") == 1)
        #expect(try store.scalar("SELECT count(*) FROM pragma_table_info('orders') WHERE name = 'held_reason'") == 1)
        #expect(try store.order(id: "A1")?.state == .pending)
        // The copy holds the old schema and the data.
        let attributes = try FileManager.default.attributesOfItem(atPath: fixture.path + ".pre-2")
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
        let copy = try SQLiteConnection(path: fixture.path + ".pre-2", mode: .readOnly)
        #expect(try copy.scalar("SELECT max(version) FROM schema_migrations") == 1)
        #expect(try copy.scalar("SELECT count(*) FROM orders") == 1)
    }

    @Test("migration 5 rebuilds orders to allow revoked: every row, column, index and reference to it kept; foreign keys on after")
    func revokedRebuild() throws {
        let before = Array(StoreSchema.migrations.prefix { $0.version < 5 })
        var indexes: [String] = []
        do {
            let old = try SQLiteOrderStore(path: fixture.path, mode: .owner, migrator: SchemaMigrator(migrations: before))
            try old.write { connection in
                try connection.run(
                    """
                    INSERT INTO orders (order_id, product_id, state, content_hash, received_at, updated_at, next_attempt_at, purchase_token, held_reason)
                    VALUES ('A1', 'gems', 'pending', 'h', 0, 0, 0, NULL, NULL), ('P1', 'gems', 'finished', 'h2', 5, 6, NULL, 'tok', 'x')
                    """)
                try connection.run("INSERT INTO transitions (order_ref, at, actor, to_state, reason) VALUES (2, 6, 'daemon', 'finished', 'verified')")
                try connection.run("INSERT INTO claims (transaction_id, order_ref, claimed_at, actor) VALUES ('google:GPA.1', 2, 6, 'daemon')")
                try connection.run(
                    """
                    INSERT INTO outbox (order_ref, kind, endpoint, idempotency_key, payload, state, created_at, updated_at)
                    VALUES (2, 'play_acknowledge', 'googleplay', 'P1:play_acknowledge', '{}', 'pending', 6, 6)
                    """)
                #expect(throws: (any Error).self) { try connection.run("UPDATE orders SET state = 'revoked' WHERE order_id = 'P1'") }
                indexes = try connection.query("SELECT name || ':' || sql FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'orders' AND sql IS NOT NULL ORDER BY name") { $0.string(0) }
            }
            old.close()
        }
        let store = try SQLiteOrderStore(
            path: fixture.path, mode: .owner, migrator: SchemaMigrator(migrations: Array(StoreSchema.migrations.prefix { $0.version <= 5 })))
        #expect(try store.scalar("PRAGMA user_version") == 5)
        #expect(try store.scalar("PRAGMA foreign_keys") == 1)
        // Read with SQL: this build's store reads the newest schema only.
        #expect(try store.scalar("SELECT count(*) FROM orders WHERE order_id = 'A1' AND state = 'pending' AND next_attempt_at = 0") == 1)
        #expect(try store.scalar("SELECT count(*) FROM orders WHERE order_id = 'P1' AND state = 'finished' AND purchase_token = 'tok'") == 1)
        #expect(try store.withConnection { try $0.query("SELECT reason FROM transitions WHERE order_ref = 2") { $0.string(0) } } == ["verified"])
        #expect(
            try store.withConnection { try $0.query("SELECT idempotency_key FROM outbox WHERE order_ref = 2") { $0.string(0) } }
                == ["P1:play_acknowledge"])
        #expect(try store.scalar("SELECT count(*) FROM claims WHERE order_ref = 2") == 1)
        let after = try store.withConnection { connection in
            try connection.query("SELECT name || ':' || sql FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'orders' AND sql IS NOT NULL ORDER BY name") { $0.string(0) }
        }
        #expect(after == indexes, "the indexes of orders changed")
        #expect(try store.scalar("SELECT count(*) FROM pragma_foreign_key_check") == 0)
        try store.write { try $0.run("UPDATE orders SET state = 'revoked' WHERE order_id = 'P1'") }
        #expect(try store.scalar("SELECT count(*) FROM orders WHERE order_id = 'P1' AND state = 'revoked'") == 1)
        #expect(throws: (any Error).self) { try store.write { try $0.run("UPDATE orders SET state = 'gone' WHERE order_id = 'P1'") } }
        #expect(throws: (any Error).self, "a reference to no order is still refused") {
            try store.write { try $0.run("INSERT INTO claims (transaction_id, order_ref, claimed_at, actor) VALUES ('x', 99, 0, 'daemon')") }
        }
    }

    @Test("migration 10 moves every order's proof and raw file apart, leaving the hot rows narrow; the store reads them back")
    func proofsApart() throws {
        let before = Array(StoreSchema.migrations.prefix { $0.version < 10 })
        let receipt = String(repeating: "QUJD", count: 300)
        do {
            let old = try SQLiteOrderStore(path: fixture.path, mode: .owner, migrator: SchemaMigrator(migrations: before))
            try old.write { connection in
                try connection.run(
                    """
                    INSERT INTO orders (order_id, product_id, state, content_hash, received_at, updated_at, next_attempt_at, receipt, signed_transaction, raw)
                    VALUES ('A1', 'gems', 'pending', 'h', 0, 0, 0, ?, NULL, x'7b7d'), ('S1', 'gems', 'finished', 'h2', 5, 6, NULL, NULL, 'a.b.c', NULL),
                           ('N1', 'gems', 'waiting', 'h3', 7, 7, NULL, NULL, NULL, NULL)
                    """, [.text(receipt)])
            }
            old.close()
        }
        let store = try SQLiteOrderStore(path: fixture.path, mode: .owner)
        #expect(try store.scalar("SELECT max(version) FROM schema_migrations") == Int64(StoreSchema.latestVersion))
        #expect(try store.order(id: "A1")?.proof.receipt == receipt)
        #expect(try store.order(id: "S1")?.proof.signedTransaction == "a.b.c")
        #expect(try store.order(id: "N1")?.proof == OrderProof())
        #expect(try store.withConnection { try $0.queryFirst("SELECT raw FROM order_proofs WHERE order_ref = 1") { $0.blob(0) } } == Array("{}".utf8))
        #expect(try store.scalar("SELECT count(*) FROM order_proofs") == 3)
        #expect(try store.scalar("SELECT count(*) FROM orders WHERE receipt IS NOT NULL OR signed_transaction IS NOT NULL OR raw IS NOT NULL") == 0)
        #expect(try store.scalar("SELECT count(*) FROM pragma_foreign_key_check") == 0)
        // New proof for a migrated order goes to its proofs row.
        _ = try store.ingest([candidate("N1", receipt: "TkVX")], verifierKind: .apple, now: Date(epochMilliseconds: 10))
        #expect(try store.order(id: "N1")?.proof.receipt == "TkVX")
    }

    @Test("a migration 10 that fails half-way leaves version 9 whole: the orders keep their proofs, no proofs table")
    func proofsApartIsAtomic() throws {
        let before = Array(StoreSchema.migrations.prefix { $0.version < 10 })
        do {
            let old = try SQLiteOrderStore(path: fixture.path, mode: .owner, migrator: SchemaMigrator(migrations: before))
            try old.write { connection in
                try connection.run(
                    """
                    INSERT INTO orders (order_id, product_id, state, content_hash, received_at, updated_at, receipt)
                    VALUES ('A1', 'gems', 'pending', 'h', 0, 0, 'QUJD')
                    """)
            }
            old.close()
        }
        #expect(throws: (any Error).self) {
            _ = try SQLiteOrderStore(path: fixture.path, mode: .owner, migrator: SchemaMigrator(migrations: before + [Self.cutHalfWay(10)]))
        }
        let check = try SQLiteConnection(path: fixture.path, mode: .readOnly)
        #expect(try check.scalar("SELECT max(version) FROM schema_migrations") == 9)
        #expect(try check.scalar("SELECT count(*) FROM sqlite_schema WHERE name = 'order_proofs'") == 0)
        #expect(try check.queryFirst("SELECT receipt FROM orders WHERE order_id = 'A1'") { $0.string(0) } == "QUJD")
    }

    @Test("migration 11 adds discovered purchases and each order's origin (NULL for orders before it); cut half-way it leaves 10 whole")
    func discoveredPurchases() throws {
        let before = Array(StoreSchema.migrations.prefix { $0.version < 11 })
        do {
            let old = try SQLiteOrderStore(path: fixture.path, mode: .owner, migrator: SchemaMigrator(migrations: before))
            // Written as version 10 wrote it (this build's store reads columns version 10 lacks).
            try old.write { connection in
                try connection.run(
                    "INSERT INTO orders (order_id, product_id, state, content_hash, received_at, updated_at) VALUES ('A1', 'gems', 'pending', 'h', 0, 0)")
                try connection.run("INSERT INTO order_proofs (order_ref, receipt) VALUES (1, 'QUJD')")
            }
            old.close()
        }
        #expect(throws: (any Error).self) {
            _ = try SQLiteOrderStore(path: fixture.path, mode: .owner, migrator: SchemaMigrator(migrations: before + [Self.cutHalfWay(11)]))
        }
        do {
            let check = try SQLiteConnection(path: fixture.path, mode: .readOnly)
            #expect(try check.scalar("SELECT max(version) FROM schema_migrations") == 10)
            #expect(try check.scalar("SELECT count(*) FROM sqlite_schema WHERE name = 'discovered_purchases'") == 0)
            #expect(try check.scalar("SELECT count(*) FROM pragma_table_info('orders') WHERE name = 'origin'") == 0)
        }
        let store = try SQLiteOrderStore(path: fixture.path, mode: .owner)
        #expect(try store.scalar("SELECT max(version) FROM schema_migrations") == Int64(StoreSchema.latestVersion))
        #expect(try store.scalar("SELECT count(*) FROM discovered_purchases") == 0)
        let order = try #require(try store.order(id: "A1"))
        #expect(order.origin == nil && order.proof.receipt == "QUJD")
    }

    @Test("refuses a database from a newer version")
    func refusesNewer() throws {
        _ = try SQLiteOrderStore(path: fixture.path, mode: .owner, migrator: SchemaMigrator(migrations: StoreSchema.migrations + [Self.extra]))
        for mode in [SQLiteOrderStore.OpenMode.owner, .readOnly, .operatorWrite] {
            do {
                _ = try fixture.open(mode)
                Issue.record("opened a newer database as \(mode)")
            } catch let error as StoreError {
                #expect(error == .newerSchema(path: fixture.path, found: Self.extra.version, supported: StoreSchema.latestVersion))
                #expect(error.description.contains("newer than this reconciled supports"))
                // Going back to the copy taken before the upgrade is named with what it costs.
                #expect(error.description.contains("\(fixture.path).pre-\(StoreSchema.latestVersion + 1)"))
                #expect(error.description.contains("loses every change made since the copy"), "\(error)")
            }
        }
    }

    @Test("only the daemon migrates; the CLI says so")
    func onlyOwnerMigrates() throws {
        _ = try SQLiteOrderStore(path: fixture.path, mode: .owner, migrator: SchemaMigrator(migrations: [StoreSchema.migrations[0]]))
        let migrator = SchemaMigrator(migrations: StoreSchema.migrations + [Self.extra])
        #expect(throws: StoreError.needsMigration(path: fixture.path, found: 1, latest: Self.extra.version)) {
            _ = try SQLiteOrderStore(path: fixture.path, mode: .readOnly, migrator: migrator)
        }
    }

    @Test("refuses a foreign SQLite database and leaves it untouched")
    func foreign() throws {
        do {
            let other = try SQLiteConnection(path: fixture.path, mode: .readWrite(create: true))
            try other.execute("CREATE TABLE customers (name TEXT); INSERT INTO customers VALUES ('x')")
        }
        let before = try Data(contentsOf: URL(fileURLWithPath: fixture.path))
        #expect(throws: StoreError.foreignDatabase(path: fixture.path)) { _ = try fixture.open() }
        #expect(try Data(contentsOf: URL(fileURLWithPath: fixture.path)) == before)
    }

    @Test("refuses a file that is not a database and leaves it untouched")
    func notADatabase() throws {
        let garbage = Data((0..<4096).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) })
        try garbage.write(to: URL(fileURLWithPath: fixture.path))
        do {
            _ = try fixture.open()
            Issue.record("opened garbage as a store")
        } catch let error as StoreError {
            guard case .unreadable = error else { Issue.record("wrong error \(error)"); return }
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: fixture.path)) == garbage)
    }

    @Test("a missing database is named for the CLI")
    func missing() {
        #expect(throws: StoreError.missing(path: fixture.path)) { _ = try fixture.open(.readOnly) }
    }

    @Test("reopening keeps everything")
    func reopen() throws {
        do {
            let store = try fixture.open()
            _ = try store.ingest([candidate("A1"), candidate("A2", receipt: nil)], verifierKind: .apple, now: t0)
        }
        let store = try fixture.open()
        #expect(try store.countsByState() == [.pending: 1, .waiting: 1])
        #expect(try store.history(orderID: "A1").count == 1)
        let reader = try fixture.open(.readOnly)
        #expect(try reader.order(id: "A2")?.state == .waiting)
    }

    @Test("a read-only store cannot write")
    func readOnly() throws {
        _ = try fixture.open()
        let reader = try fixture.open(.readOnly)
        #expect(throws: SQLiteError.self) { _ = try reader.ingest([candidate("A1")], verifierKind: .apple, now: t0) }
    }
}
