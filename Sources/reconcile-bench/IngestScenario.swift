import Foundation
import Glibc
import ReconcileCore
import ReconcileFoundation
import ReconcileSpool
import ReconcileStore
import ReconcileSystem
import ReconcileSQLite

/// **ingest**: order files → committed (`synchronous=FULL`) and unlinked, through the daemon's
/// own ingest code with the state on the real disk; files/s beside the disk's raw fsync and
/// unlink rates. A second run keeps the spool on tmpfs (state still on disk) to show what the
/// daemon does when unlinking is cheap.
enum IngestScenario {
    static let name = "ingest"

    @Sendable static func run(_ options: BenchmarkOptions) async throws -> BenchmarkReport {
        let count = options.files ?? (options.quick ? 5_000 : 100_000)
        let root = try options.makeDirectory(name)
        defer { try? FileManager.default.removeItem(atPath: root) }

        var report = BenchmarkReport(scenario: name)
        report.add("files", Double(count), "")
        let onDisk = try await measure(count: count, spool: root + "/spool", state: root + "/state")
        report.add("elapsed", onDisk, "s")
        report.add("ingest rate", Double(count) / onDisk, "files/s", target: options.quick ? "" : ">= 10,000 files/s")
        report.add("disk fsync rate", DiskProbe.fsyncRate(in: root), "fsync/s")
        report.add("disk unlink rate, 1 thread", DiskProbe.unlinkRate(in: root, threads: 1), "unlink/s")
        report.add("disk unlink rate, 8 threads", DiskProbe.unlinkRate(in: root, threads: 8), "unlink/s")
        report.notes.append("state and spool on \(DiskProbe.filesystem(of: root)) (\(root)), synchronous=FULL, 512 files per transaction")
        let shm = "/dev/shm"
        if FileManager.default.fileExists(atPath: shm) {
            let spool = try BenchmarkOptions(baseDirectory: shm).makeDirectory(name)
            defer { try? FileManager.default.removeItem(atPath: spool) }
            let onTmpfs = try await measure(count: count, spool: spool + "/spool", state: root + "/state2")
            report.add("ingest rate, spool on tmpfs", Double(count) / onTmpfs, "files/s")
            report.notes.append("second run: spool on \(DiskProbe.filesystem(of: spool)), state on \(DiskProbe.filesystem(of: root))")
        }
        return report
    }

    /// Writes `count` order files the way producers do, then times the ingest of all of them.
    static func measure(count: Int, spool: String, state: String) async throws -> Double {
        let layout = SpoolLayout(root: spool)
        try layout.prepare()
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
        let store = try SQLiteOrderStore(path: state + "/orders.db", mode: .owner)

        let receipt = String(repeating: "QUJD", count: 200)
        for index in 0..<count {
            let name = String(format: "order-%06d.json", index)
            let text = "{\"order_id\":\"B\(index)\",\"product_id\":\"com.example.gems\",\"receipt\":\"\(receipt)\",\"user_id\":\"u\(index % 977)\"}"
            let temporary = layout.temporary + "/" + name
            guard FileManager.default.createFile(atPath: temporary, contents: Data(text.utf8)) else {
                throw BenchmarkFailure("cannot write \(temporary)")
            }
            rename(temporary, layout.incoming + "/" + name)
        }
        // Producers fsync their files: the blocks are on disk before the daemon sees them.
        sync()

        let ingestor = SpoolIngestor(
            layout: layout, store: store, settings: .init(verifierKind: .apple, maxFileSize: 1 << 20), logger: .discarding, clock: SystemClock())
        let start = ContinuousClock.now
        let summary = await ingestor.rescan()
        let elapsed = (ContinuousClock.now - start).inSeconds

        let left = try FileManager.default.contentsOfDirectory(atPath: layout.incoming).count
        let stored = try store.countsByState()[.pending] ?? 0
        guard summary.accepted == count, left == 0, stored == count else {
            throw BenchmarkFailure("ingest lost track: accepted \(summary.accepted), stored \(stored), left \(left) of \(count)")
        }
        return elapsed
    }
}

struct BenchmarkFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
