import Foundation
import Glibc
import ReconcileCore
import Testing
import TestSupport
@testable import ReconcileStore
@testable import ReconcileSQLite

@Suite("Store: restoring a backup", .serialized)
struct StoreRestoreTests {
    let fixture = StoreFixture()
    static let now = Date(timeIntervalSince1970: 1_796_023_566)  // 2026-11-30T07:26:06Z

    func total(_ path: String) throws -> Int {
        try Int(SQLiteConnection(path: path, mode: .readOnly).scalar("SELECT count(*) FROM orders") ?? -1)
    }

    @Test("a backup beside a crashed store and its -wal: the store and its log go aside together, the backup comes in 0640, nothing lost")
    func restoresOverAStaleLog() throws {
        let store = try fixture.open()
        _ = try store.ingest((0..<20).map { candidate("A\($0)") }, verifierKind: .apple, now: t0)
        let backup = fixture.directory.file("backup.db")
        try store.backup(to: backup)
        _ = try store.ingest((0..<30).map { candidate("B\($0)") }, verifierKind: .apple, now: t0)
        // As a crash leaves it: the log, with the last orders, beside the file.
        let crashed = fixture.directory.file("crashed")
        try FileManager.default.createDirectory(atPath: crashed, withIntermediateDirectories: true)
        for suffix in ["", "-wal"] { try FileManager.default.copyItem(atPath: fixture.path + suffix, toPath: crashed + "/orders.db" + suffix) }
        store.close()
        for suffix in ["", "-wal"] {
            unlink(fixture.path + suffix)
            try FileManager.default.copyItem(atPath: crashed + "/orders.db" + suffix, toPath: fixture.path + suffix)
        }
        #expect(StoreFiles(database: fixture.path).walHasFrames)

        let previous = umask(0o022)
        defer { umask(previous) }
        let outcome = try StoreRestore.install(backup: backup, database: fixture.path, owner: nil, now: Self.now)
        #expect(outcome.backup == StoreRestore.BackupInfo(schemaVersion: StoreSchema.latestVersion, orders: 20))
        let aside = fixture.path + ".replaced-20261130T072606Z"
        #expect(outcome.setAside == [aside, aside + "-wal"])
        #expect(!FileManager.default.fileExists(atPath: fixture.path + "-wal"))
        #expect(!FileManager.default.fileExists(atPath: fixture.path + ".restoring"))
        #expect(!FileManager.default.fileExists(atPath: fixture.path + ".restore.tmp"))
        var info = stat()
        #expect(stat(fixture.path, &info) == 0 && info.st_mode & 0o7777 == 0o640)
        #expect(try total(fixture.path) == 20)
        // The set-aside pair still opens as the store it was: all 50 orders.
        #expect(try total(aside) == 50)
        let reopened = try fixture.open()
        #expect(try reopened.countsByState().values.reduce(0, +) == 20)
        #expect(try reopened.withConnection { try $0.scalar("PRAGMA auto_vacuum") } == 2)
    }

    @Test("a restore into an empty state directory installs the backup")
    func restoresIntoNothing() throws {
        let store = try fixture.open()
        _ = try store.ingest([candidate("N1")], verifierKind: .apple, now: t0)
        let backup = fixture.directory.file("backup.db")
        try store.backup(to: backup)
        store.close()
        for suffix in ["", "-wal", "-shm"] { unlink(fixture.path + suffix) }
        let outcome = try StoreRestore.install(backup: backup, database: fixture.path, owner: nil, now: Self.now)
        #expect(outcome.setAside.isEmpty)
        #expect(try total(fixture.path) == 1)
    }

    @Test("an interrupted restore keeps the daemon and the CLI's writes out until it is run again")
    func interrupted() throws {
        _ = try fixture.open()
        _ = FileManager.default.createFile(atPath: fixture.path + ".restoring", contents: Data("restoring x\n".utf8))
        #expect(throws: StoreError.restoreInterrupted(path: fixture.path, marker: fixture.path + ".restoring")) { _ = try fixture.open() }
        #expect(throws: StoreError.restoreInterrupted(path: fixture.path, marker: fixture.path + ".restoring")) { _ = try fixture.open(.operatorWrite) }
        _ = try fixture.open(.readOnly)
        let backup = fixture.directory.file("backup.db")
        try fixture.open(.readOnly).backup(to: backup)
        _ = try StoreRestore.install(backup: backup, database: fixture.path, owner: nil, now: Self.now)
        _ = try fixture.open()
    }

    @Test("backups that are refused, with the reason, and the store untouched")
    func refusals() throws {
        let store = try fixture.open()
        _ = try store.ingest([candidate("K1")], verifierKind: .apple, now: t0)
        store.close()
        let before = FileManager.default.contents(atPath: fixture.path)

        let missing = fixture.directory.file("missing.db")
        #expect(throws: RestoreError.backupUnreadable(path: missing, reason: "No such file or directory")) {
            _ = try StoreRestore.install(backup: missing, database: fixture.path, owner: nil)
        }
        let garbage = fixture.directory.write("garbage.db", bytes: (0..<8192).map { UInt8(truncatingIfNeeded: $0 &* 131 &+ 17) })
        #expect(throws: RestoreError.self) { _ = try StoreRestore.install(backup: garbage, database: fixture.path, owner: nil) }
        let foreign = fixture.directory.file("foreign.db")
        try SQLiteConnection(path: foreign, mode: .readWrite(create: true)).execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY)")
        #expect(throws: RestoreError.notAStore(path: foreign)) { _ = try StoreRestore.install(backup: foreign, database: fixture.path, owner: nil) }
        let newer = fixture.directory.file("newer.db")
        _ = try SQLiteOrderStore(
            path: newer, mode: .owner,
            migrator: SchemaMigrator(migrations: StoreSchema.migrations + [Migration(version: StoreSchema.latestVersion + 1, name: "x", sql: "CREATE TABLE x (y)")]))
        #expect(throws: RestoreError.newerSchema(path: newer, found: StoreSchema.latestVersion + 1, supported: StoreSchema.latestVersion)) {
            _ = try StoreRestore.install(backup: newer, database: fixture.path, owner: nil)
        }
        #expect(throws: RestoreError.backupIsTheStore(path: fixture.path)) {
            _ = try StoreRestore.install(backup: fixture.path, database: fixture.path, owner: nil)
        }
        #expect(FileManager.default.contents(atPath: fixture.path) == before)
        #expect((try? FileManager.default.contentsOfDirectory(atPath: fixture.directory.path).filter { $0.contains("replaced") || $0.contains("restor") }) == [])
    }
}
