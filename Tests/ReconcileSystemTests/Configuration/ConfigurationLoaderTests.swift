import Foundation
import ReconcileCore
import Testing
import TestSupport
@testable import ReconcileSystem

@Suite("Configuration loader")
struct ConfigurationLoaderTests {
    let directory = TemporaryDirectory(prefix: "config")
    let main = "[Verifier]\nKind=http\nURL=https://merchant.example/verify\n[Retry]\nMaxAttempts=5\n"

    @Test("--config wins over RECONCILE_CONFIG, which wins over the default")
    func pathPrecedence() {
        #expect(ConfigurationLoader.path(commandLine: "/a.conf", environment: ["RECONCILE_CONFIG": "/b.conf"]) == "/a.conf")
        #expect(ConfigurationLoader.path(commandLine: nil, environment: ["RECONCILE_CONFIG": "/b.conf"]) == "/b.conf")
        #expect(ConfigurationLoader.path(commandLine: nil, environment: [:]) == "/etc/reconciled/reconciled.conf")
    }

    @Test("drop-ins apply in lexical order; other files in the directory are ignored")
    func dropIns() throws {
        let path = directory.write("reconciled.conf", main)
        directory.write("reconciled.conf.d/20-b.conf", "[Retry]\nMaxAttempts=9\n")
        directory.write("reconciled.conf.d/10-a.conf", "[Retry]\nMaxAttempts=7\n[Spool]\nDirectory=spool\n")
        directory.write("reconciled.conf.d/30-c.conf.disabled", "[Retry]\nMaxAttempts=1\n")
        directory.write("reconciled.conf.d/.hidden.conf", "[Retry]\nMaxAttempts=2\n")
        let configuration = try ConfigurationLoader.load(path: path)
        #expect(configuration.retry.maxAttempts == 9)
        #expect(configuration.spool.directory == directory.file("reconciled.conf.d/spool"))
        #expect(configuration.sourcePaths.map { FileSystem.baseName(of: $0) } == ["reconciled.conf", "10-a.conf", "20-b.conf"])
    }

    @Test("a missing or unreadable file is a configuration error naming it")
    func missing() {
        do {
            _ = try ConfigurationLoader.load(path: directory.file("nope.conf"))
            Issue.record("loaded a missing file")
        } catch {
            #expect(error.description == "\(directory.file("nope.conf")): cannot read the file: No such file or directory")
        }
    }

    @Test("a file that is not UTF-8 is refused")
    func notUTF8() {
        let path = directory.write("bad.conf", bytes: [0x5B, 0xFF, 0x5D])
        #expect(throws: ConfigurationError.self) { _ = try ConfigurationLoader.load(path: path) }
    }

    @Test("a relative --config resolves against the working directory")
    func relative() {
        let absolute = ConfigurationLoader.absolute("etc/x.conf")
        #expect(absolute == FileManager.default.currentDirectoryPath + "/etc/x.conf")
    }

    @Test("the example configurations in etc/ are valid")
    func examples() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().path
        let local = try ConfigurationLoader.load(path: root + "/etc/reconciled.local.conf")
        #expect(local.spool.directory == root + "/run/spool")
        #expect(local.verifier.kind == .http)
        let production = try ConfigurationLoader.load(path: root + "/etc/reconciled.conf")
        #expect(production.verifier.kind == .apple)
        #expect(production.state.database == "/var/lib/reconciled/orders.db")
    }
}
