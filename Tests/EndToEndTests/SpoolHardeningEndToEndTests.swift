import Foundation
import Glibc
import ReconcileCore
import Testing
import TestSupport
@testable import ReconcileStore

/// The spool against a hostile or careless producer (issues 12 and 13), on the built
/// `reconciled`: swapped subdirectories, stale descriptors, names that are not text, long names,
/// floods, two daemons on one spool, and `reconcilectl submit`'s names and modes.
@Suite("End to end: spool hardening", .serialized)
struct SpoolHardeningEndToEndTests {
    /// A configuration whose verifier nothing answers: these tests are about ingest.
    static let unanswered = "[Verifier]\nKind=http\nURL=http://127.0.0.1:9/verify\n"

    /// How long after SIGTERM a daemon with `DrainTimeout=2s` may take to exit: the drain, plus
    /// time for the process to end (stretched under a sanitizer, whose exit does its own work).
    static let drainBound: Duration = .seconds(2) + TestTime.scaled(.seconds(2))

    /// Drops a file under a name of any bytes (written in tmp/, renamed into incoming/).
    static func drop(_ harness: Harness, name: [UInt8], _ text: String) {
        let temporary = harness.directory.write("spool/tmp/.drop-\(UUID().uuidString)", text)
        let incoming = open(harness.directory.file("spool/incoming"), O_RDONLY | O_DIRECTORY)
        defer { close(incoming) }
        let moved = (name + [0]).withUnsafeBufferPointer { target in
            target.withMemoryRebound(to: CChar.self) { renameat(AT_FDCWD, temporary, incoming, $0.baseAddress!) }
        }
        precondition(moved == 0, "rename: \(String(cString: strerror(errno)))")
    }

