import Foundation
import Glibc
import ReconcileCore
import ReconcileSQLite
import ReconcileStore
import Testing
import TestSupport

/// A migration is cut by SIGKILL at moments spread over its whole length, each time from the same
/// version-9 store: every start after a kill must find version 9 whole or version 10 (or the newest,
/// migration 11 following at once) complete,
/// with every order's proof where that version keeps it (issue 24: "kill -9 at any point leaves
/// the old schema usable or the new one complete").
@Suite("End to end: a migration killed at any moment")
struct MigrationKillEndToEndTests {
    static let orders = 20_000
    static let receipt = String(repeating: "QUJD", count: 150)

    /// A version-9 store of ``orders`` pending orders with receipts and raw files.
    static func makeVersion9Store(at path: String) throws {
        let old = try SQLiteOrderStore(
            path: path, mode: .owner, migrator: SchemaMigrator(migrations: Array(StoreSchema.migrations.prefix { $0.version < 10 })))
        try old.write { connection in
            for index in 0..<orders {
                try connection.run(
                    """
                    INSERT INTO orders (order_id, product_id, state, content_hash, received_at, updated_at, next_attempt_at, receipt, raw)
                    VALUES (?, 'gems', 'pending', 'h', 0, 0, 0, ?, x'7b7d')
                    """, [.text("M\(index)"), .text(receipt)])
            }
        }
        old.close()
    }

    /// What a start after a kill finds: the version, and whether every order's proof is whole.
    static func inspect(_ path: String) throws -> (version: Int, whole: Bool) {
        let connection = try SQLiteConnection(path: path, mode: .readWrite(create: false))
        defer { connection.close() }
        let check = try connection.queryFirst("PRAGMA quick_check") { $0.string(0) }
        let version = Int(try connection.scalar("SELECT max(version) FROM schema_migrations") ?? 0)
        let proofs = try connection.scalar("SELECT count(*) FROM sqlite_schema WHERE name = 'order_proofs'") ?? 0
        let inOrders = try connection.scalar("SELECT count(*) FROM orders WHERE receipt = ? AND raw IS NOT NULL", [.text(receipt)]) ?? -1
        let whole: Bool
        switch version {
        case 9: whole = proofs == 0 && inOrders == Int64(orders)
        case 10...:
            // Migration 10 and any later one (11 adds a table and a column, in one transaction).
            let apart = try connection.scalar("SELECT count(*) FROM order_proofs WHERE receipt = ? AND raw IS NOT NULL", [.text(receipt)]) ?? -1
            whole = apart == Int64(orders) && inOrders == 0
        default: whole = false
        }
        let total = try connection.scalar("SELECT count(*) FROM orders") ?? 0
        return (version, whole && check == "ok" && total == Int64(orders))
    }

    @Test("SIGKILL during migration 10, again and again: version 9 whole or 10 complete after each, every proof kept; then it migrates")
    func killedMigrations() async throws {
        let harness = Harness("migration-kill")
        try FileManager.default.createDirectory(atPath: harness.directory.file("state"), withIntermediateDirectories: true)
        // Nothing answers: the orders only wait, and the test reads the store as the kills left it.
        harness.configure("""
            [Verifier]
            Kind=http
            URL=http://127.0.0.1:9/verify
            """)
        let path = harness.directory.file("state/orders.db")
        try Self.makeVersion9Store(at: path)
        let pristine = harness.directory.file("version9.db")
        #expect(Self.copyfile(path, pristine))

        var seen: [Int: Int] = [:]
        let kills = 10
        for attempt in 0..<kills {
            // Keyed to the daemon's own progress, not to time from its start (a loaded machine
            // stretches a start past any fixed delay): from the moment it says it applies
            // migration 10, the first kill at once, each later one 60 ms more into it. Real time
            // on purpose: the kill must land inside another process's migration.
            let delay = TestTime.scaled(.milliseconds(attempt * 60))
            let daemon = try harness.startDaemon(logLevel: "notice")
            _ = await eventually(timeout: .seconds(30), every: .milliseconds(2)) {
                daemon.standardError.contains("migration 10:") || !daemon.isRunning
            }
            if attempt > 0 { try await Task.sleep(for: delay) }  // real sleep: into another process's migration
            daemon.send(SIGKILL)
            _ = await daemon.wait()
            let found = try Self.inspect(path)
            seen[found.version, default: 0] += 1
            #expect(found.whole, "after a kill \(delay) into migration 10, version \(found.version) is not whole: \(daemon.standardError.suffix(600))")
            // Each try migrates from version 9 again.
            if found.version >= 10 {
                for suffix in ["", "-wal", "-shm", ".pre-10", ".pre-11"] { unlink(path + suffix) }
                #expect(Self.copyfile(pristine, path))
            }
            unlink(path + ".pre-10")
            unlink(path + ".pre-11")
        }
        // The last start completes the migration, and the store reads every proof back.
        let daemon = try await harness.startDaemonAndWait(logLevel: "notice")
        daemon.send(SIGTERM)
        #expect(await daemon.wait() == 0)
        let after = try Self.inspect(path)
        #expect(after.version == StoreSchema.latestVersion && after.whole)
        let store = try SQLiteOrderStore(path: path, mode: .readOnly)
        #expect(try store.order(id: "M0")?.proof.receipt == Self.receipt)
        #expect(try store.order(id: "M\(Self.orders - 1)")?.proof.receipt == Self.receipt)
        store.close()
        // Every kill was inspected. Which version each found depends on how fast the machine is:
        // alone it sees both (kills before and after the commit); under a full parallel suite a
        // two-core machine may finish the migration before the first kill lands, so both are not
        // required, only that every state a kill left was whole.
        #expect(seen.values.reduce(0, +) == kills, "versions seen after the kills: \(seen)")
    }

    /// Copies a file whole (the store is closed).
    static func copyfile(_ from: String, _ to: String) -> Bool {
        guard let data = FileManager.default.contents(atPath: from) else { return false }
        return FileManager.default.createFile(atPath: to, contents: data)
    }
}
