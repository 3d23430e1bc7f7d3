import Foundation
import Glibc
import ReconcileCore
import Synchronization
import Testing
import TestSupport
@testable import ReconcileCLI
@testable import ReconcileStore
@testable import ReconcileSQLite
@testable import ReconcileSystem
import ReconcileFoundation

@Suite("reconcilectl backup and restore", .serialized)
struct BackupRestoreCommandTests {
    func orders(_ path: String) throws -> Int {
        try Int(SQLiteConnection(path: path, mode: .readOnly).scalar("SELECT count(*) FROM orders") ?? -1)
    }

    @Test("backup prints the copy's own count, while orders keep arriving")
    func backupCountsTheCopy() throws {
        let fixture = try CLIFixture()
        let database = fixture.directory.file("state/orders.db")
        // A writer commits orders without pause while the backups run, as the daemon would.
        let stop = Atomic<Bool>(false)
        let writing = DispatchSemaphore(value: 0)
        let writer = Thread {
            guard let connection = try? SQLiteConnection(path: database, mode: .readWrite(create: false)) else { return }
            try? connection.execute("PRAGMA synchronous = OFF")
            var index = 0
            while !stop.load(ordering: .relaxed) {
                index += 1
                if index == 10 { writing.signal() }
                try? connection.run(
                    "INSERT INTO orders (order_id, product_id, state, content_hash, received_at, updated_at) VALUES (?, 'gems', 'pending', 'x', 0, 0)",
                    [.text("W\(index)")])
            }
        }
        writer.start()
        defer { stop.store(true, ordering: .relaxed) }
        #expect(writing.wait(timeout: .now() + 10) == .success, "the writer did not get going")
        for round in 0..<30 {
            let target = fixture.directory.file("copy\(round).db")
            let result = fixture.run(["backup", target])
            #expect(result.status == 0, "\(result.err)")
            let copied = try orders(target)
            #expect(result.out.hasPrefix("backed up \(Plural.count(copied, "order")) to <dir>/copy\(round).db ("), "\(result.out) (the copy holds \(copied))")
        }
    }

