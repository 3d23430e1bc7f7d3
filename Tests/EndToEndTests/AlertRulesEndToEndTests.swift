import Foundation
import Glibc
import ReconcileCore
import ReconcileMock
import Testing
import TestSupport

/// Prometheus's `promtool`: from `RECONCILE_PROMTOOL`, else `PATH` (`.ci/deps` puts Debian's
/// there). Its tests skip without one, unless `RECONCILE_REQUIRE_PROMTOOL=1` (CI).
enum Promtool {
    static let path: String? = {
        let environment = ProcessInfo.processInfo.environment
        if let path = environment["RECONCILE_PROMTOOL"] { return path }
        for directory in (environment["PATH"] ?? "").split(separator: ":") where access("\(directory)/promtool", X_OK) == 0 {
            return "\(directory)/promtool"
        }
        return nil
    }()
    static var isEnabled: Bool { path != nil || ProcessInfo.processInfo.environment["RECONCILE_REQUIRE_PROMTOOL"] == "1" }

    /// Runs promtool with `arguments` in `directory`; its status and its output and errors.
    static func run(_ arguments: [String], in directory: String) async throws -> (status: Int32, output: String) {
        guard let path else { throw HarnessError("no promtool: install Debian's prometheus package, or set RECONCILE_PROMTOOL") }
        return try await ToolProcess.run(path, arguments, in: directory)
    }
}

/// The shipped alert rules and dashboard (etc/prometheus, etc/grafana) against the metrics a
/// real daemon writes: promtool checks and unit-tests the rules, and every series the rule tests
/// feed in and every metric a dashboard panel reads must be one the daemon wrote.
@Suite("End to end: alert rules and dashboard", .serialized, .enabled(if: Promtool.isEnabled, "no promtool (Debian's prometheus package)"))
struct AlertRulesEndToEndTests {
    static let rules = Fixtures.repositoryRoot + "/etc/prometheus/reconciled.rules.yml"
    static let ruleTests = Fixtures.repositoryRoot + "/Tests/Fixtures/prometheus/reconciled.rules.test.yml"
    static let dashboard = Fixtures.repositoryRoot + "/etc/grafana/reconciled.json"

    /// A metrics file from the built daemon: two orders finished, one waiting for a retry.
    func writtenMetrics() async throws -> PrometheusText {
        let harness = Harness("alert-rules")
        try await harness.startMock()
        harness.configure(
            """
            [Verifier]
            Kind=http
            URL=\(harness.base)/merchant/verify
            MaxRate=infinity
            [Daemon]
            MetricsFile=metrics.prom
            """)
        harness.dropOrder("F1")
        harness.dropOrder("F2")
        harness.dropOrder("P1", receipt: MockReceipt(merchantAnswers: Array(repeating: "pending", count: 20)))
        let daemon = try await harness.startDaemonAndWait()
        let path = harness.directory.file("metrics.prom")
        func read() -> PrometheusText? {
            FileManager.default.contents(atPath: path).flatMap { try? PrometheusText(parsing: String(decoding: $0, as: UTF8.self)) }
        }
        // The file is written at most every 5 s: on a loaded machine the three orders' outcomes
        // may take a while to show.
        let written = await eventually(timeout: .seconds(60)) {
            guard let text = read() else { return false }
            return text.value("reconciled_orders", ["state": "finished"]) == 2 && text.value("reconciled_orders", ["state": "pending"]) == 1
                && (text.value("reconciled_attempt_outcomes_total", ["class": "transient"]) ?? 0) >= 1
        }
        daemon.send(SIGTERM)
        _ = await daemon.wait()
        guard written, let text = read() else { throw HarnessError("the metrics file never showed the orders: \(daemon.standardError.suffix(2_000))") }
        return text
    }

