import Foundation
import Glibc
import ReconcileCore
import ReconcileFoundation
import ReconcileSystem
import Testing
import TestSupport
@testable import ReconcileDaemon

/// The daemon's parts run as one service group (issue 14): one that fails stops the daemon with
/// a clear line and exit status 1, the others stopped in reverse order, instead of running on
/// half-alive.
@Suite("Daemon lifecycle", .serialized)
struct DaemonLifecycleTests {
    let directory = TemporaryDirectory(prefix: "lifecycle")

    func daemon(_ capture: CapturingLogHandler) throws -> Daemon {
        directory.write("reconciled.conf", """
            [Spool]
            Directory=spool
            [State]
            Database=state/orders.db
            [Control]
            Socket=run/control.sock
            [Verifier]
            Kind=http
            URL=http://127.0.0.1:9/verify
            """)
        return try Daemon(
            configPath: directory.file("reconciled.conf"), environment: [:], logger: Logger(handler: capture, minimumLevel: .debug),
            notifier: SystemdNotifier(environment: [:]))
    }

    struct Broken: Error, CustomStringConvertible { var description: String { "the part broke" } }

    @Test("a part that fails stops the daemon: a crit line naming it, the other parts stopped, exit status 1")
    func failingPart() async throws {
        let capture = CapturingLogHandler()
        do {
            let daemon = try daemon(capture)
            // It fails once the daemon is up (its control socket is there): the others have started.
            let socket = directory.file("run/control.sock")
            let failing = TaskService("test part") {
                _ = await eventually { FileManager.default.fileExists(atPath: socket) }
                throw Broken()
            }
            let status = await daemon.run(signals: SignalStream([]), alongside: [failing])
            #expect(status == ExitStatus.failure)
        }
        let lines = capture.records.map(\.message)
        #expect(capture.records.contains { $0.level == .critical && $0.message.contains("test part failed: the part broke") }, "\(lines)")
        #expect(!lines.contains("stopped cleanly"))
        // The control socket was closed; a new daemon (its locks released with the old one) starts.
        #expect(!FileManager.default.fileExists(atPath: directory.file("run/control.sock")))
        let next = try self.daemon(CapturingLogHandler())
        let ending = TaskService("test part") {}
        #expect(await next.run(signals: SignalStream([]), alongside: [ending]) == ExitStatus.failure, "a part that just ends is a failure too")
    }
}
