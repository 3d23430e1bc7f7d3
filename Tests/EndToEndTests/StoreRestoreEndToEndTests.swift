import Foundation
import Glibc
import ReconcileCore
import ReconcileMock
import Testing
import TestSupport
@testable import ReconcileStore
@testable import ReconcileSQLite

/// Restoring or replacing `orders.db` (issue 13): refused while the daemon runs, noticed when
/// done behind its back, and done right by `reconcilectl restore` after a crash.
@Suite("End to end: restoring the store", .serialized)
struct StoreRestoreEndToEndTests {
    func merchant(_ harness: Harness) -> String {
        SystemdEndToEndTests.merchant(harness)
    }

    func total(_ path: String) throws -> Int {
        try Int(SQLiteConnection(path: path, mode: .readOnly).scalar("SELECT count(*) FROM orders") ?? -1)
    }

    @Test("restore while reconciled runs is refused; a store replaced under it stops it (exit 1), nothing lost, and the restart uses the new file")
    func replacedWhileRunning() async throws {
        let harness = Harness("restore-live")
        try await harness.startMock()
        harness.configure(merchant(harness))
        let database = harness.directory.file("state/orders.db")
        let daemon = try await harness.startDaemonAndWait()
        for index in 1...3 { harness.dropOrder("F\(index)") }
        #expect(await harness.waitFor(.finished, count: 3))
        let backup = harness.directory.file("backup.db")
        #expect(try await harness.ctl(["backup", backup]).status == 0)

        let refused = try await harness.ctl(["restore", backup])
        #expect(refused.status == 1)
        #expect(refused.error.contains("reconciled (pid \(daemon.pid)) is running on \(database); stop it first"), "\(refused.error)")
        #expect(daemon.isRunning)

        for index in 4...5 { harness.dropOrder("F\(index)") }
        #expect(await harness.waitFor(.finished, count: 5))
        // What an operator might do instead: a new file under the store's name.
        try FileManager.default.copyItem(atPath: backup, toPath: database + ".new")
        #expect(rename(database + ".new", database) == 0)
        harness.dropOrder("N1")
        let status = await daemon.wait(timeout: .seconds(30))
        #expect(status == 1, "\(daemon.standardError.suffix(1000))")
        #expect(daemon.standardError.contains("no longer names the database reconciled opened"), "\(daemon.standardError.suffix(1000))")
        #expect(!daemon.standardError.contains("stopped cleanly"))
        // Nothing lost: the order that arrived stays in the spool, and the database the daemon
        // had open was copied whole.
        #expect(harness.directory.list("spool/incoming").contains("N1.json"))
        let copies = harness.directory.list("state").filter { $0.hasPrefix("orders.db.replaced-") && !$0.hasSuffix("-wal") && !$0.hasSuffix("-shm") }
        #expect(copies.count == 1, "\(harness.directory.list("state"))")
        if let copy = copies.first { #expect(try total(harness.directory.file("state/\(copy)")) == 5) }

        // The restart opens the copy (F1–F3; N1 may be taken in before the start-up line counts).
        let restarted = try await harness.startDaemonAndWait()
        #expect(restarted.standardError.contains("with 3 orders") || restarted.standardError.contains("with 4 orders"), "\(restarted.standardError)")
        #expect(await harness.waitFor(.finished, count: 4), "\(harness.counts())")
        #expect(try harness.store().order(id: "F4") == nil)
        #expect(try harness.store().order(id: "N1")?.state == .finished)
        restarted.send(SIGTERM)
        #expect(await restarted.wait() == 0)
    }

    @Test("after a crash: restore sets the store and its stale -wal aside together and the daemon starts with the backup's orders")
    func restoreAfterCrash() async throws {
        let harness = Harness("restore-crash")
        try await harness.startMock()
        harness.configure(merchant(harness))
        let database = harness.directory.file("state/orders.db")
        let daemon = try await harness.startDaemonAndWait()
        for index in 1...3 { harness.dropOrder("A\(index)") }
        #expect(await harness.waitFor(.finished, count: 3))
        let backup = harness.directory.file("backup.db")
        #expect(try await harness.ctl(["backup", backup]).status == 0)
        for index in 1...2 { harness.dropOrder("B\(index)") }
        #expect(await harness.waitFor(.finished, count: 5))
        daemon.send(SIGKILL)
        _ = await daemon.wait()
        #expect(StoreFiles(database: database).walHasFrames)

        let restored = try await harness.ctl(["restore", backup])
        #expect(restored.status == 0, "\(restored.error)")
        #expect(restored.output.contains("set aside: \(database).replaced-"), "\(restored.output)")
        #expect(restored.output.contains("-wal"))
        #expect(!FileManager.default.fileExists(atPath: database + "-wal"))
        let aside = try #require(harness.directory.list("state").first { $0.hasPrefix("orders.db.replaced-") && !$0.contains("-wal") && !$0.contains("-shm") })
        #expect(try total(harness.directory.file("state/\(aside)")) == 5)  // the pair still opens whole

        let started = try await harness.startDaemonAndWait()
        #expect(started.standardError.contains("with 3 orders"), "\(started.standardError)")
        #expect(harness.counts() == [.finished: 3])
        started.send(SIGTERM)
        #expect(await started.wait() == 0)
    }

    @Test("a backup copied over a crashed store, the old -wal beside it: the daemon refuses to start, untouched; restore then puts it right")
    func copiedOverACrash() async throws {
        let harness = Harness("restore-copied")
        harness.configure("[Verifier]\nKind=http\nURL=http://127.0.0.1:9/verify\n")
        try FileManager.default.createDirectory(atPath: harness.directory.file("state"), withIntermediateDirectories: true)
        let database = harness.directory.file("state/orders.db")
        let backup = harness.directory.file("backup.db")
        // A store as a SIGKILL leaves it (its log copied while it was open), and a backup taken
        // before its last orders.
        do {
            let store = try SQLiteOrderStore(path: database, mode: .owner)
            let parser = OrderFileParser()
            func candidates(_ prefix: String, _ count: Int, receipt: String) throws -> [IngestCandidate] {
                try (0..<count).map { index in
                    let text = OrderFixtures.orderJSON("\(prefix)\(index)", product: "gems", receipt: receipt)
                    return IngestCandidate(submission: try parser.parse(Array(text.utf8)), raw: Array(text.utf8), contentHash: "\(prefix)\(index)", fileName: "x")
                }
            }
            _ = try store.ingest(try candidates("A", 2000, receipt: String(repeating: "QUJD", count: 50)), verifierKind: .http, now: Date())
            try store.checkpoint()
            try store.backup(to: backup)
            _ = try store.ingest(try candidates("B", 1000, receipt: "QUJD"), verifierKind: .http, now: Date())
            try store.write { try $0.run("UPDATE orders SET state = 'held' WHERE id % 3 = 0") }
            try FileManager.default.copyItem(atPath: database + "-wal", toPath: harness.directory.file("crash.wal"))
            store.close()
        }
        unlink(database)
        try FileManager.default.copyItem(atPath: backup, toPath: database)
        unlink(database + "-shm")
        try FileManager.default.copyItem(atPath: harness.directory.file("crash.wal"), toPath: database + "-wal")
        let before = (FileManager.default.contents(atPath: database), FileManager.default.contents(atPath: database + "-wal"))

        let refused = try harness.startDaemon()
        #expect(await refused.wait() == 1)
        #expect(refused.standardError.contains("\(database) fails its integrity check"), "\(refused.standardError)")
        #expect(refused.standardError.contains("that log belongs to the database that was there before"))
        #expect(refused.standardError.contains("reconcilectl restore FILE"))
        #expect(FileManager.default.contents(atPath: database) == before.0)
        #expect(FileManager.default.contents(atPath: database + "-wal") == before.1)

        let restored = try await harness.ctl(["restore", backup])
        #expect(restored.status == 0, "\(restored.error)")
        let started = try await harness.startDaemonAndWait()
        #expect(started.standardError.contains("with 2000 orders"), "\(started.standardError.suffix(600))")
        started.send(SIGTERM)
        #expect(await started.wait() == 0)
    }
}
