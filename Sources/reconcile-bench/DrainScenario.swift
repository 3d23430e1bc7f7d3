import Foundation
import ReconcileCore
import ReconcileFoundation
import ReconcileMock
import ReconcileStore
import ReconcileSQLite

/// **drain**: a backlog made due at once and sent at `MaxRate=` with `Burst=10`: the rate
/// achieved, the most requests in any one-second window, and the drain time beside the ideal
/// (the burst at once, then one request every 1/MaxRate s).
enum DrainScenario {
    static let name = "drain"
    static let burst = 10

    @Sendable static func run(_ options: BenchmarkOptions) async throws -> BenchmarkReport {
        let cases = options.quick ? [(orders: 200, rate: 50), (orders: 2_000, rate: 500)] : [(orders: 1_000, rate: 50), (orders: 10_000, rate: 500)]
        let (log, server) = try RequestLog.mock()
        defer { server.stop() }
        var report = BenchmarkReport(scenario: name)
        for (orders, rate) in cases {
            log.reset()
            let root = try options.makeDirectory(name)
            defer { try? FileManager.default.removeItem(atPath: root) }
            do {
                let store = try SQLiteOrderStore(path: root + "/orders.db", mode: .owner)
                try Seeding.insertOrders(into: store, count: orders, at: Date().addingTimeInterval(-60))
                store.close()
            }
            let config = try DaemonProcess.writeConfiguration(
                in: root, url: "http://127.0.0.1:\(server.port)/merchant/verify",
                verifier: "MaxInFlight=64\nMaxRate=\(rate)\nBurst=\(burst)")
            let daemon = try DaemonProcess(configPath: config, directory: root)
            _ = try await daemon.waitUntilReady()
            let ideal = Double(orders - burst) / Double(rate)
            guard try await log.wait(for: orders, timeout: .seconds(ideal * 2 + 30)) else {
                throw BenchmarkError("only \(log.count) of \(orders) orders were sent")
            }
            let status = await daemon.stop()
            guard status == 0 else { throw BenchmarkError("reconciled exited with \(status)") }

            let instants = log.all.map(\.instant).sorted()
            let drain = (instants.last! - instants.first!).inSeconds
            // When each request left, as the daemon recorded it (attempts.started_at, in ms).
            let sent = try SQLiteConnection(path: root + "/orders.db", mode: .readOnly)
                .query("SELECT started_at FROM attempts") { ContinuousClock.Instant.now + .milliseconds($0.int64(0)) }
            let label = "\(BenchmarkReport.format(Double(orders))) at MaxRate=\(rate)"
            report.add("\(label): achieved rate", Double(orders - burst) / drain, "orders/s", target: "\(rate)")
            report.add("\(label): peak in 1 s, as sent", Double(RequestLog.peakPerSecond(sent)), "orders", target: "<= \(rate + burst)")
            report.add("\(label): peak in 1 s, at the mock", Double(RequestLog.peakPerSecond(instants)), "orders")
            report.add("\(label): drain time", drain, "s", target: "ideal \(BenchmarkReport.format(ideal)) s")
            report.add("\(label): drain / ideal", drain / ideal * 100, "%", target: options.quick ? "" : "95-105 %")
        }
        report.notes.append("Burst=\(burst), MaxInFlight=64, mock answers at once; drain time from the first request to the last at the mock")
        report.notes.append("as sent: the attempts' start times in the store (1 ms); at the mock: when each request was read there")
        return report
    }
}
