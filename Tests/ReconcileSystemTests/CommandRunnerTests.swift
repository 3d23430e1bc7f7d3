import Foundation
import Glibc
import Testing
import TestSupport
@testable import ReconcileSystem

@Suite("Command runner")
struct CommandRunnerTests {
    let directory = TemporaryDirectory(prefix: "command")

    /// Whether anything is left in a process group.
    func alive(_ group: pid_t) -> Bool {
        kill(-group, 0) == 0
    }

    /// Far below the children's own `sleep`s (60 and 120 s), far above what a loaded machine
    /// (the whole suite on two shared cores) takes to notice an exit or a time-out.
    static let bound: Duration = .seconds(40)

    func run(_ script: String, timeout: Duration = .seconds(30), grace: Duration = .seconds(2)) async -> CommandRunner.Result {
        await CommandRunner.run(["/bin/sh", "-c", script], environment: ["RECONCILE_ORDER_ID": "A1"], timeout: timeout, grace: grace)
    }

    @Test("a hook that leaves `sleep 120 &` holding its standard error is done when it exits: exit status 0, the background process reported, not waited for")
    func backgroundChild() async {
        let started = ContinuousClock.now
        let result = await run("sleep 120 & echo started >&2; exit 0")
        defer { if result.processGroup > 0 { kill(-result.processGroup, SIGKILL) } }
        #expect(ContinuousClock.now - started < Self.bound, "waited for the background child")
        #expect(result.outcome == .exited(0))
        #expect(result.outcome.succeeded)
        #expect(result.firstErrorLine == "started")
        #expect(result.leftRunning)
        #expect(result.processGroup > 0 && alive(result.processGroup))
    }

    @Test("at the time-out the whole process group is killed, background children included, and the run ends then")
    func timeoutKillsGroup() async {
        let started = ContinuousClock.now
        let result = await run("sleep 120 & sleep 60", timeout: .milliseconds(300), grace: .milliseconds(500))
        defer { if result.processGroup > 0 { kill(-result.processGroup, SIGKILL) } }
        #expect(ContinuousClock.now - started < Self.bound)
        #expect(result.outcome == .timedOut)
        #expect(result.outcome.description == "timed out; its process group was killed")
        #expect(!result.leftRunning)
        #expect(await eventually(timeout: .seconds(5)) { !alive(result.processGroup) }, "the background child survived")
    }

    @Test("a hook that ignores SIGTERM is killed with SIGKILL after the grace period")
    func ignoresTerm() async {
        let started = ContinuousClock.now
        let result = await run("trap '' TERM; sleep 60 & sleep 60", timeout: .milliseconds(200), grace: .milliseconds(300))
        defer { if result.processGroup > 0 { kill(-result.processGroup, SIGKILL) } }
        #expect(result.outcome == .timedOut)
        #expect(ContinuousClock.now - started < Self.bound)
        #expect(await eventually(timeout: .seconds(5)) { !alive(result.processGroup) })
    }

    @Test("an exit status, a signal, the first line of standard error and a missing program come back as they were")
    func outcomes() async {
        let failed = await run("echo first >&2; echo second >&2; exit 3")
        #expect(failed.outcome == .exited(3))
        #expect(failed.outcome.description == "exited with status 3")
        #expect(failed.firstErrorLine == "first")
        #expect(!failed.leftRunning)

        let killed = await run("kill -TERM $$")
        #expect(killed.outcome == .signalled(SIGTERM))
        #expect(killed.outcome.description == "was killed by SIGTERM")

        let missing = await CommandRunner.run(["/nonexistent/hook"], environment: [:], timeout: .seconds(5))
        #expect(missing.outcome == .couldNotStart("/nonexistent/hook: No such file or directory"))

        let quiet = await run("exit 0")
        #expect(quiet.outcome.succeeded && quiet.firstErrorLine == nil && !quiet.leftRunning)
    }

    @Test("the hook gets only the base environment and its variables, none of our descriptors, /dev/null as input, and a session of its own")
    func isolation() async throws {
        let out = directory.file("seen")
        let result = await run(
            """
            env > \(out).env
            ls /proc/$$/fd > \(out).fds
            read -r pid comm state ppid pgrp session rest < /proc/$$/stat
            echo "$pid $pgrp $session" > \(out).ids
            readlink /proc/$$/fd/0 > \(out).stdin
            """)
        #expect(result.outcome == .exited(0))
        let environment = Set((directory.read("seen.env") ?? "").split(separator: "\n").map { String($0.prefix { $0 != "=" }) })
        #expect(environment.isSuperset(of: ["PATH", "LANG", "RECONCILE_ORDER_ID"]))
        #expect(environment.subtracting(["PATH", "LANG", "RECONCILE_ORDER_ID", "PWD", "SHLVL", "_", "OLDPWD"]).isEmpty, "\(environment)")
        // 0, 1, 2 and the one `ls` has open on the directory it lists.
        let descriptors = (directory.read("seen.fds") ?? "").split(separator: "\n").compactMap { Int($0) }
        #expect(descriptors.filter { $0 > 2 }.count <= 1, "\(descriptors)")
        let ids = (directory.read("seen.ids") ?? "").split(separator: " ").compactMap { Int32($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
        #expect(ids.count == 3 && ids[0] == ids[1] && ids[1] == ids[2] && ids[0] == result.processGroup, "pid, group, session: \(ids)")
        #expect(directory.read("seen.stdin")?.hasPrefix("/dev/null") == true)
    }
}