    @Test("backup --into names the copy by its UTC time; --keep removes the oldest such copies beyond N, and nothing else")
    func intoAndKeep() throws {
        let fixture = try CLIFixture()
        let folder = fixture.directory.file("backups")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        fixture.directory.write("backups/notes.txt", "mine")
        fixture.directory.write("backups/orders-old.db", "not a copy of ours: another name")
        var made: [String] = []
        for hour in 0..<4 {
            let now = CLIFixture.now.addingTimeInterval(Double(hour) * 3600)
            let result = fixture.run(["backup", "--into", folder, "--keep", "2"], now: now)
            #expect(result.status == 0, "\(result.err)")
            let name = BackupCommand.copyName(at: now)
            made.append(name)
            #expect(result.out.hasPrefix("backed up 12 orders to <dir>/backups/\(name) ("), "\(result.out)")
        }
        #expect(made.first == "orders-20261130T072606Z.db")
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder).sorted() == (["notes.txt", "orders-old.db"] + made.suffix(2)).sorted())
        let again = fixture.run(["backup", "--into", folder], now: CLIFixture.now.addingTimeInterval(3 * 3600))
        #expect(again.status == 1 && again.err.contains("exists; choose a new name"), "\(again.err)")
        #expect(fixture.run(["backup", "x.db", "--keep", "3"]).err.hasPrefix("Error: '--keep' goes with '--into'"))
        #expect(fixture.run(["backup", "--into", folder, "--keep", "0"]).status == 64)
        #expect(fixture.run(["backup", "x.db", "--into", folder]).err.hasPrefix("Error: Unexpected argument 'x.db'"))
    }

    @Test("backup and restore on a terminal: a progress line in bytes, ended at 100% and erased; nothing without a terminal")
    func progress() throws {
        let fixture = try CLIFixture()
        let backup = fixture.directory.file("copy.db")
        func run(_ arguments: [String]) -> CapturedOutput {
            let output = CapturedOutput(errorIsTerminal: true)
            _ = Reconcilectl.main(arguments: ["--config", fixture.configPath] + arguments, environment: [:], output: output, now: { CLIFixture.now })
            return output
        }
        let store = ProgressLine.fileSize(fixture.directory.file("state/orders.db"))
        let backedUp = run(["backup", backup])
        #expect(backedUp.standardError.hasPrefix("\r\u{1B}[Kbackup, bytes: "), "\(backedUp.standardError.debugDescription)")
        #expect(backedUp.standardError.hasSuffix("\r\u{1B}[Kbackup, bytes: \(Number.grouped(store)) of \(Number.grouped(store)) (100%)\r\u{1B}[K"),
            "\(backedUp.standardError.debugDescription)")
        #expect(fixture.run(["backup", fixture.directory.file("piped.db")]).err.isEmpty, "no progress without a terminal")

        let size = ProgressLine.fileSize(backup)
        let restored = run(["restore", backup])
        #expect(restored.standardError.hasSuffix("restore, bytes: \(Number.grouped(size)) of \(Number.grouped(size)) (100%)\r\u{1B}[K"),
            "\(restored.standardError.debugDescription)")
    }

    @Test("restore: a backup put in place of the store and its stale -wal, which go aside together")
    func restore() throws {
        let fixture = try CLIFixture()
        let database = fixture.directory.file("state/orders.db")
        let backup = fixture.directory.file("backup.db")
        #expect(fixture.run(["backup", backup]).status == 0)
        #expect(fixture.run(["hold", "O-pending"]).status == 0)
        // A log with frames beside the store, as a crash leaves it.
        let live = try SQLiteConnection(path: database, mode: .readWrite(create: false))
        try live.execute("PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0")
        try live.run("UPDATE orders SET reason = 'after the backup' WHERE order_id = 'O-pending'")
        let stale = try #require(FileManager.default.contents(atPath: database + "-wal"))
        live.keepLogOnClose()
        live.close()
        #expect(StoreFiles(database: database).walHasFrames)

        let result = fixture.run(["restore", backup])
        #expect(result.status == 0, "\(result.err)")
        #expect(result.err.isEmpty)
        let aside = "<dir>/state/orders.db.replaced-20261130T072606Z"
        #expect(result.out == """
            checked <dir>/backup.db: integrity ok, schema version \(StoreSchema.latestVersion), \(OrderState.allCases.count + 1) orders
            set aside: \(aside), \(aside)-wal, \(aside)-shm
            restored <dir>/state/orders.db from <dir>/backup.db (\(OrderState.allCases.count + 1) orders)
            start reconciled to use it: systemctl start reconciled

            """)
        #expect(FileManager.default.contents(atPath: database + ".replaced-20261130T072606Z-wal") == stale)
        #expect(!FileManager.default.fileExists(atPath: database + "-wal"))
        let restored = try SQLiteOrderStore(path: database, mode: .readOnly)
        #expect(try restored.order(id: "O-pending")?.state == .pending)
        // The set-aside pair opens as the store it was, the change after the backup included.
        let old = try SQLiteConnection(path: database + ".replaced-20261130T072606Z", mode: .readOnly)
        #expect(try old.scalar("SELECT count(*) FROM orders WHERE order_id = 'O-pending' AND reason = 'after the backup'") == 1)
    }

    @Test("restore is refused while reconciled holds the store, and for a bad backup; the store is untouched")
    func refused() async throws {
        let fixture = try CLIFixture()
        let database = fixture.directory.file("state/orders.db")
        let backup = fixture.directory.file("backup.db")
        #expect(fixture.run(["backup", backup]).status == 0)
        let before = FileManager.default.contents(atPath: database)
        do {
            let lock = try LockFile.acquire(database + ".lock", program: "reconciled")
            // Off the pool: restore waits two seconds for the lock before it gives up.
            let result = try await offPool { fixture.run(["restore", backup]) }
            #expect(result.status == 1)
            #expect(result.err == "Error: reconciled (pid \(getpid())) is running on <dir>/state/orders.db; stop it first (systemctl stop reconciled), then run restore again\n")
            withExtendedLifetime(lock) {}
        }
        let garbage = fixture.directory.write("garbage.db", bytes: (0..<8192).map { UInt8(truncatingIfNeeded: $0 &* 131 &+ 17) })
        let damaged = fixture.run(["restore", garbage])
        #expect(damaged.status == 1)
        #expect(damaged.err.hasPrefix("Error: <dir>/garbage.db fails its integrity check ("), "\(damaged.err)")
        #expect(damaged.err.hasSuffix("; choose another backup; the store is untouched\n"))
        #expect(fixture.run(["restore"]).status == 64)
        #expect(FileManager.default.contents(atPath: database) == before)
        #expect(fixture.directory.list("state").allSatisfy { !$0.contains("replaced") }, "\(fixture.directory.list("state"))")
    }
}
