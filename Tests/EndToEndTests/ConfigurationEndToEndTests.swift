import Foundation
import Glibc
import ReconcileCore
import Testing
import TestSupport

/// Configuration files that are not what they seem (issue 13): a drop-in that is a FIFO must not
/// hang anything that reads the configuration.
@Suite("End to end: configuration files", .serialized)
struct ConfigurationEndToEndTests {
    /// Opens `fifo` for writing and closes it, which releases a reader blocked in `open`.
    static func release(_ fifo: String) {
        let writer = open(fifo, O_WRONLY | O_NONBLOCK | O_CLOEXEC)
        if writer >= 0 { close(writer) }
    }

    @Test("a FIFO drop-in is refused, naming it, by check-config and by the daemon at start and on reload; SIGTERM still stops it")
    func fifoDropIn() async throws {
        let harness = Harness("fifo-dropin")
        harness.configure("[Verifier]\nKind=http\nURL=http://127.0.0.1:9/verify\n")
        try FileManager.default.createDirectory(atPath: harness.directory.file("reconciled.conf.d"), withIntermediateDirectories: true)
        let fifo = harness.directory.file("reconciled.conf.d/50-pipe.conf")
        #expect(mkfifo(fifo, 0o644) == 0)
        defer { Self.release(fifo) }
        let expected = "\(fifo): not a regular file (a FIFO); only regular files are read"

        let checked = try await ChildProcess.run(
            "reconcilectl", ["--config", harness.configPath, "check-config"], directory: harness.directory, timeout: .seconds(10))
        if checked.status == nil { Self.release(fifo) }
        #expect(checked.status == 78, "check-config: \(checked.status.map(String.init) ?? "blocked")")
        #expect(checked.error.contains(expected), "\(checked.error)")

        let refused = try harness.startDaemon()
        let status = await refused.wait(timeout: .seconds(10))
        if status == nil { Self.release(fifo) }
        #expect(status == 78, "reconciled at start: \(status.map(String.init) ?? "blocked")")
        #expect(refused.standardError.contains(expected), "\(refused.standardError)")

        // Without the FIFO the daemon starts; one appears; SIGHUP refuses it and the daemon
        // still stops on SIGTERM.
        #expect(unlink(fifo) == 0)
        let daemon = try await harness.startDaemonAndWait()
        #expect(mkfifo(fifo, 0o644) == 0)
        daemon.send(SIGHUP)
        let noticed = await eventually(timeout: .seconds(10)) { daemon.standardError.contains("reload refused: \(expected)") }
        if !noticed { Self.release(fifo) }
        #expect(noticed, "\(daemon.standardError.suffix(800))")
        let reload = try await ChildProcess.run(
            "reconcilectl", ["--config", harness.configPath, "reload", "--wait"], directory: harness.directory, timeout: .seconds(10))
        #expect(reload.status == 78, "reload --wait: \(reload.status.map(String.init) ?? "blocked")")
        #expect(reload.error.contains(expected))
        daemon.send(SIGTERM)
        let stopped = await daemon.wait(timeout: .seconds(10))
        #expect(stopped == 0, "SIGTERM after the reload: \(stopped.map(String.init) ?? "ignored")")
    }
}
