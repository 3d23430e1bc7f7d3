import Foundation
import Synchronization
import Testing
import TestSupport
@testable import ReconcileStore
@testable import ReconcileSQLite
@testable import ReconcilePostgreSQL

/// Migrations of the shared store: applied once, under an advisory lock, whoever opens the
/// database first; SQLite's tables and columns; a newer, foreign or (for a non-migrating opener)
/// outdated database refused.
@Suite("PostgreSQL migrations", .enabled(if: PostgreSQLTestServer.isEnabled, "no PostgreSQL server (reason printed above)"), .postgreSQLTurn)
struct PostgreSQLMigratorTests {
    @Test("a fresh database is migrated to the newest version; opening it again applies nothing")
    func migrations() async throws {
        let database = try await PostgreSQLTestDatabase.make()
        let steps = Mutex<[String]>([])
        _ = try PostgreSQLOrderStore(options: database.options) { step in steps.withLock { $0.append(step) } }
        let all = PostgreSQLSchema.migrations
        #expect(steps.withLock { $0 } == all.map { "migration \($0.version): \($0.name)" })
        #expect(steps.withLock { $0 }.prefix(4) == [
            "migration 1: orders, transitions, attempts, claims", "migration 2: held orders remember why they were where they were",
            "migration 3: Google Play orders; the outbox of follow-up requests", "migration 4: nodes sharing the store, with their heartbeats",
        ])
        let connection = try database.connect()
        #expect(try connection.query("SELECT version FROM schema_migrations ORDER BY version") { $0.int(0) } == Array(1...all.count))
        _ = try PostgreSQLOrderStore(options: database.options) { step in steps.withLock { $0.append(step) } }
        #expect(steps.withLock { $0 }.count == all.count)
        // The tables and columns of SQLite's schema, every one.
        let columns = Set(try connection.query(
            "SELECT table_name || '.' || column_name FROM information_schema.columns WHERE table_schema = current_schema()") { $0.string(0) })
        let sqlite = try SQLiteConnection(path: ":memory:", mode: .readWrite(create: true))
        try SchemaMigrator().migrate(sqlite, backup: false)
        var expected = Set<String>()
        for table in [
            "orders", "order_proofs", "attempts", "transitions", "claims", "outbox", "nodes", "notifications", "checkpoints", "discovered_purchases",
            "schema_migrations",
        ] {
            for column in try sqlite.query("SELECT name FROM pragma_table_info(?)", [.text(table)], { $0.string(0) }) {
                expected.insert("\(table).\(column)")
            }
        }
        #expect(columns == expected)
        // An order's multi-row insert sends each column as an array of the column's own type
        // (an integer column takes bigints by assignment).
        let types = Dictionary(uniqueKeysWithValues: try connection.query(
            "SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = 'orders'"
        ) { ($0.string(0), $0.string(1) == "integer" ? "bigint" : $0.string(1)) })
        for column in OrderColumn.allCases {
            #expect(types[column.name] == column.arrayType, "orders.\(column.name)")
        }
        // Both stores take the same states (migration 5: revoked), and no other.
        try connection.run(
            "INSERT INTO orders (order_id, product_id, state, content_hash, received_at, updated_at) VALUES ('R1', 'gems', 'revoked', 'h', 0, 0)")
        #expect(throws: (any Error).self) {
            try connection.run("INSERT INTO orders (order_id, product_id, state, content_hash, received_at, updated_at) VALUES ('R2', 'gems', 'gone', 'h', 0, 0)")
        }
        try sqlite.run("INSERT INTO orders (order_id, product_id, state, content_hash, received_at, updated_at) VALUES ('R1', 'gems', 'revoked', 'h', 0, 0)")
    }

    @Test("three stores opening one fresh database at once: each migration is applied exactly once")
    func concurrentMigrations() async throws {
        let database = try await PostgreSQLTestDatabase.make()
        let applied = Mutex<[String]>([])
        _ = try await StartingGate.race(3) { _ in
            try PostgreSQLOrderStore(options: database.options) { step in applied.withLock { $0.append(step) } }.database
        }
        #expect(applied.withLock { $0 }.count == PostgreSQLSchema.migrations.count)
        #expect(try database.connect().scalar("SELECT count(*) FROM schema_migrations") == Int64(PostgreSQLSchema.migrations.count))
    }

    @Test("a newer schema, a foreign database and (for a non-migrating opener) an old one are refused with the reason")
    func refusals() async throws {
        let newer = try await PostgreSQLTestDatabase.make()
        _ = try newer.openStore()
        try newer.connect().run("INSERT INTO schema_migrations (version, name, applied_at) VALUES (99, 'future', 0)")
        let refused = try #require(throws: PostgreSQLStoreError.self) { try newer.openStore() }
        #expect(refused == .newerSchema(database: newer.options.redactedURI, found: 99, supported: PostgreSQLSchema.latestVersion))
        #expect(refused.description.contains("schema version 99, newer than this reconciled supports (\(PostgreSQLSchema.latestVersion))"))

        let foreign = try await PostgreSQLTestDatabase.make()
        try foreign.connect().execute("CREATE TABLE customers (id bigint)")
        #expect(throws: PostgreSQLStoreError.foreignDatabase(database: foreign.options.redactedURI)) { try foreign.openStore() }

        let empty = try await PostgreSQLTestDatabase.make()
        #expect(throws: PostgreSQLStoreError.needsMigration(database: empty.options.redactedURI, found: 0, latest: PostgreSQLSchema.latestVersion)) {
            try empty.openStore(migrate: false)
        }
        #expect(try empty.connect().scalar("SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()") == 0)
    }
}
