import Foundation
import Glibc
import ReconcileCore
import ReconcileMock
import Testing
import TestSupport
@testable import ReconcileStore
@testable import ReconcileSQLite

/// The built `reconciled` against the built `reconcile-mock` on loopback (issue 3's "done when").
@Suite("End to end: verification", .serialized)
struct VerificationEndToEndTests {
    /// Fast retry settings, so that a test sees many attempts in seconds.
    static let quickRetry = """
        [Retry]
        InitialDelay=50ms
        Multiplier=2
        MaxDelay=200ms
        Jitter=none
        """

    @Test("1,000 orders, all finished against a healthy merchant endpoint, each granted once under its own key")
    func thousandOrders() async throws {
        let harness = Harness("thousand")
        try await harness.startMock()
        harness.configure("""
            [Verifier]
            Kind=http
            URL=\(harness.base)/merchant/verify
            MaxInFlight=32
            MaxRate=infinity
            """)
        for index in 0..<1000 { harness.dropOrder(String(format: "T%04d", index)) }
        let daemon = try harness.startDaemon()
        #expect(await harness.waitFor(.finished, count: 1000, timeout: .seconds(60)), "\(harness.counts())")
        daemon.send(SIGTERM)
        #expect(await daemon.wait() == 0)
        let stats = try await harness.mockStats()
        #expect(stats.grantsSucceeded.count == 1000)
        #expect(stats.grantsSucceeded.values.allSatisfy { $0 == 1 })
        #expect(stats.idempotencyMismatches == 0)
        #expect(try harness.scalar("SELECT count(*) FROM transitions WHERE to_state = 'finished'") == 1000)
        #expect(try harness.scalar("SELECT count(*) FROM orders WHERE finished_by = 'merchant'") == 1000)
    }

