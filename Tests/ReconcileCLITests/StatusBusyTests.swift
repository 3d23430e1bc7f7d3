import Foundation
import Glibc
import ReconcileCore
import Testing
import TestSupport
@testable import ReconcileCLI
@testable import ReconcileSystem

@Suite("reconcilectl status when the daemon is busy", .serialized)
struct StatusBusyTests {
    @Test("every connection taken: status says the daemon runs but is busy, shows the store's counts, and exits 0, not 3")
    func busyIsNotDown() async throws {
        let fixture = try CLIFixture()
        let socket = fixture.directory.file("run/control.sock")
        // The held connections send nothing: a request time-out longer than any slow run of the
        // three commands below keeps the server from dropping them midway.
        let server = try ControlSocketServer(path: socket, requestTimeout: 300) { _, _ in #"{"v":1,"ok":true,"status":{}}"# }
        defer { server.stop() }
        var held: [Int32] = []
        defer { held.forEach { close($0) } }
        for _ in 0..<ControlSocketServer.maximumConnections { held.append(try ControlSocketClient.connect(socket)) }
        try #require(await eventually(every: .milliseconds(1)) { server.connectionCount == ControlSocketServer.maximumConnections })

        let text = fixture.run(["status"])
        #expect(text.status == 0, "\(text.err)")
        #expect(text.out.hasPrefix("reconciled is running but busy: too many connections; try again; the counts are the store's\n"), "\(text.out)")
        #expect(text.out.contains("escalated 2"))
        let json = fixture.run(["status", "--json"])
        #expect(json.status == 0)
        #expect(json.out.hasPrefix(#"{"version":1,"running":true,"busy":"too many connections; try again","#), "\(json.out)")

        // A write verb cannot be served either, and says so.
        let retry = fixture.run(["retry", "O-escalated"])
        #expect(retry.status == 1)
        #expect(retry.err == "Error: reconciled is running but busy: too many connections; try again\n")
    }
}
