import Foundation
import Glibc
import ReconcileCore
import ReconcileMock
import Testing
import TestSupport
@testable import ReconcileStore

/// The world around the daemon going wrong while it runs (issue 6): each case handled with a
/// clear log line and no lost order.
@Suite("End to end: graceful degradation", .serialized)
struct DegradationEndToEndTests {
    @Test("the control socket's path taken by a stale socket from a crash: replaced, and the daemon answers on it")
    func staleControlSocket() async throws {
        let harness = Harness("stale-socket")
        try await harness.startMock()
        harness.configure(SystemdEndToEndTests.merchant(harness))
        let killed = try await harness.startDaemonAndWait()
        killed.send(SIGKILL)
        _ = await killed.wait()
        var info = stat()
        #expect(lstat(harness.directory.file("run/control.sock"), &info) == 0 && (info.st_mode & S_IFMT) == S_IFSOCK, "no stale socket left")

        let daemon = try await harness.startDaemonAndWait()
        #expect(try await harness.generation() == 1)
        daemon.send(SIGTERM)
        #expect(await daemon.wait() == 0)
    }

    @Test("the spool directory removed and re-created while the daemon runs: noticed, watched again, nothing lost")
    func spoolRecreated() async throws {
        let harness = Harness("spool-gone")
        try await harness.startMock()
        harness.configure(SystemdEndToEndTests.merchant(harness))
        let daemon = try await harness.startDaemonAndWait()
        harness.dropOrder("G1")
        #expect(await harness.waitFor(.finished, count: 1))

        let spool = harness.directory.file("spool")
        // rm -rf may race the daemon re-creating what it just removed; that is the point.
        _ = try await offPool { runTool("/bin/rm", ["-rf", spool]) }
        #expect(await eventually(timeout: .seconds(10)) { daemon.standardError.contains("spool watch re-established") }, "\(daemon.standardError.suffix(400))")
        // The producer re-creates its side (the daemon has already): orders dropped now arrive.
        try FileManager.default.createDirectory(atPath: spool + "/tmp", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: spool + "/incoming", withIntermediateDirectories: true)
        for index in 2...11 { harness.dropOrder("G\(index)") }
        #expect(await harness.waitFor(.finished, count: 11, timeout: .seconds(30)), "\(harness.counts()); \(daemon.standardError.suffix(600))")
        #expect(daemon.isRunning)
        daemon.send(SIGTERM)
        #expect(await daemon.wait() == 0)
    }