    @Test("an outage burns no attempts and ages no order into escalation; probes only; then everything finishes")
    func outage() async throws {
        let harness = Harness("outage")
        try await harness.startMock(["--faults", #"{"outage":true}"#])
        harness.configure("""
            [Verifier]
            Kind=http
            URL=\(harness.base)/merchant/verify
            MaxInFlight=2
            MaxRate=infinity
            CircuitThreshold=2
            CircuitCooldown=200ms
            CircuitMaxCooldown=500ms
            \(Self.quickRetry)
            MaxAttempts=3
            MaxAge=2s
            """)
        for index in 0..<40 { harness.dropOrder("O\(index)") }
        let daemon = try await harness.startDaemonAndWait()
        #expect(await eventually(timeout: .seconds(20)) { daemon.standardError.contains("circuit for merchant opened") })
        let early = try await harness.mockStats().requests
        let earlyTime = ContinuousClock.now
        // real sleep: 3 s of the daemon's open circuit, past MaxAge, counting its probes
        try await Task.sleep(for: .seconds(3))
        let late = try await harness.mockStats().requests
        let elapsed = ContinuousClock.now - earlyTime
        // In 3 s of open circuit with cool-downs of 200–500 ms: a probe at a time, no storm —
        // at most one request per shortest cool-down of the time that really passed (a loaded
        // machine oversleeps), where a storm would send hundreds.
        let probesAllowed = Int((elapsed / .milliseconds(200)).rounded(.up))
        #expect(late - early <= probesAllowed, "requests during the outage: \(late - early) in \(elapsed)")
        #expect(late - early >= 3)
        #expect(harness.counts()[.escalated] == nil)
        #expect(try harness.scalar("SELECT max(attempts) FROM orders") <= 1)
        // Only the attempts before the circuit opened were charged: at most the threshold plus
        // what was already in flight (2 + 2 - 1).
        #expect(try harness.scalar("SELECT count(*) FROM orders WHERE attempts > 0") <= 3)

        try await harness.configureMock(#"{"reset":true}"#)
        #expect(await harness.waitFor(.finished, count: 40, timeout: .seconds(30)), "\(harness.counts())")
        daemon.send(SIGTERM)
        #expect(await daemon.wait() == 0)
        #expect(daemon.standardError.contains("circuit for merchant opened"))
        #expect(daemon.standardError.contains("circuit for merchant closed"))
    }

    @Test("429 with Retry-After pauses the endpoint for that long")
    func rateLimited() async throws {
        let harness = Harness("429")
        try await harness.startMock(["--faults", #"{"status_rates":{"429":1.0},"retry_after":"3"}"#])
        harness.configure("""
            [Verifier]
            Kind=http
            URL=\(harness.base)/merchant/verify
            MaxInFlight=1
            MaxRate=infinity
            CircuitThreshold=100
            \(Self.quickRetry)
            """)
        harness.dropOrder("R1")
        let daemon = try harness.startDaemon()
        #expect(await eventually(timeout: .seconds(10)) { (try? await harness.mockStats().requests) ?? 0 >= 1 })
        try await harness.configureMock(#"{"reset":true}"#)
        #expect(await harness.waitFor(.finished, count: 1, timeout: .seconds(10)))
        daemon.send(SIGTERM)
        _ = await daemon.wait()
        #expect(daemon.standardError.contains("merchant answered 429; sending nothing there for 3s"))
        // Within the 3 s pause nothing more went, however short the backoff: the next request
        // started 3 s after the first at the earliest (measured by the daemon's own records, so
        // that a loaded machine only makes the gap longer).
        let starts = try harness.store().withConnection {
            try $0.query("SELECT started_at FROM attempts ORDER BY started_at") { $0.int64(0) }
        }
        #expect(starts.count >= 2, "\(starts)")
        if starts.count >= 2 { #expect(starts[1] - starts[0] >= 2_990, "\(starts[1] - starts[0]) ms between the 429 and the next request") }
    }

    @Test("[Delivery] URL= removed by a reload: verified orders waiting out a delivery backoff finish at once, as verified, with nothing sent")
    func deliveryRemoved() async throws {
        let harness = Harness("delivery-removed")
        try await harness.startMock(["--shared-secret", "s3cret", "--faults", #"{"outage":true,"path_prefix":"/deliver"}"#])
        harness.directory.write("shared-secret", "s3cret\n")
        func configuration(delivery: Bool) -> String {
            """
            [Verifier]
            Kind=apple
            URL=\(harness.base)/verifyReceipt
            BundleID=com.example.app
            SharedSecretFile=shared-secret
            MaxRate=infinity
            \(delivery ? "[Delivery]\nURL=\(harness.base)/deliver" : "")
            [Retry]
            InitialDelay=1h
            MaxDelay=1h
            Jitter=none
            """
        }
        harness.configure(configuration(delivery: true))
        harness.dropOrder("V1", receipt: appleReceipt("9100001"))
        harness.dropOrder("V2", receipt: appleReceipt("9100002"))
        let daemon = try harness.startDaemon()
        // Verified, one delivery attempt each refused (503); the next an hour away.
        #expect(await eventually(timeout: .seconds(20)) {
            harness.counts()[.verified] == 2 && ((try? harness.scalar("SELECT count(*) FROM attempts WHERE kind = 'deliver'")) ?? 0) == 2
        }, "\(harness.counts())")

        harness.configure(configuration(delivery: false))
        let reload = try await harness.ctl(["reload", "--wait"])
        #expect(reload.status == 0, "\(reload.error)")
        #expect(await harness.waitFor(.finished, count: 2, timeout: .seconds(10)), "\(harness.counts()); \(daemon.standardError.suffix(600))")
        daemon.send(SIGTERM)
        #expect(await daemon.wait() == 0)
        #expect(try harness.scalar("SELECT count(*) FROM orders WHERE finished_by = 'verifier' AND reason = 'no_delivery_url'") == 2)
        #expect(try harness.scalar("SELECT max(delivery_attempts) FROM orders") == 1)
        #expect(try await harness.mockStats().byEndpoint["delivery"] == 2, "a delivery was sent after the reload")
        #expect(daemon.standardError.contains("order V1 finished (verified; no delivery URL is configured, transaction 9100001)"), "\(daemon.standardError.suffix(800))")
    }

    func appleConfiguration(_ harness: Harness, allowSandbox: Bool, delivery: Bool = false, extra: String = "") -> String {
        harness.directory.write("shared-secret", "s3cret\n")
        return """
            [Verifier]
            Kind=apple
            URL=\(harness.base)/verifyReceipt
            SandboxURL=\(harness.base)/sandbox/verifyReceipt
            BundleID=com.example.app
            AllowSandbox=\(allowSandbox ? "yes" : "no")
            SharedSecretFile=shared-secret
            MaxRate=infinity
            \(delivery ? "[Delivery]\nURL=\(harness.base)/deliver" : "")
            \(Self.quickRetry)
            \(extra)
            """
    }

    @Test("a sandbox receipt is finished through the 21007 bounce only with AllowSandbox=yes")
    func sandboxBounce() async throws {
        for allowed in [true, false] {
            let harness = Harness("sandbox")
            try await harness.startMock(["--shared-secret", "s3cret"])
            harness.configure(appleConfiguration(harness, allowSandbox: allowed))
            harness.dropOrder("S1", receipt: appleReceipt("5000", environment: "Sandbox"))
            let daemon = try harness.startDaemon()
            let expected: OrderState = allowed ? .finished : .rejected
            #expect(await harness.waitFor(expected, count: 1, timeout: .seconds(10)), "\(harness.counts())")
            daemon.send(SIGTERM)
            _ = await daemon.wait()
            let order = try #require(try harness.store().order(id: "S1"))
            if allowed {
                #expect(order.environment == "Sandbox")
                #expect(order.verifiedTransactionID == "5000")
                #expect(try await harness.mockStats().byEndpoint == ["production": 1, "sandbox": 1])
            } else {
                #expect(order.reason == "sandbox_not_allowed")
                #expect(try await harness.mockStats().byEndpoint == ["production": 1])
            }
        }
    }

    @Test("a replayed receipt for a second order is escalated as duplicate_transaction, naming the first")
    func duplicateTransaction() async throws {
        let harness = Harness("duplicate")
        try await harness.startMock(["--shared-secret", "s3cret"])
        harness.configure(appleConfiguration(harness, allowSandbox: false))
        let receipt = appleReceipt("7777")
        harness.dropOrder("FIRST", receipt: receipt)
        let daemon = try harness.startDaemon()
        #expect(await harness.waitFor(.finished, count: 1))
        harness.dropOrder("REPLAY", receipt: receipt)
        #expect(await harness.waitFor(.escalated, count: 1))
        daemon.send(SIGTERM)
        _ = await daemon.wait()
        let replay = try #require(try harness.store().order(id: "REPLAY"))
        #expect(replay.reason == "duplicate_transaction")
        #expect(try harness.store().history(orderID: "REPLAY").last?.detail == "transaction 7777 is claimed by order FIRST")
        #expect(try harness.scalar("SELECT count(*) FROM claims") == 1)
        #expect(daemon.standardError.contains("order REPLAY escalated: duplicate_transaction: transaction 7777 is claimed by order FIRST"))
    }

    @Test("MaxAttempts escalates and runs the command with exactly the RECONCILE_* variables, never the receipt")
    func maxAttemptsRunsCommand() async throws {
        let harness = Harness("escalate")
        try await harness.startMock()
        let output = harness.directory.file("escalations.txt")
        let script = harness.directory.write("bin/page", "#!/bin/sh\nenv | sort >> \(output)\necho --- >> \(output)\n")
        chmod(script, 0o755)
        harness.configure("""
            [Verifier]
            Kind=http
            URL=\(harness.base)/merchant/verify
            MaxRate=infinity
            \(Self.quickRetry)
            MaxAttempts=3
            [Escalation]
            Command=bin/page --service reconciled
            CommandRate=100
            """)
        let receipt = MockReceipt(merchantAnswers: ["pending"])
        harness.dropOrder("M1", receipt: receipt)
        let daemon = try harness.startDaemon()
        #expect(await harness.waitFor(.escalated, count: 1))
        #expect(await eventually(timeout: .seconds(10)) { harness.directory.read("escalations.txt")?.contains("---") == true })
        daemon.send(SIGTERM)
        _ = await daemon.wait()
        let environment = try #require(harness.directory.read("escalations.txt"))
        let variables = environment.split(separator: "\n").filter { $0.hasPrefix("RECONCILE_") }.map(String.init)
        #expect(variables == [
            "RECONCILE_ATTEMPTS=3", "RECONCILE_ORDER_ID=M1", "RECONCILE_PRODUCT_ID=gems", "RECONCILE_REASON=max_attempts",
            "RECONCILE_STATE=escalated", "RECONCILE_TRANSACTION_ID=",
        ])
        #expect(!environment.contains(receipt.base64))
        #expect(!environment.contains("NOTIFY_SOCKET"))
        #expect(try await harness.mockStats().grantRequests["M1"] == 3)
        #expect(try await harness.mockStats().attemptHeaders["M1"] == ["1", "2", "3"])
    }

    @Test("SIGKILLs mid-run: one Idempotency-Key per order, no transaction claimed twice, one finished transition each")
    func killedMidRun() async throws {
        let harness = Harness("kills")
        try await harness.startMock(["--shared-secret", "s3cret", "--faults", #"{"latency_ms":15}"#])
        harness.configure(appleConfiguration(harness, allowSandbox: false, delivery: true, extra: "MaxAttempts=100"))
        let total = 300
        for index in 0..<total { harness.dropOrder("K\(index)", receipt: appleReceipt(String(900_000 + index))) }
        // Each daemon killed mid-run, keyed to its progress (not to time from its start, which a
        // loaded machine stretches): once the mock has seen 25 to 60 more requests.
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<4 {
            let seen = try await harness.mockStats().requests
            let target = seen + Int.random(in: 25...60, using: &generator)
            let daemon = try harness.startDaemon()
            let progressed = await eventually(timeout: .seconds(60), every: .milliseconds(5)) {
                ((try? await harness.mockStats().requests) ?? 0) >= target || !daemon.isRunning
            }
            #expect(progressed && daemon.isRunning, "the daemon made no progress to kill it in: \(daemon.standardError.suffix(600))")
            daemon.send(SIGKILL)
            _ = await daemon.wait()
        }
        let daemon = try await harness.startDaemonAndWait()
        #expect(await harness.waitFor(.finished, count: total, timeout: .seconds(60)), "\(harness.counts())")
        daemon.send(SIGTERM)
        let status = await daemon.wait()
        #expect(status == 0, "\(daemon.standardError.split(separator: "\n").suffix(5).joined(separator: "\n"))")
        let stats = try await harness.mockStats()
        #expect(stats.idempotencyMismatches == 0)
        #expect(Set(stats.deliveriesSucceeded.keys) == Set((0..<total).map { "K\($0)" }))
        #expect(try harness.scalar("SELECT count(*) FROM transitions WHERE to_state = 'finished'") == total)
        #expect(try harness.scalar("SELECT count(DISTINCT order_ref) FROM transitions WHERE to_state = 'finished'") == total)
        #expect(try harness.scalar("SELECT count(*) FROM claims") == total)
        #expect(try harness.scalar("SELECT count(DISTINCT order_ref) FROM claims") == total)
        #expect(try harness.scalar("SELECT count(*) FROM orders WHERE verified_transaction_id IS NULL") == 0)
        #expect(try harness.scalar("SELECT count(*) FROM orders WHERE finished_by = 'delivery'") == total)
    }
}

@Suite("End to end: configuration errors and expiry", .serialized)
struct ConfigurationErrorEndToEndTests {
    @Test("a wrong shared secret (21004) opens the circuit, is logged at err once per opening, and charges no order")
    func wrongSecret() async throws {
        let harness = Harness("21004")
        try await harness.startMock(["--shared-secret", "the-real-one"])
        harness.directory.write("shared-secret", "a-wrong-one\n")
        harness.configure("""
            [Verifier]
            Kind=apple
            URL=\(harness.base)/verifyReceipt
            BundleID=com.example.app
            SharedSecretFile=shared-secret
            MaxRate=infinity
            MaxInFlight=1
            CircuitCooldown=300ms
            CircuitMaxCooldown=300ms
            """)
        for index in 0..<5 { harness.dropOrder("W\(index)", receipt: appleReceipt("80\(index)")) }
        let started = ContinuousClock.now
        let daemon = try await harness.startDaemonAndWait()
        // Stopped after the third opening, however long a loaded machine takes to get there.
        let openedThrice = await eventually(timeout: .seconds(30)) {
            daemon.standardError.split(separator: "\n").filter { $0.contains("circuit for production") }.count >= 3
        }
        #expect(openedThrice, "\(daemon.standardError.suffix(1500))")
        daemon.send(SIGTERM)
        _ = await daemon.wait()
        // However long the run took on a loaded machine: at most one opening per cool-down.
        let cooldowns = Int((ContinuousClock.now - started) / .milliseconds(300))
        #expect(try harness.scalar("SELECT max(attempts) FROM orders") == 0)
        #expect(harness.counts() == [.pending: 5])
        let errors = daemon.standardError.split(separator: "\n").filter { $0.contains("circuit for production") && $0.contains(" err: ") }
        let openings = daemon.standardError.split(separator: "\n").filter { $0.contains("circuit for production") }.count
        #expect(errors.count == openings)
        #expect(openings >= 3 && openings <= cooldowns + 1, "openings: \(openings) in \(cooldowns) cool-downs")
        #expect(daemon.standardError.contains("apple_21004"))
        #expect(!daemon.standardError.contains("a-wrong-one"))
    }

    @Test("an empty shared secret stops the start with exit 78")
    func emptySecret() async throws {
        let harness = Harness("empty-secret")
        harness.directory.write("shared-secret", "\n")
        harness.configure("""
            [Verifier]
            Kind=apple
            URL=https://buy.itunes.apple.com/verifyReceipt
            BundleID=com.example.app
            SharedSecretFile=shared-secret
            """)
        let daemon = try harness.startDaemon()
        #expect(await daemon.wait() == 78)
        #expect(daemon.standardError.contains("[Verifier] SharedSecretFile=: \(harness.directory.file("shared-secret")) is empty"))
    }

    @Test("an order that never gets usable proof expires after MaxAge")
    func expiry() async throws {
        let harness = Harness("expiry")
        harness.configure("""
            [Verifier]
            Kind=http
            URL=http://127.0.0.1:9/merchant/verify
            [Retry]
            MaxAge=1s
            """)
        harness.drop("N1.json", OrderFixtures.orderJSON("N1", receipt: nil))
        let daemon = try await harness.startDaemonAndWait()
        #expect(await harness.waitFor(.expired, count: 1, timeout: .seconds(10)))
        daemon.send(SIGTERM)
        _ = await daemon.wait()
        #expect(daemon.standardError.contains("order N1 expired"))
    }
}
