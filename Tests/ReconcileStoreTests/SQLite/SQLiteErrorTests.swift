import CSQLite
import Foundation
import Glibc
import ReconcileCore
import Testing
import TestSupport
@testable import ReconcileStore
@testable import ReconcileSQLite

@Suite("SQLite errors", .serialized)
struct SQLiteErrorTests {
    static var canMount: Bool { getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/mount") }

    static func tool(_ path: String, _ arguments: [String]) -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return -1 }
        process.waitUntilExit()
        return process.terminationStatus
    }

    @Test("an I/O error whose system call failed with ENOSPC or EDQUOT is a full disk, and says so")
    func ioErrorWithNoSpace() {
        for errno in [ENOSPC, EDQUOT] {
            let error = SQLiteError(extendedCode: SQLITE_IOERR | (19 << 8),  // SQLITE_IOERR_SHMSIZE
                                    message: "disk I/O error", systemErrno: errno)
            #expect(error.isFull)
            #expect(error.storeFailure == .diskFull)
            #expect(error.description.hasPrefix("disk full ("), "\(error)")
        }
        let other = SQLiteError(extendedCode: SQLITE_IOERR | (1 << 8), message: "disk I/O error", systemErrno: EIO)
        #expect(!other.isFull)
        #expect(other.storeFailure == .other)
        #expect(other.description.hasSuffix("(Input/output error)"), "\(other)")
        #expect(SQLiteError(extendedCode: SQLITE_FULL, message: "database or disk is full").isFull)
    }

    @Test("an existing store on a full disk: opening it fails with \"disk full\", not \"disk I/O error\"", .enabled(if: canMount, "needs root to mount a small tmpfs"))
    func existingStoreOnFullDisk() throws {
        let directory = TemporaryDirectory(prefix: "store-full")
        let state = directory.file("state")
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
        guard Self.tool("/usr/bin/mount", ["-t", "tmpfs", "-o", "size=1m", "tmpfs", state]) == 0 else {
            Issue.record("cannot mount a tmpfs on \(state)")
            return
        }
        defer { _ = Self.tool("/usr/bin/umount", ["-l", state]) }
        let path = state + "/orders.db"
        do {
            let store = try SQLiteOrderStore(path: path, mode: .owner)
            _ = try store.ingest([candidate("F1")], verifierKind: .apple, now: t0)
            store.close()
        }
        // Fill what is left: the store cannot grow its -shm file any more.
        let filler = open(state + "/filler", O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
        let block = [UInt8](repeating: 0, count: 4096)
        while block.withUnsafeBytes({ write(filler, $0.baseAddress, $0.count) }) > 0 {}
        close(filler)

        do {
            let store = try SQLiteOrderStore(path: path, mode: .owner)
            _ = try store.ingest([candidate("F2")], verifierKind: .apple, now: t0)
            Issue.record("the store was written on a full disk")
        } catch {
            #expect(StoreFailure.of(error) == .diskFull, "\(error)")
            #expect(String(describing: error).contains("disk full"), "\(error)")
        }
    }
}
