import Foundation
import ReconcileCore
import ReconcileFoundation
import ReconcileMock
import ReconcileStore
import ReconcileSQLite
import Synchronization

/// **backlog**: a store holding a million due orders (after an outage), put straight into the
/// store: time from start to `READY=1`, resident memory after start and after dispatching
/// 100,000 of them, and the dispatch rate beside the same daemon's rate with 1,000 orders.
/// The daemon is a child process (this executable re-run as `reconciled`) against the mock on
/// loopback (`Kind=http`, `MaxInFlight=64`, no rate limit).
enum BacklogScenario {
    static let name = "backlog"

    struct Run {
        var seeded: Double
        var ready: Duration
        var residentAtReady: Double
        var residentAfter: Double
        var rate: Double
    }

    @Sendable static func run(_ options: BenchmarkOptions) async throws -> BenchmarkReport {
        let requests = Counter()
        let service = MockService(onRequest: { requests.value.add(1, ordering: .relaxed) })
        let server = try MockHTTPServer { service.handle($0) }
        defer { server.stop() }
        let url = "http://127.0.0.1:\(server.port)/merchant/verify"
        let large = options.files ?? (options.quick ? 20_000 : 1_000_000)
        let dispatched = min(options.quick ? 5_000 : 100_000, large)

        let small = try await daemonRun(options, url: url, requests: requests, orders: 1_000, dispatch: 1_000)
        let big = try await daemonRun(options, url: url, requests: requests, orders: large, dispatch: dispatched)
        var report = BenchmarkReport(scenario: name)
        let count = BenchmarkReport.format(Double(large))
        report.add("seeding \(count) orders", big.seeded, "orders/s")
        report.add("start to READY=1, \(count)", big.ready.inSeconds * 1000, "ms", target: options.quick ? "" : "<= 1,000 ms")
        report.add("RSS at READY, \(count)", big.residentAtReady, "MiB", target: options.quick ? "" : "<= 64 MiB")
        report.add("RSS after \(BenchmarkReport.format(Double(dispatched))) dispatched", big.residentAfter, "MiB", target: options.quick ? "" : "<= 64 MiB")
        report.add("start to READY=1, 1,000", small.ready.inSeconds * 1000, "ms")
        report.add("dispatch rate, 1,000 orders", small.rate, "orders/s")
        report.add("dispatch rate, \(count) orders", big.rate, "orders/s")
        report.add("rate at \(count) / at 1,000", big.rate / small.rate * 100, "%", target: options.quick ? "" : ">= 90 %")
        report.notes.append("orders due at once; rates from READY=1 until the mock has answered that many; the mock runs in this process")
        return report
    }

    static func daemonRun(_ options: BenchmarkOptions, url: String, requests: Counter, orders: Int, dispatch: Int) async throws -> Run {
        let root = try options.makeDirectory(name)
        defer { try? FileManager.default.removeItem(atPath: root) }
        let seedStart = ContinuousClock.now
        do {
            let store = try SQLiteOrderStore(path: root + "/orders.db", mode: .owner)
            try Seeding.insertOrders(into: store, count: orders, at: Date().addingTimeInterval(-60))
            store.close()
        }
        let seeded = Double(orders) / (ContinuousClock.now - seedStart).inSeconds
        let config = try DaemonProcess.writeConfiguration(in: root, url: url, verifier: "MaxInFlight=64\nMaxRate=infinity")

        let before = requests.value.load(ordering: .relaxed)
        let daemon = try DaemonProcess(configPath: config, directory: root)
        let ready = try await daemonReady(daemon)
        let residentAtReady = daemon.residentMiB
        let readyAt = ContinuousClock.now
        while requests.value.load(ordering: .relaxed) - before < dispatch {
            guard daemon.process.isRunning else { throw BenchmarkError("reconciled stopped while dispatching") }
            try await Task.sleep(for: .milliseconds(5))
        }
        let rate = Double(dispatch) / (ContinuousClock.now - readyAt).inSeconds
        let residentAfter = daemon.residentMiB
        let status = await daemon.stop()
        guard status == 0 else { throw BenchmarkError("reconciled exited with \(status)") }
        return Run(seeded: seeded, ready: ready, residentAtReady: residentAtReady, residentAfter: residentAfter, rate: rate)
    }

    static func daemonReady(_ daemon: DaemonProcess) async throws -> Duration {
        try await daemon.waitUntilReady()
    }
}
