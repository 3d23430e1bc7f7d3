import Foundation
import Glibc
import ReconcileCore
import Testing
import TestSupport
@testable import ReconcileStore
@testable import ReconcileSQLite

@Suite("Store files: modes", .serialized)
struct StoreFilesTests {
    let fixture = StoreFixture()

    func mode(_ path: String) -> mode_t? {
        var info = stat()
        return stat(path, &info) == 0 ? info.st_mode & 0o7777 : nil
    }

    @Test("the store, its -wal and its -shm are created 0640 under umask 022, outside systemd too")
    func createdPrivate() throws {
        let previous = umask(0o022)
        defer { umask(previous) }
        let store = try fixture.open()
        _ = try store.ingest([candidate("M1")], verifierKind: .apple, now: t0)
        for suffix in ["", "-wal", "-shm"] {
            #expect(mode(fixture.path + suffix) == 0o640, "orders.db\(suffix): \(String(mode(fixture.path + suffix) ?? 0, radix: 8))")
        }
        store.close()
    }

    @Test("an existing store readable by others (made by an older version) is made 0640 when the daemon opens it")
    func existingTightened() throws {
        let previous = umask(0o022)
        defer { umask(previous) }
        do {
            let store = try fixture.open()
            _ = try store.ingest([candidate("M1")], verifierKind: .apple, now: t0)
            store.close()
        }
        #expect(chmod(fixture.path, 0o644) == 0)
        let store = try fixture.open()
        _ = try store.ingest([candidate("M2")], verifierKind: .apple, now: t0)
        for suffix in ["", "-wal", "-shm"] {
            #expect(mode(fixture.path + suffix) == 0o640, "orders.db\(suffix): \(String(mode(fixture.path + suffix) ?? 0, radix: 8))")
        }
        // Stricter modes are kept.
        store.close()
        #expect(chmod(fixture.path, 0o600) == 0)
        _ = try fixture.open()
        #expect(mode(fixture.path) == 0o600)
    }
}
