import Foundation
import Glibc
import ReconcileCore
import Testing
import TestSupport
@testable import ReconcileStore
@testable import ReconcilePostgreSQL
import ReconcileFoundation

/// Two daemons under one `[Daemon] Node=` on a shared store: the second is refused at start,
/// naming the host of the first and how long ago it heart-beat (each would otherwise take the
/// whole cluster's share of the limits, and `status` show one node); a restart of the first
/// after a crash, whose own heartbeat is still fresh, is not refused.
@Suite(
    "End to end: one node name, one daemon", .serialized,
    .enabled(if: PostgreSQLTestServer.isEnabled, "no PostgreSQL server (reason printed above)"))
struct SharedStoreNodeNameEndToEndTests {
    @Test("a second daemon under a live node's name is refused, naming its host; the crashed first restarts at once")
    func secondRefused() async throws {
        let server = try PostgreSQLTestServer.shared()
        let name = "e2e_node_\(UInt32.random(in: 0 ... .max))"
        let admin = try PostgreSQLConnection(PostgreSQLConnectionOptions(uri: server.socketURI(database: "postgres")))
        try admin.execute("CREATE DATABASE \(name)")
        admin.close()

        let harness = Harness("node-name")
        _ = harness.directory.write("shared-secret", "apple-s3cret\n")
        for daemon in ["one", "two"] {
            for folder in ["spool/tmp", "spool/incoming"] {
                try FileManager.default.createDirectory(atPath: harness.directory.file("\(daemon)/\(folder)"), withIntermediateDirectories: true)
            }
            harness.directory.write("\(daemon).conf", """
                [Spool]
                Directory=\(daemon)/spool
                [State]
                Database=\(server.socketURI(database: name))
                LeaseTime=4s
                [Control]
                Socket=\(daemon)/control.sock
                [Verifier]
                Kind=apple
                URL=http://127.0.0.1:9/verifyReceipt
                BundleID=com.example.app
                SharedSecretFile=\(harness.directory.file("shared-secret"))
                Timeout=2s
                [Daemon]
                Node=twin
                """)
        }
        func start(_ daemon: String) throws -> ChildProcess {
            try ChildProcess(
                "reconciled", arguments: ["--config", harness.directory.file("\(daemon).conf"), "--log-level", "info"],
                directory: harness.directory, label: daemon)
        }
        let one = try start("one")
        defer { if one.isRunning { one.send(SIGKILL) } }
        #expect(await eventually(timeout: .seconds(20)) { one.standardError.contains("started:") || !one.isRunning }, "\(one.standardError)")
        try #require(one.isRunning, "\(one.standardError)")
        // Its first heartbeat is in.
        #expect(await eventually(timeout: .seconds(10)) { (try? Self.nodes(server, name)) == 1 })

        let two = try start("two")
        defer { if two.isRunning { two.send(SIGKILL) } }
        let status = await two.wait(timeout: .seconds(30))
        #expect(status == ExitStatus.configuration, "\(two.standardError)")
        let host = ProcessInfo.processInfo.hostName
        #expect(two.standardError.contains("another reconciled runs as node twin on host \(host) (process \(one.pid)): its last heartbeat was "), "\(two.standardError)")
        #expect(two.standardError.contains("give each daemon its own [Daemon] Node="), "\(two.standardError)")
        #expect(one.isRunning)

        // The first crashes; started again at once (its heartbeat still fresh), it is not refused.
        one.send(SIGKILL)
        _ = await one.wait()
        let again = try start("one")
        defer { if again.isRunning { again.send(SIGKILL) } }
        let began = ContinuousClock.now
        #expect(await eventually(timeout: .seconds(20)) { again.standardError.contains("started:") || !again.isRunning }, "\(again.standardError)")
        #expect(again.isRunning, "\(again.standardError)")
        #expect(ContinuousClock.now - began < .seconds(5))
        again.send(SIGTERM)
        _ = await again.wait()
    }

    /// The nodes the store knows.
    static func nodes(_ server: PostgreSQLTestServer, _ database: String) throws -> Int64? {
        let connection = try PostgreSQLConnection(PostgreSQLConnectionOptions(uri: server.socketURI(database: database)))
        defer { connection.close() }
        return try connection.scalar("SELECT count(*) FROM nodes WHERE stopped_at IS NULL")
    }
}
