import Foundation
import Glibc
import ReconcileCore
import ReconcileFoundation
import ReconcileSystem
import ReconcileMock
import Testing
import TestSupport
@testable import ReconcileStore
@testable import ReconcileSQLite

/// The built `reconcilectl` steering the built `reconciled` against the mock (issue 4's
/// "done when").
@Suite("End to end: operating with reconcilectl", .serialized)
struct OperatorEndToEndTests {
    /// Fast retries, as in the verification tests.
    static let retry = VerificationEndToEndTests.quickRetry

    func merchant(_ harness: Harness, extra: String = "") -> String {
        """
        [Verifier]
        Kind=http
        URL=\(harness.base)/merchant/verify
        MaxRate=infinity
        \(extra)
        """
    }

    /// A merchant verifier on a loopback port nothing listens on (every attempt is
    /// connection_refused), with these circuit settings and fast retries.
    func configureDeadVerifier(_ harness: Harness, _ circuit: String) throws {
        harness.configure(
            """
            [Verifier]
            Kind=http
            URL=http://127.0.0.1:\(try LoopbackPort.free())/merchant/verify
            MaxRate=infinity
            \(circuit)
            \(Self.retry)
            """)
    }

    @Test("a dead verifier whose circuit has not opened: one warning a minute with the reason and the next attempt; status says it is failing")
    func failingBeforeTheCircuitOpens() async throws {
        let harness = Harness("op-failing")
        try configureDeadVerifier(harness, "CircuitThreshold=1000")
        harness.dropOrder("D1")
        let daemon = try await harness.startDaemonAndWait(logLevel: "info")
        var text = ""
        #expect(await eventually(timeout: .seconds(20)) {
            text = (try? await harness.ctl(["status"]).output) ?? ""
            return text.contains("attempts in a row")
        }, "\(text)")
        #expect(text.contains("merchant closed, failing: "), "\(text)")
        #expect(text.contains("attempts in a row (connection_refused"), "\(text)")
        let json = try await harness.ctl(["status", "--json"])
        #expect(json.output.contains(#""consecutive_failures":"#), "\(json.output)")

        let warnings = daemon.standardError.split(separator: "\n").filter { $0.contains("at merchant failed") }
        #expect(warnings.count == 1, "one warning a minute: \(warnings)")
        #expect(warnings.first?.contains("order D1: attempt 1 at merchant failed: connection_refused") == true, "\(warnings)")
        #expect(warnings.first?.contains("; next attempt at 20") == true, "\(warnings)")
        daemon.send(SIGTERM)
        #expect(await daemon.wait() == 0)
    }

    @Test("shape from the built reconcilectl on the daemon's store: the orders still in play, new ones in the first column, by state and by endpoint")
    func shapeOfTheQueue() async throws {
        let harness = Harness("op-shape")
        try await harness.startMock()
        harness.configure(merchant(harness))
        harness.dropOrder("F1")
        for id in ["P1", "P2"] { harness.dropOrder(id, receipt: MockReceipt(merchantAnswers: Array(repeating: "pending", count: 20))) }
        let daemon = try await harness.startDaemonAndWait()
        #expect(await harness.waitFor(.finished, count: 1))
        #expect(await eventually { harness.counts()[.pending] == 2 }, "\(harness.counts())")

        let shape = try await harness.ctl(["shape"])
        #expect(shape.status == 0, "\(shape.error)")
        let rows = shape.output.split(separator: "\n").map { $0.split(separator: " ").map(String.init) }
        #expect(rows.first?.suffix(11) == ["T", "5", "10", "20", "40", "80", "160", "320", "640", "1280", "1280+"], "\(shape.output)")
        #expect(rows.dropFirst().first == ["TOTAL", "2", "2", "0", "0", "0", "0", "0", "0", "0", "0", "0"], "the finished order is not in play: \(shape.output)")
        #expect(rows.dropFirst(2).first == ["pending", "2", "2", "0", "0", "0", "0", "0", "0", "0", "0", "0"], "\(shape.output)")
        let byEndpoint = try await harness.ctl(["shape", "--by", "endpoint"])
        #expect(byEndpoint.output.split(separator: "\n").dropFirst(2).first?.hasPrefix("merchant") == true, "\(byEndpoint.output)")
        daemon.send(SIGTERM)
        #expect(await daemon.wait() == 0)
    }

    @Test("circuit: shows the circuits; --probe-now sends the probe at once, --close lets requests go, each logged with the operator")
    func circuitVerb() async throws {
        let harness = Harness("op-circuit-verb")
        try configureDeadVerifier(harness, "CircuitThreshold=1\nCircuitCooldown=10min\nCircuitMaxCooldown=10min")
        harness.dropOrder("C1")
        let daemon = try await harness.startDaemonAndWait(logLevel: "info")
        func openings() async -> Int64? {
            guard let answer = try? await harness.ctl(["circuit", "merchant", "--json"]),
                case .object(let object)? = try? JSONParser().parse(Array(answer.output.utf8)),
                let circuit = object["circuits"]?.arrayValue?.first?.objectValue
            else { return nil }
            return circuit["openings"]?.int64Value
        }
        #expect(await eventually(timeout: .seconds(20)) { await openings() == 1 })
        let shown = try await harness.ctl(["circuit"])
        #expect(shown.status == 0)
        let row = shown.output.split(separator: "\n").dropFirst().first.map { $0.split(separator: " ").map(String.init) } ?? []
        #expect(shown.output.hasPrefix("ENDPOINT  STATE  FAILS  OPENED  PROBE  REASON\n"), "\(shown.output)")
        #expect(row == ["merchant", "open", "1", "1", "in", "9m", "connection_refused"] || row == ["merchant", "open", "1", "1", "in", "10m", "connection_refused"], "\(shown.output)")

        // The cool-down has ten minutes to go: --probe-now sends the probe at once (it fails: the
        // endpoint is still down, and the circuit opens again).
        let probed = try await harness.ctl(["circuit", "merchant", "--probe-now"])
        #expect(probed.output == "merchant: the cool-down is over; the probe goes now\n", "\(probed.output) \(probed.error)")
        #expect(await eventually(timeout: .seconds(10)) { await openings() == 2 }, "the probe went and failed")

        let closed = try await harness.ctl(["circuit", "merchant", "--close"])
        #expect(closed.output == "merchant: closed; requests go at once\n", "\(closed.output) \(closed.error)")
        let reopened = await eventually(timeout: .seconds(10)) { await openings() == 3 }
        let shownOrder = (try? await harness.ctl(["show", "C1"]).output) ?? ""
        #expect(reopened, "an attempt went at once, failed, and opened it: \(shownOrder)")
        #expect(daemon.standardError.contains("operator:root closed the merchant circuit; orders it had parked, due now: 1 (it was open)"), "\(daemon.standardError.suffix(1_000))")

        let unknown = try await harness.ctl(["circuit", "googleplay", "--close"])
        #expect(unknown.status == 1)
        #expect(unknown.error == "Error: this daemon does not talk to googleplay; its endpoints: merchant\n", "\(unknown.error)")
        let wrong = try await harness.ctl(["circuit", "merchnat"])
        #expect(wrong.status == 64)
        #expect(wrong.error.hasPrefix("Error: 'merchnat' is not an endpoint; use one of production, sandbox, merchant"), "\(wrong.error)")
        daemon.send(SIGTERM)
        #expect(await daemon.wait() == 0)
        let stopped = try await harness.ctl(["circuit"])
        #expect(stopped.status == 1)
        #expect(stopped.error.contains("circuits live in the running daemon and start closed"), "\(stopped.error)")
    }

    @Test("a dead verifier: status names the open circuit, why and until when; --watch redraws it on a terminal")
    func openCircuitAndWatch() async throws {
        let harness = Harness("op-circuit")
        try configureDeadVerifier(harness, "CircuitThreshold=1\nCircuitCooldown=10min\nCircuitMaxCooldown=10min")
        harness.dropOrder("D1")
        let daemon = try await harness.startDaemonAndWait()
        var text = ""
        #expect(await eventually(timeout: .seconds(20)) {
            text = (try? await harness.ctl(["status"]).output) ?? ""
            return text.contains("merchant open")
        }, "\(text)")
        #expect(text.contains("merchant open (connection_refused) until "), "\(text)")
        #expect(text.contains("Z (in 9m)") || text.contains("Z (in 10m)"), "\(text)")

        let piped = try await harness.ctl(["status", "--watch"])
        #expect(piped.status == 64)
        #expect(piped.error.hasPrefix("Error: '--watch' redraws a terminal, and standard output is not one"), "\(piped.error)")

        // Under script(1) for a pseudo-terminal, stopped after about a second: several whole frames.
        let command = "\(ChildProcess.executable("reconcilectl")) --config \(harness.configPath) status --watch --interval 200ms"
        let watched = try await ToolProcess.onTerminal(command, interruptAfter: 1.2).output
        let frames = watched.components(separatedBy: "\u{1B}[H\u{1B}[2J").dropFirst()
        #expect(frames.count >= 2, "\(watched.debugDescription.prefix(800))")
        #expect(frames.allSatisfy { $0.hasPrefix("Every 200ms: reconcilectl status") && $0.contains("merchant open") } || frames.count < 2)
        daemon.send(SIGTERM)
        #expect(await daemon.wait() == 0)
    }

    @Test("an order escalated after MaxAttempts is attempted at once after `retry` and finished")
    func retryEscalated() async throws {
        let harness = Harness("op-retry")
        try await harness.startMock()
        harness.configure(merchant(harness) + "\n" + Self.retry + "\nMaxAttempts=2")
        // Two "pending" answers use up MaxAttempts; the third request is verified.
        harness.dropOrder("E1", receipt: MockReceipt(merchantAnswers: ["pending", "pending", "verified"]))
        let daemon = try await harness.startDaemonAndWait()
        #expect(await harness.waitFor(.escalated, count: 1))
        #expect(try await harness.mockStats().grantRequests["E1"] == 2)

        let before = try await harness.ctl(["show", "E1"])
        #expect(before.status == 0)
        #expect(before.output.contains("max_attempts"))

        let retried = try await harness.ctl(["retry", "E1", "--note", "customer wrote in"])
        let answered = ContinuousClock.now
        #expect(retried.status == 0, "\(retried.error)")
        #expect(retried.output == "E1: escalated → pending (due now)\n")
        #expect(retried.error.isEmpty)
        // At once: the daemon wakes its scheduler when it applies the action. Tens of
        // milliseconds on an idle machine; the bound leaves room for a loaded CI machine running
        // other end-to-end suites beside this one.
        #expect(await eventually(timeout: .seconds(3), every: .milliseconds(10)) { harness.counts()[.finished] == 1 }, "\(harness.counts())")
        let took = ContinuousClock.now - answered
        #expect(took < TestTime.scaled(.seconds(3)), "without the wake the order would wait for its next due time")
        #expect(try await harness.mockStats().grantRequests["E1"] == 3)

        let history = try harness.store().history(orderID: "E1")
        let retry = try #require(history.first { $0.reason == "retry" })
        #expect(retry.actor == .operator("root"))
        #expect(retry.detail?.contains("customer wrote in") == true)
        #expect(history.last?.to == .finished)
        daemon.send(SIGTERM)
        #expect(await daemon.wait() == 0)
        #expect(daemon.standardError.contains("operator:root retry order E1: customer wrote in"))
        print("retry → finished took \(took)")
    }

    @Test("hold keeps an order from being attempted until release, with or without the daemon")
    func holdAndRelease() async throws {
        let harness = Harness("op-hold")
        try await harness.startMock()
        // A "pending" answer puts each order an hour out: time to act before its next attempt,
        // however slow the machine (release makes them due at once).
        harness.configure(merchant(harness) + "\n[Retry]\nInitialDelay=1h\nJitter=none")
        harness.dropOrder("H1", receipt: MockReceipt(merchantAnswers: ["pending", "verified"]))
        harness.dropOrder("H2", receipt: MockReceipt(merchantAnswers: ["pending", "verified"]))
        var daemon = try await harness.startDaemonAndWait()
        #expect(await harness.waitFor(.pending, count: 2))
        #expect(await eventually { (try? await harness.mockStats().requests) == 2 })

        // With the daemon: a socket request.
        let live = try await harness.ctl(["hold", "H1", "--note", "fraud check"])
        #expect(live.status == 0)
        #expect(live.output == "H1: pending → held\n")
        #expect(live.error.isEmpty)

        // Without it: the store, under the lock, and a word that the daemon picks it up.
        daemon.send(SIGTERM)
        #expect(await daemon.wait() == 0)
        let offline = try await harness.ctl(["hold", "H2", "--note", "fraud check"])
        #expect(offline.status == 0)
        #expect(offline.output == "H2: pending → held\n")
        #expect(offline.error == "reconciled is not running; the change is recorded in the store and picked up at the next start.\n")
        #expect(harness.counts() == [.held: 2])
        for id in ["H1", "H2"] {
            let held = try #require(try harness.store().history(orderID: id).last)
            #expect(held.actor == .operator("root"))
            #expect(held.detail == "fraud check")
        }

        // Made due now behind the operator's back: held orders are still not attempted.
        daemon = try await harness.startDaemonAndWait()
        // A sentinel order dropped after the start is verified and finished: the turns that
        // took it would have taken the held orders too, had they been due.
        harness.dropOrder("S1")
        #expect(await harness.waitFor(.finished, count: 1), "\(harness.counts())")
        #expect(try await harness.mockStats().requests == 3, "a held order was attempted")
        let status = try await harness.ctl(["status", "--json"])
        #expect(status.status == 0)
        #expect(status.output.contains(#""held":2"#), "\(status.output)")

        let released = try await harness.ctl(["release", "H1", "H2"])
        #expect(released.status == 0, "\(released.error)")
        #expect(released.output == "H1: held → pending (due now)\nH2: held → pending (due now)\n2 of 2 orders changed\n")
        #expect(await harness.waitFor(.finished, count: 3, timeout: .seconds(5)), "\(harness.counts())")
        #expect(try await harness.mockStats().requests == 5)
        daemon.send(SIGTERM)
        #expect(await daemon.wait() == 0)
    }

    @Test("resolve and cancel record the operator and the note, in the store, in `show` and in the log")
    func resolveAndCancel() async throws {
        let harness = Harness("op-resolve")
        try await harness.startMock()
        harness.configure(merchant(harness) + "\n" + Self.retry + "\nMaxAttempts=1")
        harness.dropOrder("R1", receipt: MockReceipt(merchantAnswers: ["pending"]))
        harness.dropOrder("R2", receipt: MockReceipt(merchantAnswers: ["pending"]))
        let daemon = try await harness.startDaemonAndWait()
        #expect(await harness.waitFor(.escalated, count: 2))

        let resolved = try await harness.ctl(["resolve", "R1", "--note", "granted by hand, ticket 4411", "--transaction-id", "1000000123"])
        #expect(resolved.status == 0, "\(resolved.error)")
        #expect(resolved.output == "R1: escalated → finished\n")
        let cancelled = try await harness.ctl(["cancel", "R2", "--note", "customer refunded"])
        #expect(cancelled.output == "R2: escalated → cancelled\n")
        let again = try await harness.ctl(["cancel", "R2", "--note", "twice"])
        #expect(again.status == 1)
        #expect(again.error == "R2: cannot cancel: the order is cancelled (cancelled by an operator)\n")

        let store = try harness.store()
        let r1 = try #require(try store.order(id: "R1"))
        #expect(r1.finishedBy == .operator)
        #expect(r1.verifiedTransactionID == "1000000123")
        #expect(try store.history(orderID: "R1").last?.actor == .operator("root"))
        #expect(try store.history(orderID: "R1").last?.detail == "transaction 1000000123 claimed; granted by hand, ticket 4411")
        #expect(try store.history(orderID: "R2").last?.detail == "customer refunded")

        let shown = try await harness.ctl(["show", "R2", "--json"])
        guard case .object(let order)? = try? JSONParser().parse(Array(shown.output.utf8)) else {
            Issue.record("show --json is not JSON: \(shown.output)")
            return
        }
        #expect(order["version"]?.int64Value == 1)
        let last = try #require(order["history"]?.arrayValue?.last?.objectValue)
        #expect(last["actor"]?.stringValue == "operator:root")
        #expect(last["to"]?.stringValue == "cancelled")
        #expect(last["detail"]?.stringValue == "customer refunded")
        daemon.send(SIGTERM)
        #expect(await daemon.wait() == 0)
        #expect(daemon.standardError.contains("operator:root cancel order R2: customer refunded"))
    }

    @Test("reload --wait: a broken file fails and the daemon keeps its configuration; a good one is active on exit 0")
    func reload() async throws {
        let harness = Harness("op-reload")
        try await harness.startMock()
        harness.configure(merchant(harness, extra: "MaxInFlight=4"))
        let good = try #require(harness.directory.read("reconciled.conf"))
        let daemon = try await harness.startDaemonAndWait()
        #expect(try await harness.generation() == 1)

        // A bad line: the reason, non-zero, and the daemon is not disturbed.
        harness.directory.write("reconciled.conf", good.replacingOccurrences(of: "MaxInFlight=4", with: "MaxInFlight=lots"))
        let broken = try await harness.ctl(["reload", "--wait"])
        #expect(broken.status == 78)
        #expect(broken.error.contains("reconciled.conf:"))
        #expect(broken.error.contains("MaxInFlight"))
        // The same file by SIGHUP: refused in the log, nothing else changes.
        daemon.send(SIGHUP)
        #expect(await eventually(timeout: .seconds(5)) { daemon.standardError.contains("reload refused:") })
        #expect(daemon.isRunning)
        #expect(try await harness.generation() == 1)

        // A restart-only key: the daemon says which, and keeps the old configuration.
        harness.directory.write("reconciled.conf", good.replacingOccurrences(of: "Database=state/orders.db", with: "Database=state/other.db"))
        let restartOnly = try await harness.ctl(["reload", "--wait"])
        #expect(restartOnly.status == 1)
        #expect(restartOnly.error.contains("[State] Database= changed; restart the daemon to apply"), "\(restartOnly.error)")
        #expect(try await harness.generation() == 1)
        #expect(!FileManager.default.fileExists(atPath: harness.directory.file("state/other.db")))

        // A good change is active when reload --wait returns.
        harness.directory.write("reconciled.conf", good.replacingOccurrences(of: "MaxInFlight=4", with: "MaxInFlight=8"))
        let fine = try await harness.ctl(["reload", "--wait"])
        #expect(fine.status == 0, "\(fine.error)")
        #expect(fine.output == "reloaded: configuration generation 2 is active\n")
        #expect(try await harness.generation() == 2)
        // SIGHUP does the same.
        daemon.send(SIGHUP)
        #expect(await eventually(timeout: .seconds(5)) { (try? await harness.generation()) == 3 })
        daemon.send(SIGTERM)
        #expect(await daemon.wait() == 0)
    }

    @Test("status matches the store, and a stopped daemon is reported with exit 3")
    func statusMatchesStore() async throws {
        let harness = Harness("op-status")
        try await harness.startMock()
        harness.configure(merchant(harness) + "\n" + Self.retry + "\nMaxAttempts=1")
        for index in 0..<5 { harness.dropOrder("F\(index)") }
        for index in 0..<3 { harness.dropOrder("X\(index)", receipt: MockReceipt(merchantAnswers: ["pending"])) }
        harness.dropOrder("J1", receipt: MockReceipt(merchantAnswers: ["rejected"]))
        let daemon = try await harness.startDaemonAndWait()
        #expect(await harness.waitFor(.finished, count: 5))
        #expect(await harness.waitFor(.escalated, count: 3))
        #expect(await harness.waitFor(.rejected, count: 1))

        let status = try await harness.ctl(["status", "--json"])
        #expect(status.status == 0)
        guard case .object(let object)? = try? JSONParser().parse(Array(status.output.utf8)) else {
            Issue.record("status --json is not JSON: \(status.output)")
            return
        }
        let counts = try #require(object["counts"]?.objectValue)
        let stored = harness.counts()
        #expect(Dictionary(uniqueKeysWithValues: counts.members.map { ($0.key, Int($0.value.int64Value ?? -1)) })
            == Dictionary(uniqueKeysWithValues: stored.map { ($0.key.rawValue, $0.value) }))
        #expect(object["daemon"]?.objectValue?["pid"]?.int64Value == Int64(daemon.pid))
        #expect(object["daemon"]?.objectValue?["in_flight"]?.int64Value == 0)
        let text = try await harness.ctl(["status"])
        #expect(text.output.contains("reconciled is running"))
        #expect(text.output.contains("rejected 1 · finished 5 · escalated 3") || text.output.contains("finished 5"), "\(text.output)")

        daemon.send(SIGTERM)
        #expect(await daemon.wait() == 0)
        let stopped = try await harness.ctl(["status"])
        #expect(stopped.status == 3)
        #expect(stopped.output.contains("reconciled is not running"))
        #expect(stopped.output.contains("finished 5"))
    }

    @Test("the socket refuses what it must: garbage and oversized requests, and writes from an unprivileged user")
    func socketRefusals() async throws {
        let harness = Harness("op-socket")
        try await harness.startMock()
        harness.configure(merchant(harness) + "\n" + Self.retry + "\nMaxAttempts=1")
        harness.dropOrder("P1", receipt: MockReceipt(merchantAnswers: ["pending"]))
        let daemon = try await harness.startDaemonAndWait()
        #expect(await harness.waitFor(.escalated, count: 1))
        let socket = harness.directory.file("run/control.sock")

        let answers = try await offPool {
            [
                try? ControlSocketClient.request("\u{1}\u{2}garbage", path: socket),
                try? ControlSocketClient.request(String(repeating: "x", count: 100_000), path: socket),
                // Root may name the operator behind sudo, but only as a plain user name.
                try? ControlSocketClient.request(#"{"v":1,"op":"hold","orders":["P1"],"as":"root; rm -rf /"}"#, path: socket),
                try? ControlSocketClient.request(#"{"v":1,"op":"release","orders":["P1"],"as":"alice"}"#, path: socket),
            ]
        }
        #expect(answers[0]?.hasPrefix(#"{"v":1,"ok":false,"error":"not JSON: "#) == true, "\(answers[0] ?? "nil")")
        #expect(answers[1] == #"{"v":1,"ok":false,"error":"request larger than 64 KiB"}"#)
        #expect(answers[2]?.contains(#""ok":true"#) == true)
        #expect(answers[3]?.contains(#""ok":true"#) == true)
        let actors = try harness.store().history(orderID: "P1").suffix(2).map(\.actor)
        #expect(actors == [.operator("root"), .operator("alice")])
        #expect(daemon.isRunning)
        #expect(try await harness.ctl(["status"]).status == 0)

        guard geteuid() == 0 else { return }  // making a user needs root
        let user = "reconcile-e2e"
        _ = runTool("/usr/sbin/useradd", ["--system", "--no-create-home", "--shell", "/usr/sbin/nologin", user])
        defer { _ = runTool("/usr/sbin/userdel", [user]) }
        let id = try #require(getpwnam(user)?.pointee.pw_uid)
        let asUser = ["/usr/bin/setpriv", "--reuid=\(id)", "--regid=\(id)", "--clear-groups", "--"]

        // The socket's mode keeps the user out.
        let outside = try await harness.ctl(["hold", "P1"], wrapper: asUser)
        #expect(outside.status == 1)
        #expect(outside.error.contains("permission denied on the file \(socket) (mode 0660"), "\(outside.error)")

        // Let the user in at the file level: the daemon still refuses writes by credentials.
        chmod(socket, 0o666)
        let write = try await harness.ctl(["hold", "P1", "--note", "not mine"], wrapper: asUser)
        #expect(write.status == 1)
        #expect(write.error.contains("permission denied: hold needs root or membership in the daemon's group (you are \(user))"), "\(write.error)")
        let read = try await harness.ctl(["status"], wrapper: asUser)
        #expect(read.status == 0, "\(read.error)")
        #expect(harness.counts() == [.escalated: 1])
        daemon.send(SIGTERM)
        #expect(await daemon.wait() == 0)
        #expect(daemon.standardError.contains("control: refused hold from uid \(id) (\(user))"))
    }

    @Test("submit (a file and standard input), list and backup, while the daemon runs")
    func submitListBackup() async throws {
        let harness = Harness("op-submit")
        try await harness.startMock()
        harness.configure(merchant(harness))
        let daemon = try await harness.startDaemonAndWait()

        let file = harness.directory.write("order.json", OrderFixtures.orderJSON("S1", product: "gems.10"))
        let submitted = try await harness.ctl(["submit", file])
        #expect(submitted.status == 0, "\(submitted.error)")
        #expect(submitted.output.hasPrefix("submitted order S1 as \(harness.directory.file("spool/incoming/order-S1."))"))
        let piped = harness.directory.write("piped.json", OrderFixtures.orderJSON("S2", product: "gems.10"))
        let fromStandardInput = try await harness.ctl(["submit", "-"], standardInput: piped)
        #expect(fromStandardInput.status == 0, "\(fromStandardInput.error)")
        let bad = harness.directory.write("bad.json", #"{"order_id":"S3","product_id":"gems","receipt":"%%%"}"#)
        let refused = try await harness.ctl(["submit", bad])
        #expect(refused.status == 1)
        #expect(refused.error.hasPrefix("Error: \(bad): "))
        #expect(refused.error.hasSuffix("; nothing was submitted\n"))
        #expect(await harness.waitFor(.finished, count: 2))
        #expect(harness.directory.list("spool/incoming").isEmpty)
        #expect(harness.directory.list("spool/tmp").isEmpty)

        let listed = try await harness.ctl(["list", "--state", "finished", "--product", "gems.10", "--json"])
        guard case .object(let object)? = try? JSONParser().parse(Array(listed.output.utf8)) else {
            Issue.record("list --json is not JSON: \(listed.output)")
            return
        }
        #expect(object["version"]?.int64Value == 1)
        #expect(Set(object["orders"]?.arrayValue?.compactMap { $0.objectValue?["order_id"]?.stringValue } ?? []) == ["S1", "S2"])

        let copy = harness.directory.file("backup.db")
        let backup = try await harness.ctl(["backup", copy])
        #expect(backup.status == 0, "\(backup.error)")
        #expect(try SQLiteOrderStore(path: copy, mode: .readOnly).countsByState() == [.finished: 2])
        daemon.send(SIGTERM)
        #expect(await daemon.wait() == 0)
    }

    @Test("the built binary: help on stdout, usage errors on stderr with 64, $RECONCILE_CONFIG, 78 for a bad file")
    func binaryConventions() async throws {
        let harness = Harness("op-binary")
        harness.configure("[Verifier]\nKind=http\nURL=http://127.0.0.1:9/merchant/verify")
        let help = try await ChildProcess.run("reconcilectl", ["help", "retry"], directory: harness.directory)
        #expect(help.status == 0)
        #expect(help.output.hasPrefix("OVERVIEW: Make orders due now, granting at least one more attempt.\n"))
        #expect(help.error.isEmpty)
        let usage = try await ChildProcess.run("reconcilectl", ["lst"], directory: harness.directory)
        #expect(usage.status == 64)
        #expect(usage.output.isEmpty)
        #expect(usage.error.hasPrefix("Error: Unknown subcommand 'lst'; did you mean 'list'?\n"))
        // The configuration from the environment: an empty store, and no daemon (exit 3).
        let status = try await ChildProcess.run(
            "reconcilectl", ["status"], environment: ["RECONCILE_CONFIG": harness.configPath], directory: harness.directory)
        #expect(status.status == 3, "\(status.error)")
        #expect(status.output.hasPrefix("reconciled is not running"))
        harness.directory.write("reconciled.conf", "[Verifier]\nKind=http\nURL=ftp://example\n")
        let broken = try await harness.ctl(["list"])
        #expect(broken.status == 78)
        #expect(broken.error.contains("reconciled.conf:3: [Verifier] URL="), "\(broken.error)")
    }
}
