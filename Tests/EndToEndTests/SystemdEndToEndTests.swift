import Foundation
import Glibc
import ReconcileCore
import ReconcileFoundation
import ReconcileMock
import Testing
import TestSupport
@testable import ReconcileStore
@testable import ReconcileSQLite

/// The built `reconciled` as systemd sees it, without systemd: a datagram socket the test binds
/// stands in for `NOTIFY_SOCKET`, another (in a private mount namespace) for journald's native
/// socket (DESIGN §8, issue 5). `scripts/test-under-systemd` repeats the story under a real one.
@Suite("End to end: systemd notifications and the journal", .serialized)
struct SystemdEndToEndTests {
    /// The lifecycle keys of a datagram, in the order systemd acts on them.
    static func lifecycle(_ datagram: DatagramListener.Datagram) -> String? {
        let lines = datagram.text.split(separator: "\n")
        for key in ["READY=1", "RELOADING=1", "STOPPING=1"] where lines.contains(Substring(key)) {
            return String(key.dropLast(2))
        }
        return nil
    }

    static func value(_ key: String, in datagram: DatagramListener.Datagram) -> String? {
        datagram.text.split(separator: "\n").first { $0.hasPrefix(key + "=") }.map { String($0.dropFirst(key.count + 1)) }
    }

    static func merchant(_ harness: Harness, _ extra: String = "") -> String {
        """
        [Verifier]
        Kind=http
        URL=\(harness.base)/merchant/verify
        MaxInFlight=4
        MaxRate=infinity
        \(extra)
        \(VerificationEndToEndTests.quickRetry)
        """
    }