    /// Names in a directory, as bytes.
    static func names(_ path: String) -> [[UInt8]] {
        guard let stream = opendir(path) else { return [] }
        defer { closedir(stream) }
        var names: [[UInt8]] = []
        while let entry = readdir(stream) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { Array($0.prefix { $0 != 0 }) }
            if name != [0x2E] && name != [0x2E, 0x2E] { names.append(name) }
        }
        return names
    }

    /// The text of every reason file in rejected/ (read by the names' bytes).
    static func reasons(_ harness: Harness) -> [String] {
        let path = harness.directory.file("spool/rejected")
        let directory = open(path, O_RDONLY | O_DIRECTORY)
        defer { close(directory) }
        return names(path).filter { $0.count > 7 && $0.suffix(7).elementsEqual(".reason".utf8) }.compactMap { name in
            let descriptor = (name + [0]).withUnsafeBufferPointer { $0.withMemoryRebound(to: CChar.self) { openat(directory, $0.baseAddress!, O_RDONLY) } }
            guard descriptor >= 0 else { return nil }
            defer { close(descriptor) }
            var bytes: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
                guard count > 0 else { break }
                bytes += buffer[..<count]
            }
            return String(decoding: bytes, as: UTF8.self)
        }
    }

    // MARK: - Issue 12

    @Test("incoming/ and rejected/ swapped for symlinks while the daemon runs: never followed (the targets untouched), err naming them; the real ones used once back")
    func symlinkSwap() async throws {
        let harness = Harness("swap")
        harness.configure(Self.unanswered)
        let daemon = try await harness.startDaemonAndWait()
        harness.dropOrder("S0")
        #expect(await harness.waitFor(.pending, count: 1))

        // What a member of the producers' group could reach: any directory the daemon can read.
        let victim = harness.directory.file("victim")
        try FileManager.default.createDirectory(atPath: victim, withIntermediateDirectories: true)
        harness.directory.write("victim/stolen.json", OrderFixtures.orderJSON("STOLEN"))
        harness.directory.write("victim/precious.txt", "not an order")
        let incoming = harness.directory.file("spool/incoming")
        #expect(rename(incoming, incoming + ".real") == 0)
        // The daemon may re-create incoming/ at once (it saw it go): take its place as an attacker would.
        while symlink(victim, incoming) != 0 {
            #expect(errno == EEXIST)
            _ = rmdir(incoming)
        }
        #expect(await eventually(timeout: .seconds(10)) { daemon.standardError.contains("\(incoming) is a symbolic link") }, "\(daemon.standardError.suffix(800))")
        #expect(daemon.standardError.contains(" err: \(incoming) is a symbolic link"))
        // Producers keep writing into the real directory meanwhile.
        harness.directory.write("spool/incoming.real/during.json", OrderFixtures.orderJSON("S1"))
        // real sleep: a few of the daemon's real rescans, each of which must refuse the link
        try await Task.sleep(for: .seconds(3))
        #expect(harness.directory.list("victim") == ["precious.txt", "stolen.json"], "the daemon touched the symlink's target")
        #expect((try? harness.store().order(id: "STOLEN")) == nil)
        #expect(harness.directory.list("spool/rejected").isEmpty)
        #expect(daemon.standardError.components(separatedBy: "\(incoming) is a symbolic link").count == 2, "the refusal is logged once")

        #expect(unlink(incoming) == 0)
        #expect(rename(incoming + ".real", incoming) == 0)
        #expect(await eventually(timeout: .seconds(35)) { (try? harness.store().order(id: "S1")) != nil }, "\(daemon.standardError.suffix(800))")

        // rejected/ pointed at a world-writable directory.
        let open = harness.directory.file("world")
        try FileManager.default.createDirectory(atPath: open, withIntermediateDirectories: true)
        #expect(chmod(open, 0o1777) == 0)
        let rejected = harness.directory.file("spool/rejected")
        #expect(rename(rejected, rejected + ".real") == 0)
        #expect(symlink(open, rejected) == 0)
        harness.drop("bad.json", "not json")
        #expect(await eventually(timeout: .seconds(10)) { daemon.standardError.contains(" err: \(rejected) is a symbolic link") }, "\(daemon.standardError.suffix(800))")
        #expect(harness.directory.list("world").isEmpty, "quarantined into the symlink's target")
        #expect(harness.directory.list("spool/incoming") == ["bad.json"])
        #expect(unlink(rejected) == 0)
        #expect(rename(rejected + ".real", rejected) == 0)
        #expect(await eventually(timeout: .seconds(35)) { harness.directory.list("spool/rejected") == ["bad.json", "bad.json.reason"] })
        #expect(harness.directory.list("victim") == ["precious.txt", "stolen.json"])
        daemon.send(SIGTERM)
        #expect(await daemon.wait() == 0)
    }

    @Test(
        "without inotify (RescanInterval=): incoming/ removed and re-created is read at the next rescan, not through the stale descriptor",
        .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/unshare"), "needs unshare(1)"))
    func staleDescriptorWithoutInotify() async throws {
        let harness = Harness("stale")
        harness.directory.write("reconciled.conf", """
            [Spool]
            Directory=spool
            RescanInterval=1s
            [State]
            Database=state/orders.db
            [Control]
            Socket=run/control.sock
            \(Self.unanswered)
            """)
        let wrapper = [
            "/usr/bin/unshare", "--user", "--map-root-user", "--", "/bin/sh", "-c",
            "echo 0 > /proc/sys/user/max_inotify_instances || exit 99; exec \"$@\"", "sh",
        ]
        let daemon = try ChildProcess(
            "reconciled", arguments: ["--config", harness.configPath, "--log-level", "debug"], directory: harness.directory, wrapper: wrapper)
        #expect(await eventually(timeout: .seconds(20)) { daemon.standardError.contains("started:") || !daemon.isRunning })
        try #require(daemon.isRunning, "\(daemon.standardError)")
        #expect(daemon.standardError.contains("cannot watch"))
        harness.dropOrder("A1")
        #expect(await harness.waitFor(.pending, count: 1, timeout: .seconds(20)))

        let incoming = harness.directory.file("spool/incoming")
        #expect(rename(incoming, incoming + ".old") == 0)
        #expect(mkdir(incoming, 0o770) == 0)
        harness.dropOrder("B1")
        #expect(await harness.waitFor(.pending, count: 2, timeout: .seconds(20)), "B1 stranded: \(daemon.standardError.suffix(800))")
        // The file is removed after the commit, on the ingestor's own thread: wait for it.
        #expect(await eventually(timeout: .seconds(10)) { harness.directory.list("spool/incoming").isEmpty }, "\(harness.directory.list("spool/incoming"))")
        daemon.send(SIGTERM)
        #expect(await daemon.wait() == 0)
    }

    @Test("submit: an order id starting with '.', under umask 077, is taken in by the daemon; the file is 0640")
    func submitNames() async throws {
        let harness = Harness("submit")
        harness.configure(Self.unanswered)
        let file = harness.directory.write("hidden.json", OrderFixtures.orderJSON(".hidden"))
        let umask077 = ["/bin/sh", "-c", "umask 077; exec \"$@\"", "sh"]
        let submitted = try await harness.ctl(["submit", file], wrapper: umask077)
        #expect(submitted.status == 0, "\(submitted.error)")
        let names = harness.directory.list("spool/incoming")
        #expect(names.count == 1)
        let name = try #require(names.first)
        #expect(!name.hasPrefix(".") && !name.hasSuffix(".tmp"), "\(name)")
        var info = stat()
        #expect(stat(harness.directory.file("spool/incoming/\(name)"), &info) == 0)
        #expect(info.st_mode & 0o777 == 0o640, "mode \(String(info.st_mode & 0o777, radix: 8))")

        let daemon = try await harness.startDaemonAndWait()
        #expect(await harness.waitFor(.pending, count: 1, timeout: .seconds(20)), "\(daemon.standardError.suffix(600))")
        #expect(try harness.store().order(id: ".hidden") != nil)
        #expect(await eventually { harness.directory.list("spool/incoming").isEmpty })
        daemon.send(SIGTERM)
        #expect(await daemon.wait() == 0)
    }

    // MARK: - Issue 13

    @Test("names that are not UTF-8, and an NFC/NFD pair, are taken in; a bad one is quarantined as its bytes and shown escaped")
    func bytesNames() async throws {
        let harness = Harness("bytes")
        harness.configure(Self.unanswered)
        let latin1: [UInt8] = Array("caf".utf8) + [0xE9] + Array(".json".utf8)
        Self.drop(harness, name: latin1, OrderFixtures.orderJSON("L1"))
        Self.drop(harness, name: Array("caf\u{E9}-order.json".utf8), OrderFixtures.orderJSON("NFC"))
        Self.drop(harness, name: Array("cafe\u{301}-order.json".utf8), OrderFixtures.orderJSON("NFD"))
        let hostile: [UInt8] = Array("bad".utf8) + [0xFF, 0x0D, 0x1B] + Array("[2J.json".utf8)
        Self.drop(harness, name: hostile, "not json")
        #expect(Self.names(harness.directory.file("spool/incoming")).count == 4)

        let daemon = try await harness.startDaemonAndWait()
        #expect(await harness.waitFor(.pending, count: 3, timeout: .seconds(20)), "\(harness.counts()); \(daemon.standardError.suffix(800))")
        for id in ["L1", "NFC", "NFD"] { #expect(try harness.store().order(id: id) != nil, "\(id)") }
        #expect(await eventually { Self.names(harness.directory.file("spool/incoming")).isEmpty })
        let rejected = Self.names(harness.directory.file("spool/rejected"))
        #expect(rejected.contains(hostile), "quarantined under another name: \(rejected)")
        #expect(Self.reasons(harness).contains { $0.hasPrefix(#"file: bad\xff\r\x1b[2J.json"# + "\n") }, "\(Self.reasons(harness))")
        #expect(daemon.standardError.contains(#"rejected spool file bad\xff\r\x1b[2J.json"#), "\(daemon.standardError.suffix(800))")
        #expect(!daemon.standardError.unicodeScalars.contains { $0 == "\u{1B}" || $0 == "\r" })
        daemon.send(SIGTERM)
        #expect(await daemon.wait() == 0)
    }

    @Test("an invalid file with a 250-byte name is quarantined, and SIGTERM ends the daemon within DrainTimeout")
    func longNameAndStop() async throws {
        let harness = Harness("long-name")
        harness.configure(Self.unanswered + "[Daemon]\nDrainTimeout=2s\n")
        let name = String(repeating: "L", count: 245) + ".json"
        harness.drop(name, "not json")
        let daemon = try await harness.startDaemonAndWait()
        #expect(await eventually(timeout: .seconds(10)) { harness.directory.list("spool/incoming").isEmpty }, "\(daemon.standardError.suffix(800))")
        #expect(Self.reasons(harness).contains { $0.hasPrefix("file: \(name)\n") })
        harness.dropOrder("After1")
        #expect(await harness.waitFor(.pending, count: 1, timeout: .seconds(5)), "a new order waited")
        let asked = ContinuousClock.now
        daemon.send(SIGTERM)
        #expect(await daemon.wait(timeout: .seconds(6)) == 0, "\(daemon.standardError.suffix(800))")
        #expect(ContinuousClock.now - asked < Self.drainBound, "DrainTimeout is 2 s")
    }

    @Test(
        "the state disk full: spool files wait, and SIGTERM still ends the daemon within DrainTimeout",
        .enabled(if: StorageFaultEndToEndTests.canMount, "needs root to mount a small tmpfs"))
    func stopWhileDiskFull() async throws {
        let harness = Harness("stop-enospc")
        harness.configure(Self.unanswered + "[Daemon]\nDrainTimeout=2s\n")
        let state = try await StorageFaultEndToEndTests.mountState(harness, size: "1m")
        defer { StorageFaultEndToEndTests.unmount(state) }
        let daemon = try await harness.startDaemonAndWait()
        let bulky = String(repeating: "QUJD", count: 4_000)
        for index in 0..<150 { harness.drop("B\(index).json", OrderFixtures.orderJSON("B\(index)", receipt: bulky)) }
        #expect(await eventually(timeout: .seconds(20)) { daemon.standardError.contains("REASON=disk_full") }, "\(daemon.standardError.suffix(500))")
        // Into the retries: the files that wait are announced with the time of the next one.
        #expect(await eventually(timeout: .seconds(20)) { daemon.standardError.contains("; retrying in ") }, "\(daemon.standardError.suffix(500))")
        let asked = ContinuousClock.now
        daemon.send(SIGTERM)
        #expect(await daemon.wait(timeout: .seconds(8)) == 0, "\(daemon.standardError.suffix(800))")
        #expect(ContinuousClock.now - asked < Self.drainBound, "DrainTimeout is 2 s")
        let stored = (try? harness.scalar("SELECT count(*) FROM orders")) ?? 0
        #expect(stored + StorageFaultEndToEndTests.incomingCount(harness) == 150, "nothing lost")
    }

    @Test("a second daemon on the same spool (another store) is refused before it touches its store: exit 1, the holder's pid on stderr and in STATUS=")
    func secondDaemonSameSpool() async throws {
        let harness = Harness("spool-lock")
        harness.configure(Self.unanswered)
        let first = try await harness.startDaemonAndWait()
        harness.directory.write("second.conf", """
            [Spool]
            Directory=spool
            [State]
            Database=state2/orders.db
            [Control]
            Socket=run2/control.sock
            \(Self.unanswered)
            """)
        let notify = try DatagramListener(path: harness.directory.file("notify.sock"))
        defer { notify.close() }
        let second = try ChildProcess(
            "reconciled", arguments: ["--config", harness.directory.file("second.conf")], environment: ["NOTIFY_SOCKET": notify.path],
            directory: harness.directory, label: "second")
        #expect(await second.wait() == 1)
        let lock = harness.directory.file("spool/reconciled.lock")
        #expect(second.standardError.contains("reconciled (pid \(first.pid)) holds the spool lock \(lock); only one daemon may use a spool"), "\(second.standardError)")
        #expect(await eventually(timeout: .seconds(5)) { notify.datagrams.contains { $0.text.contains("STATUS=cannot start: reconciled (pid \(first.pid)) holds the spool lock") } })
        // Refused before it touched its own store: the spool's lock is taken first, so neither
        // the store (nor its lock file or directory) was created, let alone migrated.
        #expect(!FileManager.default.fileExists(atPath: harness.directory.file("state2/orders.db")), "the refused daemon created its store")
        #expect(!FileManager.default.fileExists(atPath: harness.directory.file("state2")), "the refused daemon created its state directory")
        #expect(first.isRunning)
        first.send(SIGTERM)
        #expect(await first.wait() == 0)
    }

    @Test("10,000 bad files: every reason kept, the err lines within the journal's budget, with a suppressed-N summary")
    func flood() async throws {
        let harness = Harness("flood")
        harness.configure(Self.unanswered)
        let count = 10_000
        // Straight into incoming/ (no daemon runs yet), without FileManager's atomic writes: fast.
        let incoming = harness.directory.file("spool/incoming")
        for index in 0..<count {
            let descriptor = open("\(incoming)/bad-\(index).json", O_WRONLY | O_CREAT | O_EXCL, 0o640)
            precondition(descriptor >= 0)
            _ = "not json \(index)".withCString { write(descriptor, $0, strlen($0)) }
            close(descriptor)
        }
        let started = ContinuousClock.now
        defer { print("flood: \(count) bad files handled in \(ContinuousClock.now - started) (with up to 10 s to wait for the last summary)") }
        let daemon = try ChildProcess("reconciled", arguments: ["--config", harness.configPath], directory: harness.directory)
        #expect(await eventually(timeout: .seconds(240), every: .milliseconds(200)) { harness.directory.list("spool/incoming").isEmpty })
        let elapsed = ContinuousClock.now - started
        // The last window's summary comes when it ends (at most 10 s later), without a record
        // to bring it: every rejection is then either logged or counted.
        func accounted() -> Int {
            let lines = daemon.standardError.split(separator: "\n")
            let logged = lines.filter { $0.contains("rejected spool file") }.count
            let counted = lines.filter { $0.contains("suppressed") && $0.contains("\"file-rejected\" messages") }.compactMap { line in
                line.split(separator: " ").firstIndex(of: "suppressed").map { Int(line.split(separator: " ")[$0 + 1]) ?? 0 }
            }
            return logged + counted.reduce(0, +)
        }
        #expect(await eventually(timeout: .seconds(30), every: .milliseconds(200)) { accounted() == count }, "\(accounted()) of \(count)")
        daemon.send(SIGTERM)
        #expect(await daemon.wait() == 0)
        let reasons = harness.directory.list("spool/rejected").filter { $0.hasSuffix(".reason") }
        #expect(reasons.count == count, "every rejected file keeps its reason")

        let lines = daemon.standardError.split(separator: "\n")
        let rejections = lines.filter { $0.contains("rejected spool file") }
        let windows = Int(elapsed.components.seconds / 10) + 2
        // journald's limit for the unit: 2000 lines per 10 s; the daemon's own: 200 per kind.
        #expect(lines.count <= 2000 * windows && rejections.count <= 200 * windows, "\(lines.count) lines, \(rejections.count) rejections in \(elapsed)")
        let suppressed = lines.filter { $0.contains("suppressed") && $0.contains("\"file-rejected\" messages") }
        #expect(!suppressed.isEmpty, "\(lines.suffix(5))")
        let counted = suppressed.compactMap { line in line.split(separator: " ").firstIndex(of: "suppressed").map { Int(line.split(separator: " ")[$0 + 1]) ?? 0 } }
        #expect(counted.reduce(0, +) + rejections.count == count, "every rejection is either logged or counted")
        #expect(lines.contains { $0.contains("accepted 0 new orders from 10000 spool files (10000 rejected)") })
    }
}
