import Foundation
import Glibc
import ReconcileCore
@testable import ReconcileStore
@testable import ReconcileSQLite
import Testing
import TestSupport

/// The built `reconciled` on a real spool: files dropped before it starts and while it runs,
/// stopped with SIGTERM and SIGKILL at different moments, restarted.
@Suite("End to end: spool ingest", .serialized)
struct IngestEndToEndTests {
    let directory = TemporaryDirectory(prefix: "e2e-ingest")

    var configPath: String { directory.file("reconciled.conf") }
    var incoming: String { directory.file("spool/incoming") }

    init() {
        directory.write(
            "reconciled.conf",
            """
            [Spool]
            Directory=spool
            [State]
            Database=state/orders.db
            [Verifier]
            Kind=http
            # Nothing listens here; verification is not what this test is about.
            URL=http://127.0.0.1:9/verify
            [Control]
            Socket=run/control.sock
            """)
        // As systemd-tmpfiles would before the first start.
        for name in ["tmp", "incoming"] {
            try! FileManager.default.createDirectory(atPath: directory.file("spool/\(name)"), withIntermediateDirectories: true)
        }
    }

    func start() throws -> ChildProcess {
        try ChildProcess("reconciled", arguments: ["--config", configPath, "--log-level", "debug"], directory: directory)
    }

    /// Places an order file the producer's way: tmp/, fsync-free for speed, rename into incoming/.
    func drop(_ name: String, _ text: String) {
        let temporary = directory.write("spool/tmp/\(name)", text)
        precondition(rename(temporary, incoming + "/" + name) == 0)
    }

    func dropGood(_ range: Range<Int>) {
        for index in range { drop(String(format: "order-%04d.json", index), OrderFixtures.orderJSON(String(format: "E%04d", index))) }
    }

    /// Ten kinds of bad file, `count` in all, named by `prefix`.
    func dropBad(_ count: Int, prefix: String) {
        let kinds = [
            "not json", "[1,2,3]", "{\"product_id\":\"p\"}", "{\"order_id\":\"bad id\",\"product_id\":\"p\"}",
            "{\"order_id\":\"X1\"}", "", "{\"order_id\":\"X2\",\"product_id\":\"p\",\"rec", "{\"order_id\":\"X3\",\"product_id\":7}",
            "{\"order_id\":\"X4\",\"product_id\":\"p\",\"receipt\":\"%%%\"}", "{\"a\":1,\"a\":2}",
        ]
        for index in 0..<count { drop("\(prefix)-\(index).json", kinds[index % kinds.count]) }
    }

    func incomingCount() -> Int { directory.list("spool/incoming").count }

    @Test("1,000 orders and 50 bad files, through SIGTERM, SIGKILL and restarts: each order stored once, incoming/ empty")
    func survivesStopsAndKills() async throws {
        // Before the first start.
        dropGood(0..<250)
        dropBad(10, prefix: "before")

        var daemon = try start()
        #expect(await eventually { incomingCount() == 0 }, "first start did not drain incoming/")
        // While it runs.
        dropGood(250..<500)
        dropBad(10, prefix: "running")
        #expect(await eventually { incomingCount() == 0 })
        daemon.send(SIGTERM)
        #expect(await daemon.wait() == 0, "SIGTERM: \(daemon.standardError)")

        // Files arriving while it is down, then a SIGKILL in the middle of ingesting them.
        dropGood(500..<800)
        dropBad(15, prefix: "down")
        daemon = try start()
        _ = await eventually(timeout: .seconds(5), every: .milliseconds(1)) { incomingCount() < 250 }
        daemon.send(SIGKILL)
        #expect(await daemon.wait() == 128 + SIGKILL)

        // A kill right after start-up, before it could do anything much.
        daemon = try start()
        daemon.send(SIGKILL)
        _ = await daemon.wait()

        daemon = try start()
        dropGood(800..<1000)
        dropBad(15, prefix: "last")
        #expect(await eventually { incomingCount() == 0 })
        daemon.send(SIGINT)
        #expect(await daemon.wait() == 0, "SIGINT: \(daemon.standardError)")

        // Once more, to show a restart with nothing new changes nothing. (SIGTERM only once it
        // has started: a signal before its handlers exist would kill it.)
        daemon = try start()
        #expect(await eventually(timeout: .seconds(20)) { daemon.standardError.contains("started:") })
        daemon.send(SIGTERM)
        #expect(await daemon.wait() == 0)

        let store = try SQLiteOrderStore(path: directory.file("state/orders.db"), mode: .readOnly)
        #expect(try store.countsByState() == [.pending: 1000])
        let ids = try store.withIDs()
        #expect(ids.count == 1000)
        #expect(Set(ids) == Set((0..<1000).map { String(format: "E%04d", $0) }))
        #expect(incomingCount() == 0)
        let rejected = directory.list("spool/rejected")
        let files = rejected.filter { !$0.hasSuffix(".reason") }
        #expect(files.count == 50)
        for file in files {
            let reason = directory.read("spool/rejected/\(file).reason")
            #expect(reason?.contains("\nreason: ") == true, "\(file) has no reason")
        }
        // Every order was created once: one "ingested" transition each.
        #expect(try store.transitionCount(reason: "ingested") == 1000)
    }

