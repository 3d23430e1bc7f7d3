import Foundation
import Glibc
import ReconcileCore
import Synchronization
import Testing
import TestSupport
@testable import ReconcileStore
@testable import ReconcileSQLite

/// The store's file under the daemon (issue 13): checked at start, watched while open.
@Suite("Store: the file checked at start and watched while open", .serialized)
struct StoreFileChecksTests {
    let fixture = StoreFixture()

    func bytes(_ path: String) -> Data? { FileManager.default.contents(atPath: path) }

    func copy(_ from: String, _ to: String) throws {
        if FileManager.default.fileExists(atPath: to) { try FileManager.default.removeItem(atPath: to) }
        try FileManager.default.copyItem(atPath: from, toPath: to)
    }

    /// A store as a crash leaves it, next to a backup taken before its last orders: `orders.db`
    /// and a copy of its `-wal` taken while it was open (as a SIGKILL leaves them), and
    /// `backup.db`. Returns the path of the saved log.
    func crashedStoreAndBackup() throws -> (log: String, backup: String) {
        let store = try fixture.open()
        _ = try store.ingest((0..<2000).map { candidate("A\($0)", receipt: String(repeating: "QUJD", count: 50)) }, verifierKind: .apple, now: t0)
        try store.checkpoint()
        let backup = fixture.directory.file("backup.db")
        try store.backup(to: backup)
        _ = try store.ingest((0..<1000).map { candidate("B\($0)") }, verifierKind: .apple, now: t0)
        try store.write { try $0.run("UPDATE orders SET state = 'finished' WHERE id % 3 = 0") }
        let log = fixture.directory.file("crash.wal")
        try copy(fixture.path + "-wal", log)
        try copy(fixture.path, fixture.directory.file("crash.db"))
        store.close()
        return (log, backup)
    }

    @Test("a backup copied over the store after a crash, with the old -wal beside it: refused at start, both files left as they were")
    func staleLogBesideACopiedBackup() throws {
        let (log, backup) = try crashedStoreAndBackup()
        try copy(backup, fixture.path)
        try copy(log, fixture.path + "-wal")
        unlink(fixture.path + "-shm")
        let (database, wal) = (bytes(fixture.path), bytes(fixture.path + "-wal"))
        let steps = Mutex<[String]>([])
        do {
            _ = try SQLiteOrderStore(path: fixture.path, mode: .owner) { step in steps.withLock { $0.append(step) } }
            Issue.record("opened a backup with another database's write-ahead log beside it")
        } catch let error as StoreError {
            guard case .damaged(let path, let problems, let logBeside) = error else {
                Issue.record("\(error)")
                return
            }
            #expect(path == fixture.path)
            #expect(!problems.isEmpty)
            #expect(logBeside)
            #expect(error.description.contains("that log belongs to the database that was there before"), "\(error)")
            #expect(error.description.contains("reconcilectl restore FILE"))
        }
        #expect(steps.withLock { $0 } == ["checking the database (PRAGMA quick_check): a write-ahead log from an unclean stop lies beside it"])
        #expect(bytes(fixture.path) == database)
        #expect(bytes(fixture.path + "-wal") == wal)
    }

    @Test("after a crash with its own log the store opens, and nothing committed is lost")
    func ownLogAfterCrash() throws {
        _ = try crashedStoreAndBackup()
        try copy(fixture.directory.file("crash.db"), fixture.path)
        try copy(fixture.directory.file("crash.wal"), fixture.path + "-wal")
        unlink(fixture.path + "-shm")
        let store = try fixture.open()
        #expect(try store.countsByState().values.reduce(0, +) == 3000)
    }

    @Test("the cheap check of a large store finds a truncated copy")
    func cheapCheckFindsTruncation() throws {
        do {
            let store = try fixture.open()
            _ = try store.ingest((0..<500).map { candidate("T\($0)") }, verifierKind: .apple, now: t0)
            store.close()
        }
        let size = try #require(StoreFiles(database: fixture.path).databaseSize)
        #expect(truncate(fixture.path, off_t(size / 2)) == 0)
        let connection = try SQLiteConnection(path: fixture.path, mode: .readOnly)
        let problems = (try? StartupCheck.problems(connection, depth: .cheap, fileSize: size / 2)) ?? ["an error"]
        #expect(!problems.isEmpty)
        #expect(StartupCheck.depth(size: StartupCheck.fullCheckLimit + 1, logHasFrames: false) == .cheap)
        #expect(StartupCheck.depth(size: StartupCheck.fullCheckLimit + 1, logHasFrames: true) == .full(logBeside: true))
        #expect(StartupCheck.depth(size: 4096, logHasFrames: false) == .full(logBeside: false))
    }

