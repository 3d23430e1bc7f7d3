import Foundation
import Glibc
import ReconcileCore
import ReconcileMock
import Synchronization
import Testing
import TestSupport
@testable import ReconcileStore
@testable import ReconcileSQLite

/// The store's disk misbehaving (issue 6): full, read-only, damaged, locked. Nothing in the
/// spool is deleted before it is committed; the daemon says what is wrong, keeps running and
/// catches up when the disk recovers.
@Suite("End to end: storage faults", .serialized)
struct StorageFaultEndToEndTests {
    static var canMount: Bool { getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/mount") }

    /// Mounts a tmpfs of `size` on the harness's `state/` for the test's duration.
    /// mount(8), off the cooperative pool.
    static func mount(_ arguments: [String]) async -> Int32 {
        (try? await offPool { runTool("/usr/bin/mount", arguments) }) ?? -1
    }

    static func mountState(_ harness: Harness, size: String) async throws -> String {
        let state = harness.directory.file("state")
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
        guard await Self.mount(["-t", "tmpfs", "-o", "size=\(size),mode=0700", "tmpfs", state]) == 0 else {
            throw HarnessError("cannot mount a tmpfs on \(state)")
        }
        return state
    }

    static func unmount(_ state: String) {
        _ = runTool("/usr/bin/umount", ["-l", state])
    }

    static func incomingCount(_ harness: Harness) -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: harness.directory.file("spool/incoming")).count) ?? -1
    }

    func merchant(_ harness: Harness) -> String {
        SystemdEndToEndTests.merchant(harness)
    }

    @Test(
        "a full disk: ingest stops without deleting a spool file, err is logged, the daemon runs on and catches up when space returns",
        .enabled(if: canMount, "needs root to mount a small tmpfs"))
    func diskFull() async throws {
        let harness = Harness("enospc")
        try await harness.startMock()
        harness.configure(merchant(harness))
        let state = try await Self.mountState(harness, size: "1m")
        defer { Self.unmount(state) }
        let daemon = try await harness.startDaemonAndWait()

        // 150 orders of ≈ 16 KiB each cannot fit in 1 MiB.
        let bulky = String(repeating: "QUJD", count: 4_000)
        for index in 0..<150 { harness.drop("B\(index).json", OrderFixtures.orderJSON("B\(index)", product: "gems", receipt: bulky)) }
        // The ingest's own line: the scheduler's commit may meet the full disk first (its
        // "the store failed while scheduling … REASON=disk_full" came first under
        // AddressSanitizer), and the ingest's follows.
        #expect(
            await eventually(timeout: .seconds(20)) { daemon.standardError.contains(" err: cannot commit") },
            "\(daemon.standardError.suffix(500))")
        #expect(daemon.standardError.contains("REASON=disk_full"))
        let waiting = Self.incomingCount(harness)
        #expect(waiting > 0, "spool files were deleted without a commit")
        let stored = (try? harness.scalar("SELECT count(*) FROM orders")) ?? 0
        #expect(stored + waiting == 150, "stored \(stored) + waiting \(waiting)")
        // Still running and answering after the failed commits.
        let status = try await harness.ctl(["status"])
        #expect(status.status == 0, "\(status.error)")
        #expect(daemon.isRunning)

        // Space returns: everything is taken in and finished.
        #expect(await Self.mount(["-o", "remount,size=64m", state]) == 0)
        #expect(await eventually(timeout: .seconds(60)) { Self.incomingCount(harness) == 0 })
        #expect(await harness.waitFor(.finished, count: 150, timeout: .seconds(60)), "\(harness.counts())")
        daemon.send(SIGTERM)
        #expect(await daemon.wait() == 0)
    }

    @Test(
        "a read-only state directory: a clear error and a non-zero exit, the spool untouched; writable again, everything is taken in",
        .enabled(if: canMount, "needs root to mount a tmpfs"))
    func readOnly() async throws {
        let harness = Harness("readonly")
        try await harness.startMock()
        harness.configure(merchant(harness))
        let state = try await Self.mountState(harness, size: "16m")
        defer { Self.unmount(state) }
        let first = try await harness.startDaemonAndWait()  // creates the store
        first.send(SIGTERM)
        #expect(await first.wait() == 0)

        // Linux refuses to make a filesystem read-only while a file on it is open for writing,
        // so the directory turns read-only between two runs.
        #expect(await Self.mount(["-o", "remount,ro", state]) == 0)
        for index in 0..<20 { harness.dropOrder("R\(index)") }
        let refused = try harness.startDaemon()
        let status = await refused.wait()
        #expect(status != 0 && status != nil)
        #expect(refused.standardError.contains("state/orders.db"), "\(refused.standardError)")
        #expect(refused.standardError.lowercased().contains("read-only") || refused.standardError.lowercased().contains("readonly"), "\(refused.standardError)")
        #expect(Self.incomingCount(harness) == 20)

        #expect(await Self.mount(["-o", "remount,rw", state]) == 0)
        let daemon = try await harness.startDaemonAndWait()
        #expect(await harness.waitFor(.finished, count: 20, timeout: .seconds(60)), "\(harness.counts())")
        #expect(Self.incomingCount(harness) == 0)
        daemon.send(SIGTERM)
        #expect(await daemon.wait() == 0)
    }

    @Test("a damaged or foreign database at start: a clear error, exit 1, the file untouched")
    func badDatabase() async throws {
        let harness = Harness("baddb")
        harness.configure("[Verifier]\nKind=http\nURL=http://127.0.0.1:9/verify\n")
        try FileManager.default.createDirectory(atPath: harness.directory.file("state"), withIntermediateDirectories: true)
        let path = harness.directory.file("state/orders.db")

        let garbage = Data((0..<8192).map { UInt8(truncatingIfNeeded: $0 &* 131 &+ 17) })
        try garbage.write(to: URL(fileURLWithPath: path))
        let damaged = try harness.startDaemon()
        #expect(await damaged.wait() == 1)
        #expect(damaged.standardError.contains("cannot open the store \(path)"), "\(damaged.standardError)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == garbage)

        try FileManager.default.removeItem(atPath: path)
        do {
            let other = try SQLiteConnection(path: path, mode: .readWrite(create: true))
            try other.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY, total TEXT); INSERT INTO invoices VALUES (1, '9.99')")
        }
        let before = try Data(contentsOf: URL(fileURLWithPath: path))
        let foreign = try harness.startDaemon()
        #expect(await foreign.wait() == 1)
        #expect(foreign.standardError.contains("is an SQLite database, but not a reconcile store"), "\(foreign.standardError)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before)
    }

    @Test("the database locked by another process for longer than the busy timeout: errors logged, no crash, nothing lost")
    func lockedDatabase() async throws {
        let harness = Harness("locked")
        try await harness.startMock()
        harness.configure(merchant(harness))
        let daemon = try await harness.startDaemonAndWait()
        let database = harness.directory.file("state/orders.db")
        let connection = try SQLiteConnection(path: database, mode: .readWrite(create: false))
        defer { connection.close() }
        try connection.execute("BEGIN EXCLUSIVE")  // waits at most for a commit of the daemon's
        for index in 0..<30 { harness.dropOrder("L\(index)") }
        // Held until the daemon has given up waiting for it (its 5 s busy timeout) and said so.
        #expect(await eventually(timeout: .seconds(60)) { daemon.standardError.contains("REASON=busy") }, "\(daemon.standardError.suffix(500))")
        try connection.execute("ROLLBACK")
        #expect(daemon.isRunning)
        #expect(await harness.waitFor(.finished, count: 30, timeout: .seconds(60)), "\(harness.counts())")
        #expect(Self.incomingCount(harness) == 0)
        daemon.send(SIGTERM)
        #expect(await daemon.wait() == 0)
    }
}
