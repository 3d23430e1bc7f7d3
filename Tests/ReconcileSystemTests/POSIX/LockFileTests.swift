import Foundation
import Glibc
import Synchronization
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
            #expect(error == .held(path: path, ownerPID: getpid(), owner: "reconciled"))
            #expect(error.description == "reconciled (pid \(getpid())) holds the lock \(path); only one daemon may use a database")
        }
        withExtendedLifetime(first) {}
    }

    @Test("a reconcilectl holding it is named as such")
    func heldByTheTool() throws {
        let path = directory.file("orders.db.lock")
        let tool = try LockFile.acquire(path, program: "reconcilectl")
        #expect {
            _ = try LockFile.acquire(path)
        } throws: { error in
            String(describing: error) == "reconcilectl (pid \(getpid())) is changing the store and holds its lock \(path); try again in a moment"
        }
        withExtendedLifetime(tool) {}
    }

    @Test("with patience, a lock let go of meanwhile is taken; without, it is refused at once")
    func patience() async throws {
        let path = directory.file("orders.db.lock")
        let holder = Mutex<LockFile?>(try LockFile.acquire(path, program: "reconcilectl"))
        #expect(throws: LockFile.Failure.self) { _ = try LockFile.acquire(path) }
        // Let go of while the taker waits: after its first refused try.
        let releasedAt = Mutex<ContinuousClock.Instant?>(nil)
        let waits = Mutex(0)
        let (taken, takenAt) = try await offPool {
            let lock = try LockFile.acquire(path, patience: .seconds(30)) {
                waits.withLock { $0 += 1 }
                if releasedAt.withLock({ $0 }) == nil {
                    releasedAt.withLock { $0 = .now }
                    holder.withLock { $0 = nil }
                }
            }
            return (lock.path, ContinuousClock.now)
        }
        #expect(taken == path)
        let released = try #require(releasedAt.withLock { $0 }, "taken before it was let go")
        #expect(takenAt >= released)
        // Let go of once, taken at the next try (or the one after, should a child another
        // test spawns hold a copy of the descriptor between its fork and exec).
        #expect(waits.withLock { $0 } >= 1)
    }

    @Test("the lock is free again once its owner is gone, and the file stays")
    func release() throws {
        let path = directory.file("orders.db.lock")
        do { _ = try LockFile.acquire(path) }
        // Patience for a child another test spawns meanwhile: between its fork and its exec it
        // holds a copy of every descriptor (close-on-exec or not), the lock's among them.
        let again = try LockFile.acquire(path, patience: .seconds(2))
        #expect(FileManager.default.fileExists(atPath: path))
        #expect(directory.read("orders.db.lock") == "\(getpid()) reconciled\n")
        withExtendedLifetime(again) {}
    }

    @Test("an unwritable place is a system error, not a hang")
    func unwritable() {
        #expect(throws: LockFile.Failure.self) { _ = try LockFile.acquire("/nonexistent-dir/x.lock") }
    }
}
