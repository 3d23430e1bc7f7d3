import Foundation
import ReconcileCore
import ReconcileFoundation
import ReconcileStore
import ReconcileSQLite

/// **idle**: 100,000 orders all due an hour from now and nothing else to do: the CPU time the
/// daemon uses and how often its threads wake up over 30 s (10 s with `--quick`), without a
/// watchdog and with `WatchdogSec=30s` (a ping every 15 s). libdispatch's event thread is
/// counted apart: on Linux it runs a worker-pool monitor once a second in every process that has
/// used dispatch's thread pool (the Swift runtime's executor does), which no code of ours can stop.
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
            // Start-up's own work settles, and the dispatch workers it used time out (5 s idle) and end.
            try await Task.sleep(for: .seconds(6))
            // Sampled every 100 ms: a run of tenths of a second in which threads switched in is
            // one wake-up, however many switches it took (a watchdog turn wakes three threads).
            let eventThreads = daemon.dispatchEventThreads
            let cpu = daemon.cpuSeconds, switches = daemon.contextSwitches
            var previous = switches, ownWakeUps = 0, dispatchWakeUps = 0, wasAwake = (own: false, dispatch: false)
            let end = ContinuousClock.now + window
            while ContinuousClock.now < end {
                try await Task.sleep(for: .milliseconds(100))
                let now = daemon.contextSwitches
                let own = DaemonProcess.wakeUps(from: previous.filter { !eventThreads.contains($0.key) }, to: now.filter { !eventThreads.contains($0.key) })
                let all = DaemonProcess.wakeUps(from: previous, to: now)
                if own > 0, !wasAwake.own { ownWakeUps += 1 }
                if all > own, !wasAwake.dispatch { dispatchWakeUps += 1 }
                wasAwake = (own > 0, all > own)
                previous = now
            }
            let usedCPU = daemon.cpuSeconds - cpu
            _ = await daemon.stop()
            let label = watchdog ? "WatchdogSec=30s" : "no watchdog"
            let seconds = "in \(Int(window.inSeconds)) s"
            let pings = watchdog ? Int(window.inSeconds / 15) : 0
            report.add("CPU, \(label)", usedCPU / window.inSeconds * 100, "%", target: options.quick ? "" : "<= 0.1 %")
            report.add("wake-ups, \(label), the daemon's threads", Double(ownWakeUps), seconds, target: options.quick ? "" : "<= \(2 * pings + 1)")
            report.add("wake-ups, \(label), libdispatch's event thread", Double(dispatchWakeUps), seconds, target: "(its pool monitor: 1/s)")
            report.notes.append("\(label): context switches: " + DaemonProcess.wakingThreads(from: switches, to: previous).joined(separator: ", "))
        }
        report.notes.append("\(BenchmarkReport.format(Double(orders))) orders due in 1 h; a wake-up is a 100 ms sample in which a thread ran")
        report.notes.append("a watchdog ping is two wake-ups: the loop's turn, and 5 s later the exit of the idle dispatch worker that ran it")
        report.notes.append("libdispatch on Linux runs a worker-pool monitor once a second in its event thread in every process that used its pool")
        return report
    }
}