    @Test("promtool check rules and test rules pass on the shipped rules, fed only series the daemon writes")
    func rules() async throws {
        let metrics = try await writtenMetrics()
        let check = try await Promtool.run(["check", "rules", Self.rules], in: Fixtures.repositoryRoot)
        #expect(check.status == 0, "\(check.output)")
        #expect(check.output.contains("SUCCESS: 9 rules found"), "\(check.output)")

        // Every series the rule tests feed in, but node_exporter's own, is one the daemon wrote.
        let tests = try String(contentsOfFile: Self.ruleTests, encoding: .utf8)
        let series = try Self.seriesLines(tests)
        #expect(series.count >= 10)
        for (name, labels) in series where !name.hasPrefix("node_") && name != "up" {
            var wanted = labels
            wanted["instance"] = nil
            let written = !metrics.samples(name, matching: wanted).isEmpty
                || (wanted.isEmpty && metrics.family(name)?.samples.isEmpty == true)
            #expect(written, "the rule tests feed \(name)\(wanted), which the daemon's file does not have")
        }
        let test = try await Promtool.run(["test", "rules", Self.ruleTests], in: Fixtures.repositoryRoot)
        #expect(test.status == 0, "\(test.output)")
        #expect(test.output.contains("SUCCESS"), "\(test.output)")
    }

    @Test("every dashboard expression parses (promtool) and reads only metrics the daemon writes")
    func dashboard() async throws {
        let metrics = try await writtenMetrics()
        let json = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: Self.dashboard))) as? [String: Any])
        let panels = try #require(json["panels"] as? [[String: Any]])
        let expressions = panels.flatMap { ($0["targets"] as? [[String: Any]] ?? []).compactMap { $0["expr"] as? String } }
        #expect(expressions.count >= 12)
        for required in ["reconciled_orders", "reconciled_oldest_pending_order_received_timestamp_seconds", "reconciled_attempt_outcomes_total",
            "reconciled_circuit_state", "reconciled_request_duration_seconds_bucket", "reconciled_outbox_actions"]
        {
            #expect(expressions.contains { $0.contains(required) }, "no panel reads \(required)")
        }

        // Each expression as a recording rule: promtool parses it as Prometheus would.
        let directory = TemporaryDirectory(prefix: "dashboard")
        var rules = "groups:\n  - name: dashboard\n    rules:\n"
        for (index, expression) in expressions.enumerated() {
            let concrete = expression.replacingOccurrences(of: "$instance", with: ".*")
            rules += "      - record: dashboard:expression_\(index)\n        expr: '\(concrete.replacingOccurrences(of: "'", with: "''"))'\n"
        }
        directory.write("dashboard.rules.yml", rules)
        let check = try await Promtool.run(["check", "rules", "dashboard.rules.yml"], in: directory.path)
        #expect(check.status == 0, "\(check.output)\n\(rules)")

        let names = Set(expressions.flatMap { expression in
            expression.matches(of: /\b(reconciled_[a-z_]+)/).map { String($0.output.1) }
        })
        for name in names {
            let family = ["_bucket", "_count", "_sum"].first { name.hasSuffix($0) }.map { String(name.dropLast($0.count)) } ?? name
            #expect(metrics.family(family) != nil, "a dashboard panel reads \(name), which the daemon does not write")
        }
    }

    /// The `series:` lines of a promtool test file: names and labels.
    static func seriesLines(_ text: String) throws -> [(String, [String: String])] {
        try text.split(separator: "\n").compactMap { line -> (String, [String: String])? in
            guard let match = line.firstMatch(of: /^\s*- series: '([a-zA-Z_:][a-zA-Z0-9_:]*)\{(.*)\}'\s*$/) else { return nil }
            var labels: [String: String] = [:]
            for pair in String(match.output.2).matches(of: /([a-zA-Z_][a-zA-Z0-9_]*)="([^"]*)"/) {
                labels[String(pair.output.1)] = String(pair.output.2)
            }
            guard !labels.isEmpty || match.output.2.isEmpty else { throw HarnessError("cannot read the labels of: \(line)") }
            return (String(match.output.1), labels)
        }
    }
}