    @Test("a long outage ends without an escalation storm, and the backlog drains within MaxRate + Burst per second")
    func outageEnds() async throws {
        let harness = Harness("outage-ends")
        try await harness.startMock(["--faults", #"{"outage":true}"#])
        harness.configure("""
            [Verifier]
            Kind=http
            URL=\(harness.base)/merchant/verify
            MaxInFlight=16
            MaxRate=20
            Burst=5
            CircuitThreshold=3
            CircuitCooldown=200ms
            CircuitMaxCooldown=1s
            [Retry]
            InitialDelay=100ms
            Multiplier=2
            MaxDelay=1s
            Jitter=full
            MaxAttempts=5
            MaxAge=1h
            """)
        for index in 0..<150 { harness.dropOrder("O\(index)") }
        let daemon = try harness.startDaemon()
        // The outage lasts many times MaxDelay × MaxAttempts: without the circuit every order
        // would have been escalated.
        try await Task.sleep(for: .seconds(6))
        #expect(harness.counts()[.escalated] == nil, "escalated during the outage: \(harness.counts())")
        try await harness.configureMock(#"{"reset":true}"#)
        #expect(await harness.waitFor(.finished, count: 150, timeout: .seconds(60)), "\(harness.counts())")
        daemon.send(SIGTERM)
        #expect(await daemon.wait() == 0)

        let stats = try await harness.mockStats()
        let perSecond = stats.perSecond["merchant"] ?? [:]
        #expect(!perSecond.isEmpty)
        // Counted per calendar second on arrival at the mock: one request sent at the end of a
        // second may land in the next, so one over MaxRate + Burst is arrival jitter, not a burst.
        #expect(perSecond.values.max()! <= 26, "busiest second: \(perSecond.values.max()!) requests (MaxRate 20 + Burst 5)")
        #expect(harness.counts()[.escalated] == nil)
        #expect(!daemon.standardError.contains("escalated:"))
    }

    @Test(
        "no inotify instance left (the limit reached): a warning, then rescans every 10 s; orders still arrive",
        .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/unshare"), "needs unshare(1)"))
    func inotifyLimit() async throws {
        let harness = Harness("inotify-limit")
        try await harness.startMock()
        harness.configure(SystemdEndToEndTests.merchant(harness))
        // In a user namespace of its own the limit can be set to 0 without touching the host's.
        let wrapper = [
            "/usr/bin/unshare", "--user", "--map-root-user", "--", "/bin/sh", "-c",
            "echo 0 > /proc/sys/user/max_inotify_instances || exit 99; exec \"$@\"", "sh",
        ]
        let daemon = try ChildProcess(
            "reconciled", arguments: ["--config", harness.configPath, "--log-level", "debug"], directory: harness.directory, wrapper: wrapper)
        #expect(await eventually(timeout: .seconds(20)) { daemon.standardError.contains("started:") || !daemon.isRunning })
        try #require(daemon.isRunning, "\(daemon.standardError)")
        #expect(daemon.standardError.contains("cannot watch"), "\(daemon.standardError.suffix(400))")
        #expect(daemon.standardError.contains("rescanning every 10s instead"))
        for index in 0..<5 { harness.dropOrder("I\(index)") }
        #expect(await harness.waitFor(.finished, count: 5, timeout: .seconds(30)), "\(harness.counts())")
        daemon.send(SIGTERM)
        #expect(await daemon.wait() == 0)
    }

    static let fakeTime = "/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1"

    /// The daemon with its wall clock (only) read from a file through libfaketime: the test
    /// steps it without touching the machine's clock. The kernel's clock-set notice does not
    /// come for such a step; the scheduler sees it at its next turn.
    ///
    /// Only a forward step is tested this way: after a backward one, libfaketime also holds back
    /// the timed waits the Swift runtime sleeps on (a real step leaves them alone), so the whole
    /// process stalls. The backward path (bringing far-off attempts forward) is tested on the
    /// store (`clampAfterClockStepBack`).
    static func fakeClock(_ harness: Harness) -> (environment: [String: String], step: @Sendable (String) -> Void) {
        let file = harness.directory.write("faketime", "+0\n")
        // Under this preload the Swift runtime sees no command-line arguments, so the
        // configuration and log level come from the environment.
        let environment = [
            "LD_PRELOAD": fakeTime, "FAKETIME_TIMESTAMP_FILE": file, "FAKETIME_NO_CACHE": "1", "FAKETIME_DONT_FAKE_MONOTONIC": "1",
            "RECONCILE_CONFIG": harness.configPath, "RECONCILE_LOG_LEVEL": "debug",
        ]
        return (environment, { offset in try? (offset + "\n").write(toFile: file, atomically: true, encoding: .utf8) })
    }

    @Test(
        "the wall clock stepped forward by hours: what became due is attempted at the loop's next turn (here the watchdog's); the step is logged",
        .enabled(if: FileManager.default.fileExists(atPath: fakeTime), "needs libfaketime"))
    func clockStepsForward() async throws {
        let harness = Harness("clock-forward")
        try await harness.startMock()
        harness.configure("""
            [Verifier]
            Kind=http
            URL=\(harness.base)/merchant/verify
            MaxRate=infinity
            [Retry]
            InitialDelay=1h
            MaxDelay=1h
            Jitter=none
            """)
        harness.dropOrder("C2", receipt: MockReceipt(merchantAnswers: ["pending", "verified"]))
        let clock = Self.fakeClock(harness)
        let notify = try DatagramListener(path: harness.directory.file("notify.sock"))
        defer { notify.close() }
        var environment = clock.environment
        environment["NOTIFY_SOCKET"] = notify.path
        environment["WATCHDOG_USEC"] = "2000000"
        let daemon = try harness.startDaemon(environment: environment)
        #expect(await eventually(timeout: .seconds(20)) { ((try? harness.scalar("SELECT count(*) FROM attempts")) ?? 0) >= 1 })
        clock.step("+2h")  // the retry an hour ahead is now an hour overdue
        #expect(await harness.waitFor(.finished, count: 1, timeout: .seconds(20)), "\(harness.counts()); \(daemon.standardError.suffix(500))")
        #expect(daemon.standardError.contains("the wall clock stepped forward by 2h"), "\(daemon.standardError.split(separator: "\n").filter { $0.contains("clock") || $0.contains("C2") })")
        daemon.send(SIGTERM)
        #expect(await daemon.wait() == 0)
    }
}