    @Test("READY → STATUS on change (≤ 1/s) → WATCHDOG → RELOADING+MONOTONIC_USEC/READY (twice) → STOPPING, then exit 0; nothing after STOPPING but pings")
    func lifecycleSequence() async throws {
        let harness = Harness("notify")
        try await harness.startMock()
        harness.configure(Self.merchant(harness))
        let notify = try DatagramListener(path: harness.directory.file("notify.sock"))
        defer { notify.close() }
        let daemon = try harness.startDaemon(environment: ["NOTIFY_SOCKET": notify.path, "WATCHDOG_USEC": "3000000"])

        #expect(await eventually(timeout: .seconds(20)) { notify.datagrams.contains { Self.lifecycle($0) == "READY" } })
        let ready = try #require(notify.datagrams.first { Self.lifecycle($0) == "READY" })
        #expect(Self.value("STATUS", in: ready) == "pending=0 verifying=0 escalated=0 circuit=closed")
        // READY=1 means the control socket answers and the spool is watched.
        #expect(try await harness.generation() == 1)

        for index in 0..<30 { harness.dropOrder("N\(index)") }
        #expect(await harness.waitFor(.finished, count: 30))
        // The status line follows without a timer: the last one says everything is done.
        #expect(await eventually(timeout: .seconds(5)) {
            notify.datagrams.last { Self.value("STATUS", in: $0) != nil && Self.lifecycle($0) == nil }
                .flatMap { Self.value("STATUS", in: $0) } == "pending=0 verifying=0 escalated=0 circuit=closed"
        })

        let reload = try await harness.ctl(["reload", "--wait"])
        #expect(reload.status == 0, "\(reload.error)")
        daemon.send(SIGHUP)
        #expect(await eventually(timeout: .seconds(10)) { notify.datagrams.filter { Self.lifecycle($0) == "READY" }.count == 3 })
        // Two more watchdog pings after the last reload.
        let pingsBefore = notify.datagrams.filter { $0.text == "WATCHDOG=1" }.count
        #expect(await eventually(timeout: .seconds(10)) { notify.datagrams.filter { $0.text == "WATCHDOG=1" }.count >= pingsBefore + 2 })
        daemon.send(SIGTERM)
        #expect(await daemon.wait() == 0)

        let datagrams = notify.datagrams
        #expect(datagrams.compactMap(Self.lifecycle) == ["READY", "RELOADING", "READY", "RELOADING", "READY", "STOPPING"])
        // RELOADING=1 carries the monotonic time in the same datagram (Type=notify-reload wants it).
        for reloading in datagrams where Self.lifecycle(reloading) == "RELOADING" {
            let stamp = Self.value("MONOTONIC_USEC", in: reloading).flatMap(UInt64.init)
            var now = timespec()
            clock_gettime(CLOCK_MONOTONIC, &now)
            #expect(stamp != nil && stamp! > 0 && stamp! <= UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1000)
        }
        // STATUS= alone: on change only, at most one a second.
        let statuses = datagrams.filter { Self.lifecycle($0) == nil && Self.value("STATUS", in: $0) != nil }
        #expect(!statuses.isEmpty)
        for (earlier, later) in zip(statuses, statuses.dropFirst()) {
            #expect(later.arrived - earlier.arrived >= .milliseconds(900), "STATUS lines \(earlier.text) and \(later.text) too close")
            #expect(earlier.text != later.text, "an unchanged STATUS was sent again")
        }
        // The watchdog: pinged all along, never further apart than WATCHDOG_USEC.
        let start = try #require(datagrams.first { Self.lifecycle($0) == "READY" }?.arrived)
        let stop = try #require(datagrams.first { Self.lifecycle($0) == "STOPPING" }?.arrived)
        let pings = datagrams.filter { $0.text == "WATCHDOG=1" }.map(\.arrived)
        let window = pings.filter { $0 > start && $0 < stop }
        #expect(window.count >= 3, "pings: \(pings.count)")
        let gaps = zip([start] + window, window + [stop]).map { $1 - $0 }
        #expect(gaps.max()! < .seconds(3), "longest gap between pings: \(gaps.max()!) (WATCHDOG_USEC is 3 s)")
        let stopping = try #require(datagrams.first { Self.lifecycle($0) == "STOPPING" })
        #expect(Self.value("STATUS", in: stopping)?.hasPrefix("stopping") == true)
        #expect(datagrams.filter { $0.arrived > stopping.arrived }.allSatisfy { $0.text == "WATCHDOG=1" })
    }

    @Test("the watchdog pings come from the scheduling loop: a loop blocked on a locked store stops them, and they resume")
    func watchdogStopsWhenTheLoopIsBlocked() async throws {
        let harness = Harness("watchdog")
        try await harness.startMock(["--faults", #"{"latency_ms":40}"#])
        harness.configure(Self.merchant(harness).replacingOccurrences(of: "MaxInFlight=4", with: "MaxInFlight=1"))
        // ≈ 25 orders a second, one at a time: the loop commits an outcome every 40 ms for
        // longer than the test looks.
        for index in 0..<400 { harness.dropOrder("W\(index)") }
        let notify = try DatagramListener(path: harness.directory.file("notify.sock"))
        defer { notify.close() }
        let daemon = try harness.startDaemon(environment: ["NOTIFY_SOCKET": notify.path, "WATCHDOG_USEC": "1000000"])
        #expect(await eventually(timeout: .seconds(20)) { (harness.counts()[.finished] ?? 0) >= 10 })

        // Another process holds the store's write lock for 3 s (sqlite3 in a shell would do the
        // same): the loop's next commit waits in SQLite's busy handler.
        let database = harness.directory.file("state/orders.db")
        let (lockedAt, releasedAt) = try await offPool {
            let connection = try SQLiteConnection(path: database, mode: .readWrite(create: false), busyTimeout: .seconds(10))
            try connection.execute("BEGIN IMMEDIATE")
            let lockedAt = ContinuousClock.now
            // real sleep: the daemon's watchdog must fall silent for three of its real seconds
            Thread.sleep(forTimeInterval: 3)
            try connection.execute("ROLLBACK")
            return (lockedAt, ContinuousClock.now)
        }
        #expect(await eventually(timeout: .seconds(10)) { notify.datagrams.contains { $0.text == "WATCHDOG=1" && $0.arrived > releasedAt } })
        daemon.send(SIGTERM)
        #expect(await daemon.wait() == 0)

        let pings = notify.datagrams.filter { $0.text == "WATCHDOG=1" }.map(\.arrived)
        let before = pings.filter { $0 < lockedAt }
        let during = pings.filter { $0 > lockedAt + .milliseconds(1200) && $0 < releasedAt }
        let after = pings.filter { $0 > releasedAt }
        #expect(before.count >= 2, "pings before the lock: \(before.count)")
        #expect(during.isEmpty, "\(during.count) pings while the loop was blocked")
        #expect(!after.isEmpty, "no ping after the lock was released")
    }

    @Test("a start-up failure tells systemd why: STATUS= with the reason, ERRNO= where there is one; exit 78 for configuration")
    func startupFailures() async throws {
        let harness = Harness("notify-fail")
        let notify = try DatagramListener(path: harness.directory.file("notify.sock"))
        defer { notify.close() }

        harness.configure("[Verifier]\nKind=http\nURL=http://127.0.0.1:9/verify\nMaxInFlight=many\n")
        let bad = try harness.startDaemon(environment: ["NOTIFY_SOCKET": notify.path])
        #expect(await bad.wait() == 78)
        #expect(await eventually(timeout: .seconds(5)) { notify.datagrams.count == 1 })
        let configuration = try #require(notify.datagrams.first)
        #expect(Self.value("STATUS", in: configuration)?.hasPrefix("cannot start: bad configuration in \(harness.configPath)") == true, "\(configuration.text)")
        #expect(Self.value("READY", in: configuration) == nil)

        // A store directory that cannot be made: the reason and its errno.
        harness.directory.write("reconciled.conf", """
            [Spool]
            Directory=spool
            [State]
            Database=/proc/reconcile-test/orders.db
            [Control]
            Socket=run/control.sock
            [Verifier]
            Kind=http
            URL=http://127.0.0.1:9/verify
            """)
        let broken = try harness.startDaemon(environment: ["NOTIFY_SOCKET": notify.path])
        let status = await broken.wait()
        #expect(status != 0 && status != 78 && status != nil)
        #expect(await eventually(timeout: .seconds(5)) { notify.datagrams.count == 2 })
        let failure = notify.datagrams[1]
        #expect(Self.value("STATUS", in: failure)?.contains("cannot create the state directory") == true, "\(failure.text)")
        #expect(Self.value("ERRNO", in: failure).flatMap(Int32.init).map { $0 > 0 } == true, "\(failure.text)")
        #expect(!notify.datagrams.contains { Self.lifecycle($0) != nil })
    }

    @Test("a schema migration at start asks for more start-up time before READY=1")
    func migrationExtendsTheTimeout() async throws {
        let harness = Harness("notify-migrate")
        try await harness.startMock()
        harness.configure(Self.merchant(harness))
        try FileManager.default.createDirectory(atPath: harness.directory.file("state"), withIntermediateDirectories: true)
        // A store as the first version wrote it.
        _ = try SQLiteOrderStore(
            path: harness.directory.file("state/orders.db"), mode: .owner, migrator: SchemaMigrator(migrations: [StoreSchema.migrations[0]]))
        let notify = try DatagramListener(path: harness.directory.file("notify.sock"))
        defer { notify.close() }
        let daemon = try harness.startDaemon(environment: ["NOTIFY_SOCKET": notify.path])
        #expect(await eventually(timeout: .seconds(20)) { notify.datagrams.contains { Self.lifecycle($0) == "READY" } })
        daemon.send(SIGTERM)
        #expect(await daemon.wait() == 0)
        let keys = notify.datagrams.map { $0.text.split(separator: "=").first.map(String.init) ?? "" }
        let extend = try #require(keys.firstIndex(of: "EXTEND_TIMEOUT_USEC"), "\(keys)")
        #expect(extend < keys.firstIndex(of: "READY")!)
        #expect(notify.datagrams[extend].text == "EXTEND_TIMEOUT_USEC=90000000")
    }

    // MARK: - The journal

    /// Runs `reconciled` in a private mount namespace whose `/run` is a fresh tmpfs, with the
    /// test's `journal` directory (holding the fake socket, if any) mounted as
    /// `/run/systemd/journal`, and `JOURNAL_STREAM` naming its stderr, as systemd sets it.
    static func journalWrapper(journalDirectory: String) -> [String] {
        let script = """
            journal=$1; shift
            mount -t tmpfs tmpfs /run && mkdir -p /run/systemd/journal && mount --bind "$journal" /run/systemd/journal || exit 99
            JOURNAL_STREAM=$(stat -L -c '%d:%i' /proc/self/fd/2) exec "$@"
            """
        return ["/usr/bin/unshare", "--mount", "--propagation", "private", "--", "/bin/sh", "-c", script, "sh", journalDirectory]
    }

    static var canUnshare: Bool { getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/unshare") }

    @Test(
        "under JOURNAL_STREAM, native journal entries with DESIGN §8's fields; nothing secret in them",
        .enabled(if: canUnshare, "needs root and unshare(1) for a private /run"))
    func nativeJournalEntries() async throws {
        let harness = Harness("journal")
        try await harness.startMock(["--token", "tok-SECRET-7f3a"])
        harness.directory.write("token", "tok-SECRET-7f3a\n")
        harness.configure(Self.merchant(harness, "TokenFile=token"))
        let journalDirectory = harness.directory.file("journal")
        try FileManager.default.createDirectory(atPath: journalDirectory, withIntermediateDirectories: true)
        let journal = try DatagramListener(path: journalDirectory + "/socket")
        defer { journal.close() }
        harness.dropOrder("J1", receipt: appleReceipt("700001", product: "gems"), product: "gems")

        let daemon = try ChildProcess(
            "reconciled", arguments: ["--config", harness.configPath, "--log-level", "debug"], directory: harness.directory,
            wrapper: Self.journalWrapper(journalDirectory: journalDirectory))
        #expect(await harness.waitFor(.finished, count: 1))
        daemon.send(SIGTERM)
        #expect(await daemon.wait() == 0, "\(daemon.standardError)")

        let entries = try journal.datagrams.map { try JournalNativeMessage($0.bytes) }
        let started = try #require(entries.first { $0["MESSAGE_ID"] == MessageID.started.rawValue }, "\(entries.map { $0["MESSAGE"] ?? "" }); stderr: \(daemon.standardError)")
        #expect(started["PRIORITY"] == "5")
        #expect(started["SYSLOG_IDENTIFIER"] == "reconciled")
        #expect(started["MESSAGE"]?.contains("started:") == true)
        #expect(started["CODE_FILE"]?.hasSuffix("Daemon.swift") == true)
        #expect(started["CODE_LINE"].flatMap(Int.init) != nil)
        #expect(started["CODE_FUNC"]?.isEmpty == false)

        let finished = try #require(entries.first { $0["MESSAGE_ID"] == MessageID.finished.rawValue })
        #expect(finished["ORDER_ID"] == "J1")
        #expect(finished["ORDER_STATE"] == "finished")
        #expect(finished["PRODUCT_ID"] == "gems")
        #expect(finished["ATTEMPT"] == "1")
        #expect(finished["ENDPOINT"] == "merchant")
        #expect(finished["PRIORITY"] == "6")
        // Every name journald would accept, and the order's debug events carry its id too.
        for entry in entries {
            for (name, _) in entry.fields { #expect(LogField.isValidName(name), "\(name)") }
        }
        #expect(entries.filter { $0["ORDER_ID"] == "J1" }.count >= 2)
        #expect(entries.contains { $0["MESSAGE_ID"] == MessageID.stopping.rawValue })
        // Nothing went to stderr; nothing secret went anywhere.
        #expect(daemon.standardError.isEmpty, "\(daemon.standardError)")
        let everything = journal.datagrams.map(\.text).joined()
        #expect(!everything.contains("tok-SECRET-7f3a"))
        #expect(!everything.contains(appleReceipt("700001").base64))
    }

    @Test(
        "the journal stream without the journal's socket: a warning, then <N> lines on stderr",
        .enabled(if: canUnshare, "needs root and unshare(1) for a private /run"))
    func journalSocketMissing() async throws {
        let harness = Harness("journal-missing")
        try await harness.startMock()
        harness.configure(Self.merchant(harness))
        let journalDirectory = harness.directory.file("journal")  // stays empty: no socket
        try FileManager.default.createDirectory(atPath: journalDirectory, withIntermediateDirectories: true)
        harness.dropOrder("M1")
        let daemon = try ChildProcess(
            "reconciled", arguments: ["--config", harness.configPath], directory: harness.directory,
            wrapper: Self.journalWrapper(journalDirectory: journalDirectory))
        #expect(await harness.waitFor(.finished, count: 1))
        daemon.send(SIGTERM)
        #expect(await daemon.wait() == 0)
        let lines = daemon.standardError.split(separator: "\n")
        #expect(lines.first?.hasPrefix("<4>stderr is the journal's stream but /run/systemd/journal/socket is missing") == true, "\(lines)")
        #expect(lines.contains { $0.hasPrefix("<5>reconciled") && $0.contains("started:") })
        #expect(lines.contains { $0.hasPrefix("<6>order M1 finished") && $0.contains("ORDER_ID=M1") })
    }
}
