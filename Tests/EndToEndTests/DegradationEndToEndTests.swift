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
        // would have been escalated. real sleep: the outage is the daemon's real time
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
}
