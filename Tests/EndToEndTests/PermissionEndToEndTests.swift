import Foundation
import Glibc
import ReconcileCore
import Testing
import TestSupport

/// An operator outside the daemon's group (issue 27's first day): told which directory refuses
/// and how to get in, never that the store does not exist. Runs `reconcilectl` as `nobody`
/// through runuser(1), so it needs root.
@Suite("End to end: permission messages", .serialized, .enabled(if: getuid() == 0, "runs reconcilectl as another user: needs root"))
struct PermissionEndToEndTests {
    /// Runs the built reconcilectl as `nobody` on the harness's configuration.
    func asNobody(_ harness: Harness, _ arguments: [String]) async throws -> (status: Int32?, output: String, error: String) {
        try await ChildProcess.run(
            "reconcilectl", ["--config", harness.configPath] + arguments, directory: harness.directory,
            wrapper: ["/usr/sbin/runuser", "-u", "nobody", "--"])
    }

    @Test("the socket's and the store's directories name themselves, their group and the usermod to run")
    func outsideTheGroup() async throws {
        let harness = Harness("permissions")
        try await harness.startMock()
        harness.configure("[Verifier]\nKind=http\nURL=\(harness.base)/merchant/verify\nMaxRate=infinity")
        harness.dropOrder("P1")
        let daemon = try await harness.startDaemonAndWait()
        #expect(await harness.waitFor(.finished, count: 1))
        // The layout of the packaged daemon: the configuration readable, the store's and the
        // socket's directories 0750 in a group nobody is not in.
        let group = "daemon"
        for (path, mode) in [(harness.directory.path, 0o755), (harness.configPath, 0o644), (harness.directory.file("state"), 0o750), (harness.directory.file("run"), 0o750)] {
            #expect(chmod(path, mode_t(mode)) == 0, "chmod \(path)")
        }
        let gid = try #require(getgrnam(group)).pointee.gr_gid
        for path in [harness.directory.file("state"), harness.directory.file("run")] { #expect(chown(path, 0, gid) == 0) }

        let status = try await asNobody(harness, ["status"])
        #expect(status.status == 1, "\(status.output) \(status.error)")
        #expect(
            status.error == "Error: cannot reach reconciled's control socket \(harness.directory.file("run/control.sock")): permission denied on the directory \(harness.directory.file("run")) (mode 0750, owner root, group daemon); members of the group daemon may: 'sudo usermod -aG daemon nobody', then log in again (or run this with sudo)\n",
            "\(status.error)")

        daemon.send(SIGTERM)
        #expect(await daemon.wait() == 0)
        // As systemd removes the unit's RuntimeDirectory= at stop.
        try FileManager.default.removeItem(atPath: harness.directory.file("run"))
        let list = try await asNobody(harness, ["list"])
        #expect(list.status == 1)
        #expect(!list.error.contains("no store"), "\(list.error)")
        #expect(
            list.error.hasPrefix("Error: cannot reach the store \(harness.directory.file("state/orders.db")): permission denied on the directory \(harness.directory.file("state")) (mode 0750, owner root, group daemon); members of the group daemon may"),
            "\(list.error)")
        let hold = try await asNobody(harness, ["hold", "P1"])
        #expect(hold.status == 1)
        #expect(hold.error.contains("permission denied on the directory \(harness.directory.file("state"))"), "\(hold.error)")
    }
}
