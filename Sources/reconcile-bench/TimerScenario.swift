import Foundation
import ReconcileCore
import ReconcileFoundation
import ReconcileMock
import ReconcileStore
import ReconcileSQLite

/// **timer**: orders due at many different moments over the next seconds, in groups of ten: how
/// late each order's request reaches the mock after the moment it was due (p50, p99, max).
/// `Kind=http`, `MaxInFlight=64`, no rate limit, so nothing but the timer makes an order wait.
enum TimerScenario {
    static let name = "timer"

    @Sendable static func run(_ options: BenchmarkOptions) async throws -> BenchmarkReport {
        let orders = options.files ?? (options.quick ? 300 : 3_000)
        let spread: Duration = options.quick ? .seconds(5) : .seconds(20)
        let groupSize = 10
        let groups = max(1, orders / groupSize)

        let (log, server) = try RequestLog.mock()
        defer { server.stop() }
        let root = try options.makeDirectory(name)
        defer { try? FileManager.default.removeItem(atPath: root) }

        // Due from 3 s from now (the daemon is ready well before), one group every spread/groups.
        let first = Date().addingTimeInterval(3)
        let step = spread.inSeconds / Double(groups)
        var due: [String: Date] = [:]
        do {
            let store = try SQLiteOrderStore(path: root + "/orders.db", mode: .owner)
            for group in 0..<groups {
                let at = first.addingTimeInterval(Double(group) * step)
                let prefix = "T\(group)-"
                try Seeding.insertOrders(into: store, count: groupSize, at: at, prefix: prefix)
                for index in 0..<groupSize { due[prefix + String(index)] = at }
            }
            store.close()
        }
        let config = try DaemonProcess.writeConfiguration(
            in: root, url: "http://127.0.0.1:\(server.port)/merchant/verify", verifier: "MaxInFlight=64\nMaxRate=infinity")
        let daemon = try DaemonProcess(configPath: config, directory: root)
        _ = try await daemon.waitUntilReady()
        guard try await log.wait(for: due.count, timeout: spread + .seconds(60)) else {
            throw BenchmarkError("only \(log.count) of \(due.count) orders were sent")
        }
        let status = await daemon.stop()
        guard status == 0 else { throw BenchmarkError("reconciled exited with \(status)") }

        let lateness = log.all.compactMap { arrival in due[arrival.orderID].map { arrival.wall.timeIntervalSince($0) * 1000 } }
        var report = BenchmarkReport(scenario: name)
        report.add("orders", Double(lateness.count), "")
        report.add("lateness p50", RequestLog.percentile(lateness, 0.5), "ms")
        report.add("lateness p99", RequestLog.percentile(lateness, 0.99), "ms", target: options.quick ? "" : "<= 50 ms")
        report.add("lateness max", lateness.max() ?? .nan, "ms")
        report.add("sent early", Double(lateness.filter { $0 < 0 }.count), "orders", target: "0")
        report.notes.append("\(groups) due times \(Int(step * 1000)) ms apart, \(groupSize) orders each; lateness = arrival at the mock - due time")
        return report
    }
}
