import Foundation
import Glibc
import ReconcileCore
import Testing
import TestSupport
import ReconcileFoundation

/// The built `reconciled` with `[Daemon] MetricsFile=`, against the built `reconcile-mock`.
@Suite("End to end: metrics file", .serialized)
struct MetricsEndToEndTests {
    func merchant(_ harness: Harness, metricsFile: String?) -> String {
        """
        [Verifier]
        Kind=http
        URL=\(harness.base)/merchant/verify
        MaxInFlight=8
        MaxRate=infinity
        [Daemon]
        DrainTimeout=5s
        \(metricsFile.map { "MetricsFile=\($0)" } ?? "")
        """
    }

    /// The file, parsed strictly; `nil` while it is absent or does not parse.
    func read(_ path: String) -> PrometheusText? {
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        return try? PrometheusText(parsing: String(decoding: data, as: UTF8.self))
    }

    @Test("the file appears at start, parses strictly, and shows the finished orders, a latency histogram and the spool's files, last at shutdown")
    func metricsFile() async throws {
        let harness = Harness("metrics")
        try await harness.startMock()
        try FileManager.default.createDirectory(atPath: harness.directory.file("textfile"), withIntermediateDirectories: false)
        let path = harness.directory.file("textfile/reconciled.prom")
        harness.configure(merchant(harness, metricsFile: "textfile/reconciled.prom"))
        let daemon = try await harness.startDaemonAndWait()
        #expect(await eventually(timeout: .seconds(10)) { read(path) != nil }, "\(daemon.standardError)")

        for index in 0..<20 { harness.dropOrder(String(format: "M%02d", index)) }
        harness.drop("garbage.json", "not an order")
        #expect(await harness.waitFor(.finished, count: 20, timeout: .seconds(30)), "\(harness.counts())")
        // While the daemon runs: within the 5 s pause after the last write.
        #expect(await eventually(timeout: .seconds(15)) { read(path)?.value("reconciled_orders", ["state": "finished"]) == 20 })

        let running = try #require(read(path))
        #expect(running.value("reconciled_orders", ["state": "pending"]) == 0)
        #expect(running.samples("reconciled_orders").count == OrderState.allCases.count)
        #expect(running.value("reconciled_order_transitions_total", ["to": "finished"]) == 20)
        #expect(running.value("reconciled_attempt_outcomes_total", ["class": "verified"]) == 20)
        #expect(running.value("reconciled_attempts_started_total") == 20)
        #expect(running.value("reconciled_spool_files_total", ["outcome": "accepted"]) == 20)
        #expect(running.value("reconciled_spool_files_total", ["outcome": "rejected"]) == 1)
        #expect(running.value("reconciled_circuit_state", ["endpoint": "merchant", "state": "closed"]) == 1)
        #expect(running.value("reconciled_build_info", ["version": ReconcileVersion.current]) == 1)
        let count = try #require(running.value("reconciled_request_duration_seconds_count", ["endpoint": "merchant"]))
        #expect(count == 20)
        #expect(try #require(running.value("reconciled_request_duration_seconds_sum", ["endpoint": "merchant"])) > 0)
        let buckets = running.samples("reconciled_request_duration_seconds_bucket", matching: ["endpoint": "merchant"])
        #expect(buckets.count == LatencyHistogram.defaultUpperBounds.count + 1)
        #expect(buckets.last?.labels["le"] == "+Inf" && buckets.last?.value == 20)
        #expect(running.family("reconciled_oldest_pending_order_received_timestamp_seconds")?.samples.isEmpty == true)

        var info = stat()
        #expect(stat(path, &info) == 0 && info.st_mode & 0o777 == 0o644)
        #expect(harness.directory.list("textfile") == ["reconciled.prom"])

        daemon.send(SIGTERM)
        #expect(await daemon.wait() == 0)
        let last = try #require(read(path))
        #expect(last.value("reconciled_orders", ["state": "finished"]) == 20)
        #expect(last.value("reconciled_attempts_in_flight") == 0)
        #expect(harness.directory.list("textfile") == ["reconciled.prom"])
        #expect(!daemon.standardError.contains("metrics file"), "\(daemon.standardError)")
    }

    @Test("a metrics file that cannot be written is one warning naming it; verification goes on; a reload can move it")
    func unwritable() async throws {
        let harness = Harness("metrics-fail")
        try await harness.startMock()
        let missing = harness.directory.file("absent/reconciled.prom")
        harness.configure(merchant(harness, metricsFile: "absent/reconciled.prom"))
        for index in 0..<5 { harness.dropOrder("F\(index)") }
        let daemon = try await harness.startDaemonAndWait()
        #expect(await harness.waitFor(.finished, count: 5, timeout: .seconds(30)), "\(harness.counts())")
        // The change of the finished orders tried too:
        // real sleep: past the daemon's real 5 s pause between writes
        try await Task.sleep(for: .seconds(6))
        let warnings = daemon.standardError.components(separatedBy: "cannot write the metrics file \(missing): open ").count - 1
        #expect(warnings == 1, "\(daemon.standardError)")

        // A reload that points it somewhere writable: the file appears, with the numbers so far.
        harness.configure(merchant(harness, metricsFile: "reconciled.prom"))
        daemon.send(SIGHUP)
        let moved = harness.directory.file("reconciled.prom")
        #expect(await eventually(timeout: .seconds(10)) { read(moved)?.value("reconciled_orders", ["state": "finished"]) == 5 })

        // A reload that turns it off removes it.
        harness.configure(merchant(harness, metricsFile: nil))
        daemon.send(SIGHUP)
        #expect(await eventually(timeout: .seconds(10)) { !FileManager.default.fileExists(atPath: moved) })
        daemon.send(SIGTERM)
        #expect(await daemon.wait() == 0)
        #expect(!FileManager.default.fileExists(atPath: moved))
    }
}
