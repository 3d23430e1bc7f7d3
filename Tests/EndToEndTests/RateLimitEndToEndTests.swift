import Foundation
import Glibc
import ReconcileCore
import ReconcileFoundation
import ReconcileMock
import Testing
import TestSupport
@testable import ReconcileStore
@testable import ReconcileSQLite

/// A 429 pauses the endpoint's token bucket (DESIGN §6): never for longer than
/// `CircuitMaxCooldown`, whatever `Retry-After` asks; a reload ends the pause; `reconcilectl
/// status` and the metrics file show it.
@Suite("End to end: 429 pauses", .serialized)
struct RateLimitEndToEndTests {
    func merchant(_ harness: Harness, maxCooldown: String) -> String {
        """
        [Verifier]
        Kind=http
        URL=\(harness.base)/merchant/verify
        MaxInFlight=1
        MaxRate=infinity
        CircuitThreshold=100
        CircuitCooldown=1s
        CircuitMaxCooldown=\(maxCooldown)
        \(VerificationEndToEndTests.quickRetry)
        [Daemon]
        MetricsFile=reconciled.prom
        """
    }

    /// The merchant endpoint's entry in `status --json`.
    func merchantStatus(_ harness: Harness) async throws -> JSONObject {
        let result = try await harness.ctl(["status", "--json"])
        #expect(result.status == 0, "\(result.error)")
        let circuits = try JSONParser().parse(Array(result.output.utf8)).objectValue?["circuits"]?.arrayValue ?? []
        return try #require(circuits.compactMap(\.objectValue).first { $0["endpoint"]?.stringValue == "merchant" }, "\(result.output)")
    }

    func metric(_ harness: Harness, _ name: String, _ labels: [String: String]) -> Double? {
        guard let text = harness.directory.read("reconciled.prom") else { return nil }
        return (try? PrometheusText(parsing: text))?.value(name, labels)
    }

    @Test("Retry-After: 99999999999 pauses the endpoint for CircuitMaxCooldown (10s) only, shown in status and the metrics file; the order's retry is within MaxDelay; then it finishes")
    func centuriesCapped() async throws {
        let harness = Harness("429-capped")
        try await harness.startMock(["--faults", #"{"status_rates":{"429":1.0},"retry_after":"99999999999"}"#])
        harness.configure(merchant(harness, maxCooldown: "10s"))
        harness.dropOrder("R1")
        let daemon = try harness.startDaemon()
        #expect(await eventually(timeout: .seconds(10)) { (try? await harness.mockStats().requests) ?? 0 >= 1 })
        let asked = Date()
        // The order's own retry: Retry-After raises its delay, capped at MaxDelay (200ms), from
        // when its last attempt ended (its commit comes no earlier).
        let retryIn = { () -> Int64? in
            try? harness.store().withConnection {
                try $0.queryFirst(
                    "SELECT o.next_attempt_at - max(t.at) FROM orders o JOIN transitions t ON t.order_ref = o.id WHERE o.next_attempt_at IS NOT NULL AND o.state = 'pending'"
                ) { $0.optionalInt64(0) } ?? nil
            }
        }
        #expect(await eventually(timeout: .seconds(10)) { retryIn() != nil })
        #expect(retryIn().map { $0 <= 1000 } == true, "next attempt after the 429: \(String(describing: retryIn())) ms")

        // Paused until at most 10 s after the 429, not the year 5138. (The mock answers 429
        // throughout, so the endpoint is paused again soon after each pause; a loaded machine may
        // ask between two.)
        var until: Date?
        var statusAsked = asked
        #expect(await eventually(timeout: .seconds(30)) {
            statusAsked = Date()
            until = try? await merchantStatus(harness)["paused_until"]?.stringValue.flatMap(RFC3339.parse)
            return until != nil
        })
        // In force when status was asked (a loaded machine may see the first 429 late; status
        // shows whole seconds), and ending within the cap of the latest 429.
        #expect(
            until.map { $0 > statusAsked.addingTimeInterval(-1) && $0 <= Date().addingTimeInterval(11) } == true,
            "paused until \(String(describing: until)), asked at \(statusAsked)")
        var text = ""
        #expect(await eventually(timeout: .seconds(30)) {
            text = (try? await harness.ctl(["status"]))?.output ?? ""
            return text.contains("  paused         merchant until ") && text.contains(" (429)\n")
        }, "\(text)")
        // Written at most every 5 s.
        #expect(await eventually(timeout: .seconds(20)) {
            metric(harness, "reconciled_endpoint_paused_until_timestamp_seconds", ["endpoint": "merchant"]).map {
                $0 > asked.timeIntervalSince1970 - 1 && $0 <= Date().timeIntervalSince1970 + 11
            } == true
        }, "\(harness.directory.read("reconciled.prom") ?? "no metrics file")")

        try await harness.configureMock(#"{"reset":true}"#)
        #expect(await harness.waitFor(.finished, count: 1, timeout: .seconds(20)), "\(harness.counts()); \(daemon.standardError.suffix(600))")
        #expect(try await merchantStatus(harness)["paused_until"] == .null)
        daemon.send(SIGTERM)
        #expect(await daemon.wait() == 0)
        #expect(daemon.standardError.contains("merchant answered 429; sending nothing there for 10s (Retry-After asked for "), "\(daemon.standardError.suffix(600))")
        #expect(daemon.standardError.contains("capped at CircuitMaxCooldown"))
    }

    @Test("a reload ends a pause: the order waiting behind an hour's Retry-After goes at once")
    func reloadEndsPause() async throws {
        let harness = Harness("429-reload")
        try await harness.startMock(["--faults", #"{"status_rates":{"429":1.0},"retry_after":"3600"}"#])
        harness.configure(merchant(harness, maxCooldown: "2h"))
        harness.dropOrder("R2")
        let daemon = try harness.startDaemon()
        #expect(await eventually(timeout: .seconds(10)) { (try? await harness.mockStats().requests) ?? 0 >= 1 })
        let until = try #require(try await merchantStatus(harness)["paused_until"]?.stringValue.flatMap(RFC3339.parse))
        #expect(until > Date().addingTimeInterval(3000))

        try await harness.configureMock(#"{"reset":true}"#)
        // A second order taken in wakes the scheduler: neither goes during the pause.
        harness.dropOrder("R3")
        #expect(await harness.waitFor(.pending, count: 2, timeout: .seconds(10)), "\(harness.counts())")
        #expect(try await harness.mockStats().requests == 1, "sent during the pause")
        let reload = try await harness.ctl(["reload", "--wait"])
        #expect(reload.status == 0, "\(reload.error)")
        #expect(await harness.waitFor(.finished, count: 2, timeout: .seconds(10)), "\(harness.counts()); \(daemon.standardError.suffix(600))")
        #expect(try await merchantStatus(harness)["paused_until"] == .null)
        daemon.send(SIGTERM)
        #expect(await daemon.wait() == 0)
    }
}
