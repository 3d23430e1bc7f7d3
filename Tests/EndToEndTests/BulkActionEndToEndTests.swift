import Foundation
import Glibc
import ReconcileCore
import Testing
import TestSupport
@testable import ReconcileStore
@testable import ReconcileSQLite

/// Operator actions on many orders (issue 13): answered with counts, applied in batches that
/// keep the daemon serving, one summary line in the journal, and the truth when a stop cuts
/// them short.
@Suite("End to end: bulk operator actions", .serialized)
struct BulkActionEndToEndTests {
    /// Seeds `count` escalated orders into the harness's store (no daemon running).
    static func seedEscalated(_ harness: Harness, count: Int) throws {
        try FileManager.default.createDirectory(atPath: harness.directory.file("state"), withIntermediateDirectories: true)
        let store = try SQLiteOrderStore(path: harness.directory.file("state/orders.db"), mode: .owner)
        defer { store.close() }
        let parser = OrderFileParser()
        var start = 0
        while start < count {
            let end = min(start + 5_000, count)
            let batch = try (start..<end).map { index -> IngestCandidate in
                let text = "{\"order_id\":\"E\(index)\",\"product_id\":\"gems\",\"receipt\":\"QUJD\"}"
                return IngestCandidate(submission: try parser.parse(Array(text.utf8)), raw: Array(text.utf8), contentHash: text, fileName: "seed")
            }
            _ = try store.ingest(batch, verifierKind: .http, now: Date().addingTimeInterval(-3600))
            start = end
        }
        try store.write { try $0.execute("UPDATE orders SET state = 'escalated', reason = 'max_attempts', next_attempt_at = NULL") }
    }

    /// A merchant the retried orders trickle to (one request a second), so that what the
    /// journal shows is the bulk action's own lines.
    static func slowMerchant(_ harness: Harness) -> String {
        "[Verifier]\nKind=http\nURL=\(harness.base)/merchant/verify\nMaxRate=1\nBurst=1\n"
    }

    @Test("ids from standard input ('-'), in requests of 250: counts and the first of each kind; progress only on a terminal")
    func standardInput() async throws {
        let harness = Harness("bulk-stdin")
        try await harness.startMock()
        harness.configure(Self.slowMerchant(harness))
        try Self.seedEscalated(harness, count: 600)
        let daemon = try await harness.startDaemonAndWait(logLevel: "info")
        let ids = harness.directory.write("ids.txt", (0..<600).map { "E\($0)\n" }.joined())
        let withUnknown = harness.directory.write("with-unknown.txt", (0..<600).map { "E\($0)\n" }.joined() + "\n  NOPE  \n")

        // Not a terminal: the result only.
        let held = try await harness.ctl(["hold", "-", "--note", "audit"], standardInput: withUnknown)
        #expect(held.status == 1, "one id is unknown")
        #expect(held.output.hasPrefix("E0: escalated → held\n"))
        #expect(held.output.hasSuffix("… and 590 more changed\n600 of 601 orders changed, 1 not found\n"), "\(held.output.suffix(200))")
        #expect(held.error == "NOPE: no such order\n", "no progress without a terminal: \(held.error)")
        #expect(harness.counts()[.held] == 600)

        // A bad line changes nothing and names the line.
        let bad = try await harness.ctl(["release", "-"], standardInput: harness.directory.write("bad.txt", "E1\nE 2\n"))
        #expect(bad.status == 64)
        #expect(bad.error.hasPrefix("Error: standard input, line 2: 'E 2' is not an order id"), "\(bad.error)")
        #expect(harness.counts()[.held] == 600)

        // On a terminal (script(1) gives reconcilectl a pseudo-terminal): done/total, rate, and
        // the line erased at the end.
        let command = [ChildProcess.executable("reconcilectl"), "--config", harness.configPath, "release", "-", "<", ids]
            .joined(separator: " ")
        let terminal = try await ToolProcess.onTerminal(command)
        #expect(terminal.status == 0, "\(terminal.output)")
        #expect(terminal.output.contains("\r\u{1B}[Krelease: 600 of 600 (100%)"), "\(terminal.output.debugDescription.prefix(600))")
        #expect(terminal.output.contains("600 of 600 orders changed"))
        #expect(harness.counts()[.held] == nil, "\(harness.counts())")

        // cancel takes many orders too, through the daemon.
        let cancelled = try await harness.ctl(["cancel", "-", "--note", "refunded in bulk", "--json"], standardInput: ids)
        #expect(cancelled.status == 0, "\(cancelled.error)")
        #expect(cancelled.output.contains(#""changed":600"#), "\(cancelled.output.prefix(300))")
        #expect(harness.counts()[.cancelled] == 600, "\(harness.counts())")
        daemon.send(SIGTERM)
        #expect(await daemon.wait() == 0)
    }

