import Foundation
import ReconcileCore
import ReconcileStore

/// **idle**: 100,000 orders all due an hour from now and nothing else to do: the CPU time the
/// daemon uses and how often its threads wake up over 30 s (10 s with `--quick`), without a
/// watchdog and with `WatchdogSec=30s` (a ping every 15 s).
enum IdleScenario {
    static let name = "idle"

    @Sendable static func run(_ options: BenchmarkOptions) async throws -> BenchmarkReport {
        let orders = options.files ?? (options.quick ? 10_000 : 100_000)
        let window: Duration = options.quick ? .seconds(10) : .seconds(30)
        var report = BenchmarkReport(scenario: name)
        for watchdog in [false, true] {
            let root = try options.makeDirectory(name)
            defer { try? FileManager.default.removeItem(atPath: root) }
            do {
                let store = try SQLiteOrderStore(path: root + "/orders.db", mode: .owner)
                try Seeding.insertOrders(into: store, count: orders, at: Date().addingTimeInterval(3_600))
                store.close()
            }
            let config = try DaemonProcess.writeConfiguration(in: root, url: "http://127.0.0.1:9/verify")
            let environment = watchdog ? ["WATCHDOG_USEC": "30000000"] : [:]
            let daemon = try DaemonProcess(configPath: config, directory: root, environment: environment)
            _ = try await daemon.waitUntilReady()
            try await Task.sleep(for: .seconds(1))  // start-up's own work settles
            let cpu = daemon.cpuSeconds, switches = daemon.contextSwitches
            try await Task.sleep(for: window)
            let usedCPU = daemon.cpuSeconds - cpu, woke = DaemonProcess.wakeUps(from: switches, to: daemon.contextSwitches)
            _ = await daemon.stop()
            let label = watchdog ? "WatchdogSec=30s" : "no watchdog"
            report.add("CPU, \(label)", usedCPU / window.inSeconds * 100, "%", target: options.quick ? "" : "<= 0.1 %")
            report.add("wake-ups, \(label)", Double(woke), "in \(Int(window.inSeconds)) s", target: watchdog ? "<= 2 pings' worth" : "")
        }
        report.notes.append("\(BenchmarkReport.format(Double(orders))) orders due in 1 h; wake-ups are context switches of all threads")
        return report
    }
}
