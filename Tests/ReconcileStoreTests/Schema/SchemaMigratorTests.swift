import Foundation
import Testing
import ReconcileCore
import TestSupport
@testable import ReconcileStore

@Suite("Schema migrations")
struct SchemaMigratorTests {
    let fixture = StoreFixture()

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