    @Test("retry --state on 20,000 orders: answered with counts, the daemon serving status meanwhile, one summary line, within the journal budget")
    func bulkRetry() async throws {
        let harness = Harness("bulk-retry")
        try await harness.startMock()
        harness.configure(Self.slowMerchant(harness))
        try Self.seedEscalated(harness, count: 20_000)
        let daemon = try await harness.startDaemonAndWait(logLevel: "info")
        let linesBefore = daemon.standardError.split(separator: "\n").count

        let began = ContinuousClock.now
        let retry = try ChildProcess(
            "reconcilectl", arguments: ["--config", harness.configPath, "retry", "--state", "escalated", "--note", "outage over"],
            directory: harness.directory)
        // Other clients are served while the batches run: a status asked meanwhile is answered
        // before the retry's answer. Asked straight on the socket: starting a reconcilectl for
        // each would add seconds on a loaded machine (a CI run once spent the whole 4 s bulk
        // action starting the first one), and it is the daemon's answer that is measured.
        var slowestStatus = Duration.zero
        var statuses = 0
        var answeredMeanwhile = 0
        while retry.isRunning {
            slowestStatus = max(slowestStatus, try await harness.statusAnswerTime())
            statuses += 1
            if retry.isRunning { answeredMeanwhile += 1 }
        }
        let exit = await retry.wait()
        let took = ContinuousClock.now - began
        #expect(exit == 0, "\(retry.standardError)")
        let output = retry.standardOutput
        #expect(output.hasSuffix("… and 19,900 more changed\n20,000 of 20,000 escalated orders changed\n"), "\(output.suffix(300))")
        #expect(output.split(separator: "\n").count == 102)
        #expect(output.hasPrefix("E0: escalated → pending (due now)\n"))
        #expect(retry.standardError.isEmpty, "\(retry.standardError)")
        #expect(answeredMeanwhile > 0 || took < .seconds(2), "no status answered during the \(took) of the bulk action")
        #expect(slowestStatus < .seconds(20), "status took \(slowestStatus) during the bulk action")
        #expect(harness.counts()[.escalated] == nil, "\(harness.counts())")

        // The journal budget: at most 2,000 lines in the 10 s that follow the request.
        // real sleep: the budget is lines per 10 s of the daemon's real time
        try await Task.sleep(until: began + .seconds(10))
        let lines = daemon.standardError.split(separator: "\n").dropFirst(linesBefore)
        #expect(lines.count <= 2_000, "\(lines.count) lines in 10 s")
        let summary = lines.filter { $0.contains("operator:root retry on 20000 escalated orders: 20000 changed: outage over") }
        #expect(summary.count == 1, "\(lines.prefix(5))")
        #expect(summary.first?.contains("COUNT=20000") == true)
        print("bulk retry of 20,000 orders took \(took); \(statuses) status requests meanwhile, the slowest \(slowestStatus); \(lines.count) log lines in 10 s")
        daemon.send(SIGTERM)
        #expect(await daemon.wait() == 0)
    }

    @Test("a stop in the middle of retry --state: the answer says how many were changed before it and how many were not reached")
    func bulkRetryInterrupted() async throws {
        let harness = Harness("bulk-stop")
        try await harness.startMock()
        harness.configure(Self.slowMerchant(harness))
        try Self.seedEscalated(harness, count: 60_000)
        let daemon = try await harness.startDaemonAndWait(logLevel: "debug")
        let retry = try ChildProcess(
            "reconcilectl", arguments: ["--config", harness.configPath, "retry", "--state", "escalated"], directory: harness.directory)
        // Once the first batch is in, stop the daemon.
        #expect(await eventually(timeout: .seconds(30), every: .milliseconds(5)) { daemon.standardError.contains("operator:root retry order E") })
        daemon.send(SIGTERM)
        let exit = await retry.wait()
        #expect(await daemon.wait() == 0)
        #expect(exit == 1)
        let error = retry.standardError
        let pattern = #/interrupted: reconciled began stopping; ([0-9,]+) of 60,000 orders were changed before the stop and ([0-9,]+) were not reached; run the command again to finish/#
        let match = try #require(error.firstMatch(of: pattern), "\(error)")
        let changed = Int(match.1.replacingOccurrences(of: ",", with: "")) ?? -1
        let notReached = Int(match.2.replacingOccurrences(of: ",", with: "")) ?? -1
        #expect(changed > 0 && notReached > 0)
        #expect(changed + notReached == 60_000)
        #expect(changed % 1_000 == 0)  // whole batches
        #expect(harness.counts()[.escalated] == notReached, "\(harness.counts())")
        #expect(daemon.standardError.contains("operator:root retry on 60000 escalated orders: \(changed) changed; interrupted by the stop, \(notReached) not reached"))
    }
}