    @Test("a second daemon on the same state (another spool) exits non-zero, naming the lock")
    func secondDaemon() async throws {
        let first = try start()
        // Started: its store's lock is held (the file alone may be there a moment before).
        #expect(await eventually { first.standardError.contains("started:") }, "\(first.standardError)")
        // Its own spool, so that the store's lock refuses it (the spool's lock is taken first:
        // the same configuration would be refused by that one, SpoolHardeningEndToEndTests).
        directory.write(
            "second.conf",
            """
            [Spool]
            Directory=spool2
            [State]
            Database=state/orders.db
            [Verifier]
            Kind=http
            URL=http://127.0.0.1:9/verify
            [Control]
            Socket=run2/control.sock
            """)
        let second = try ChildProcess("reconciled", arguments: ["--config", directory.file("second.conf")], directory: directory, label: "second")
        let status = await second.wait()
        #expect(status == 1)
        #expect(second.standardError.contains("holds the lock \(directory.file("state/orders.db.lock"))"))
        #expect(second.standardError.contains("pid \(first.pid)"))
        first.send(SIGTERM)
        #expect(await first.wait() == 0)
    }

    @Test("a bad configuration exits 78 and names file, line and key")
    func badConfiguration() async throws {
        directory.write("bad.conf", "[Verifier]\nKind=http\nURL=https://m.example/v\nTimeout=ten seconds\n")
        let result = try await ChildProcess.run("reconciled", ["--config", directory.file("bad.conf")], directory: directory)
        #expect(result.status == 78)
        #expect(result.error.contains("\(directory.file("bad.conf")):4: [Verifier] Timeout=: \"ten seconds\" is not a time span"))
    }

    @Test("--help, --version and a wrong option")
    func commandLine() async throws {
        let help = try await ChildProcess.run("reconciled", ["--help"], directory: directory)
        #expect(help.status == 0)
        #expect(help.output.contains("USAGE: reconciled [--config PATH] [--log-level LEVEL]"))
        let version = try await ChildProcess.run("reconciled", ["--version"], directory: directory)
        #expect(version.output == ReconcileVersion.current + "\n")
        let wrong = try await ChildProcess.run("reconciled", ["--confg", "x"], directory: directory)
        #expect(wrong.status == 64)
        #expect(wrong.error.hasPrefix("Error: Unknown option '--confg'; did you mean '--config'?"))
    }
}

extension SQLiteOrderStore {
    /// Every stored order id.
    func withIDs() throws -> [String] {
        try withConnection { try $0.query("SELECT order_id FROM orders") { $0.string(0) } }
    }

    func transitionCount(reason: String) throws -> Int {
        try withConnection { Int(try $0.scalar("SELECT count(*) FROM transitions WHERE reason = ?", [.text(reason)]) ?? 0) }
    }
}
