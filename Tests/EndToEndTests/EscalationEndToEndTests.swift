import Foundation
import Glibc
import ReconcileCore
import ReconcileMock
import Testing
import TestSupport

/// `[Escalation] Command=` blocks nothing (DESIGN §6): a hook is done when it exits, whatever it
/// leaves running, and one that runs too long is killed with its whole process group; the log
/// says which.
@Suite("End to end: escalation command", .serialized)
struct EscalationEndToEndTests {
    func configure(_ harness: Harness, script: String, timeout: String) {
        let hook = harness.directory.write("bin/page", script)
        chmod(hook, 0o755)
        harness.configure("""
            [Verifier]
            Kind=http
            URL=\(harness.base)/merchant/verify
            MaxRate=infinity
            \(VerificationEndToEndTests.quickRetry)
            MaxAttempts=1
            [Escalation]
            Command=bin/page
            CommandRate=100
            Timeout=\(timeout)
            """)
    }

    /// The process groups the hook wrote down (its own pid: each leads a group).
    func groups(_ harness: Harness) -> [pid_t] {
        (harness.directory.read("hook.log") ?? "").split(separator: "\n").compactMap { $0.split(separator: " ").last.flatMap { pid_t($0) } }
    }

    @Test("a hook that leaves `sleep 120 &` holding its output: the next escalation's hook runs at once, and the log says it exited 0")
    func backgroundChildBlocksNothing() async throws {
        let harness = Harness("escalation-background")
        try await harness.startMock()
        let log = harness.directory.file("hook.log")
        configure(harness, script: "#!/bin/sh\nsleep 120 &\necho \"$RECONCILE_ORDER_ID $$\" >> \(log)\nexit 0\n", timeout: "30s")
        defer { for group in groups(harness) { kill(-group, SIGKILL) } }
        harness.dropOrder("B1", receipt: MockReceipt(merchantAnswers: ["pending"]))
        let daemon = try harness.startDaemon()
        #expect(await eventually(timeout: .seconds(20)) { harness.directory.read("hook.log")?.contains("B1 ") == true }, "\(daemon.standardError.suffix(600))")

        harness.dropOrder("B2", receipt: MockReceipt(merchantAnswers: ["pending"]))
        #expect(await harness.waitFor(.escalated, count: 2, timeout: .seconds(20)))
        // Not two minutes later, when the first hook's `sleep` lets go of its standard error.
        #expect(await eventually(timeout: .seconds(40)) { harness.directory.read("hook.log")?.contains("B2 ") == true }, "the second hook waited for the first one's background child")
        daemon.send(SIGTERM)
        #expect(await daemon.wait() == 0)
        let output = daemon.standardError
        #expect(output.contains("escalation command for order B1 exited with status 0"), "\(output.suffix(800))")
        #expect(output.contains("escalation command for order B1 left processes running in the background (process group \(groups(harness).first ?? -1))"))
        #expect(!output.contains("timed out"))
        #expect(groups(harness).count == 2 && groups(harness).allSatisfy { kill(-$0, 0) == 0 }, "the background children were killed")
    }

    @Test("a hook still running at Timeout= is killed with its background children, and the log says it timed out and the group was killed")
    func timeoutKillsGroup() async throws {
        let harness = Harness("escalation-timeout")
        try await harness.startMock()
        let log = harness.directory.file("hook.log")
        configure(harness, script: "#!/bin/sh\necho \"$RECONCILE_ORDER_ID $$\" >> \(log)\nsleep 120 &\nsleep 60\n", timeout: "3s")
        defer { for group in groups(harness) { kill(-group, SIGKILL) } }
        harness.dropOrder("T1", receipt: MockReceipt(merchantAnswers: ["pending"]))
        let daemon = try harness.startDaemon()
        #expect(await eventually(timeout: .seconds(20)) {
            daemon.standardError.contains("escalation command for order T1 timed out after 3s; its process group ")
        }, "\(daemon.standardError.suffix(600))")
        let group = try #require(groups(harness).first)
        #expect(await eventually(timeout: .seconds(10)) { kill(-group, 0) != 0 }, "something of the hook's group survived")
        daemon.send(SIGTERM)
        #expect(await daemon.wait() == 0)
    }
}
