import Foundation
import Glibc
import Testing
import TestSupport
@testable import ReconcileSystem

@Suite("Lock file")
struct LockFileTests {
    let directory = TemporaryDirectory(prefix: "lock")

    @Test("a second owner is refused with the lock's path and the holder's pid")
    func contention() throws {
        let path = directory.file("orders.db.lock")
        let first = try LockFile.acquire(path)
        do {
            _ = try LockFile.acquire(path)
            Issue.record("took a held lock")
        } catch {
            #expect(error == .held(path: path, ownerPID: getpid()))
            #expect(error.description == "another reconciled (pid \(getpid())) holds the lock \(path); only one daemon may use a database")
        }
        withExtendedLifetime(first) {}
    }

    @Test("the lock is free again once its owner is gone, and the file stays")
    func release() throws {
        let path = directory.file("orders.db.lock")
        do { _ = try LockFile.acquire(path) }
        let again = try LockFile.acquire(path)
        #expect(FileManager.default.fileExists(atPath: path))
        #expect(directory.read("orders.db.lock") == "\(getpid())\n")
        withExtendedLifetime(again) {}
    }

    @Test("an unwritable place is a system error, not a hang")
    func unwritable() {
        #expect(throws: LockFile.Failure.self) { _ = try LockFile.acquire("/nonexistent-dir/x.lock") }
    }
}