    @Test("a store replaced under the daemon: the next write is refused, the daemon told once, nothing written to the old file")
    func replacedWhileOpen() throws {
        let store = try fixture.open()
        _ = try store.ingest([candidate("R1")], verifierKind: .apple, now: t0)
        let backup = fixture.directory.file("backup.db")
        try store.backup(to: backup)
        _ = try store.ingest([candidate("R2")], verifierKind: .apple, now: t0)
        let told = Mutex<[StoreError]>([])
        store.onLoss { error in told.withLock { $0.append(error) } }

        // `cp --remove-destination`, `mv`, `install`: a new file under the name.
        try copy(backup, fixture.path + ".new")
        #expect(rename(fixture.path + ".new", fixture.path) == 0)
        do {
            _ = try store.ingest([candidate("R3")], verifierKind: .apple, now: t0)
            Issue.record("wrote into a database no longer at its path")
        } catch let error as StoreError {
            guard case .replaced(let path, let copy?) = error else {
                Issue.record("\(error)")
                return
            }
            #expect(path == fixture.path)
            #expect(error.description.contains("no longer names the database reconciled opened"))
            // Nothing committed is lost: the database the store had open, copied whole.
            #expect(copy.hasPrefix(fixture.path + ".replaced-"))
            #expect(try SQLiteConnection(path: copy, mode: .readOnly).scalar("SELECT count(*) FROM orders WHERE order_id IN ('R1', 'R2')") == 2)
        }
        #expect(throws: StoreError.self) { _ = try store.ingest([candidate("R4")], verifierKind: .apple, now: t0) }
        #expect(throws: StoreError.self) { try store.verifyFile() }
        #expect(told.withLock { $0.count } == 1)
        #expect(store.loss != nil)
        store.close()
        // The old file's log went aside: the restored file opens alone, as it was.
        #expect(!StoreFiles(database: fixture.path).walHasFrames)
        let reopened = try fixture.open()
        #expect(try reopened.order(id: "R1") != nil)
        #expect(try reopened.order(id: "R2") == nil)
    }

    @Test("a store overwritten in place under the daemon: the next write is refused, its log set aside, and the copy opens as it is")
    func overwrittenInPlace() throws {
        let store = try fixture.open()
        _ = try store.ingest([candidate("P1")], verifierKind: .apple, now: t0)
        let backup = fixture.directory.file("backup.db")
        try store.backup(to: backup)
        _ = try store.ingest((0..<50).map { candidate("P\($0 + 2)") }, verifierKind: .apple, now: t0)
        let told = Mutex<[StoreError]>([])
        store.onLoss { error in told.withLock { $0.append(error) } }

        // Plain `cp backup.db orders.db`: the same inode, new contents.
        let source = try #require(bytes(backup))
        let descriptor = open(fixture.path, O_WRONLY | O_TRUNC)
        #expect(source.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) } == source.count)
        close(descriptor)
        do {
            _ = try store.ingest([candidate("P99")], verifierKind: .apple, now: t0)
            Issue.record("wrote into a file another process had overwritten")
        } catch let error as StoreError {
            guard case .changedUnderneath(let path, let aside?) = error else {
                Issue.record("\(error)")
                return
            }
            #expect(path == fixture.path)
            #expect(FileManager.default.fileExists(atPath: aside))
            #expect(aside.hasPrefix(fixture.path + "-wal.") && aside.hasSuffix(".stale"))
        }
        #expect(told.withLock { $0.count } == 1)
        store.close()
        #expect(bytes(fixture.path) == source)  // closing copied nothing into it
        let reopened = try fixture.open()
        #expect(try reopened.countsByState().values.reduce(0, +) == 1)
    }

    @Test("pruning gives the freed pages back: the file shrinks")
    func pruningShrinksTheFile() throws {
        do {
            let store = try fixture.open()
            let receipt = String(repeating: "QUJD", count: 4000)
            _ = try store.ingest((0..<300).map { candidate("V\($0)", receipt: receipt) }, verifierKind: .apple, now: t0)
            try store.write { try $0.run("UPDATE orders SET state = 'finished', updated_at = 0") }
            store.close()  // copies the log into the file
        }
        let before = try #require(FileManager.default.attributesOfItem(atPath: fixture.path)[.size] as? Int)
        do {
            let store = try fixture.open()
            #expect(try store.pruneFinished(before: t0, now: t0) == 300)
            #expect(try store.withConnection { try $0.scalar("PRAGMA freelist_count") } == 0)
            store.close()
        }
        let after = try #require(FileManager.default.attributesOfItem(atPath: fixture.path)[.size] as? Int)
        // Receipt and raw file go; the test candidates keep their whole text as the hash.
        #expect(after < before / 2, "\(before) → \(after) bytes")
    }

    @Test("a backup gives freed pages back too, even of a store made before auto_vacuum")
    func backupIsIncremental() throws {
        do {
            let connection = try SQLiteConnection(path: fixture.path, mode: .readWrite(create: true))
            try SchemaMigrator().migrate(connection, backup: false)
        }
        let store = try fixture.open()
        #expect(try store.withConnection { try $0.scalar("PRAGMA auto_vacuum") } == 0)
        let copy = fixture.directory.file("copy.db")
        try store.backup(to: copy)
        #expect(try SQLiteConnection(path: copy, mode: .readOnly).scalar("PRAGMA auto_vacuum") == 2)
    }
}
