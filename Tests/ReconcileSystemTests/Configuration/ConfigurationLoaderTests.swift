import Foundation
import Glibc
import ReconcileCore
import Synchronization
import Testing
import TestSupport
@testable import ReconcileSystem
import ReconcileFoundation

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

    /// Loads `path` on a thread of its own and gives up after `timeout`: a loader that blocks
    /// (opening a FIFO waits for a writer) must fail the test, not hang it. A FIFO it blocked on
    /// is then opened for writing and closed, which releases it.
    static func loadWithin(_ timeout: Duration, path: String, unblocking fifo: String?) async -> Result<Configuration, ConfigurationError>? {
        let result = Mutex<Result<Configuration, ConfigurationError>?>(nil)
        let thread = Thread {
            let loaded = Result { () throws(ConfigurationError) -> Configuration in try ConfigurationLoader.load(path: path) }
            result.withLock { $0 = loaded }
        }
        thread.start()
        _ = await eventually(timeout: timeout, every: .milliseconds(10)) { result.withLock { $0 != nil } }
        let seen = result.withLock { $0 }
        if seen == nil, let fifo {
            let writer = open(fifo, O_WRONLY | O_NONBLOCK | O_CLOEXEC)
            if writer >= 0 { close(writer) }
        }
        return seen
    }

    @Test("a drop-in (or main file) that is not a regular file is refused at once, naming it: a FIFO, a directory")
    func notRegularFile() async throws {
        let path = directory.write("reconciled.conf", main)
        try FileManager.default.createDirectory(atPath: directory.file("reconciled.conf.d"), withIntermediateDirectories: true)
        let fifo = directory.file("reconciled.conf.d/50-pipe.conf")
        #expect(mkfifo(fifo, 0o644) == 0)
        let loaded = await Self.loadWithin(.seconds(5), path: path, unblocking: fifo)
        guard case .failure(let error)? = loaded else {
            Issue.record(loaded == nil ? "loading blocked on the FIFO" : "a FIFO drop-in was read")
            return
        }
        #expect(error.description == "\(fifo): not a regular file (a FIFO); only regular files are read", "\(error)")
        unlink(fifo)

        try FileManager.default.createDirectory(atPath: directory.file("reconciled.conf.d/60-dir.conf"), withIntermediateDirectories: true)
        let directoryResult = await Self.loadWithin(.seconds(5), path: path, unblocking: nil)
        guard case .failure(let directoryError)? = directoryResult else {
            Issue.record("a directory drop-in was accepted")
            return
        }
        #expect(directoryError.description == "\(directory.file("reconciled.conf.d/60-dir.conf")): not a regular file (a directory); only regular files are read")

        let mainFIFO = directory.file("main.fifo")
        #expect(mkfifo(mainFIFO, 0o644) == 0)
        let mainResult = await Self.loadWithin(.seconds(5), path: mainFIFO, unblocking: mainFIFO)
        guard case .failure(let mainError)? = mainResult else {
            Issue.record(mainResult == nil ? "loading blocked on a FIFO as the main file" : "a FIFO main file was read")
            return
        }
        #expect(mainError.description.hasPrefix("\(mainFIFO): not a regular file (a FIFO)"))
    }

    @Test("a drop-in that is a symlink to a regular file is read; one to /dev/null masks it, as in systemd")
    func symlinkedDropIns() throws {
        let path = directory.write("reconciled.conf", main)
        let target = directory.write("elsewhere.conf", "[Retry]\nMaxAttempts=9\n")
        try FileManager.default.createDirectory(atPath: directory.file("reconciled.conf.d"), withIntermediateDirectories: true)
        #expect(symlink(target, directory.file("reconciled.conf.d/10-linked.conf")) == 0)
        #expect(try ConfigurationLoader.load(path: path).retry.maxAttempts == 9)
        #expect(symlink("/dev/null", directory.file("reconciled.conf.d/20-masked.conf")) == 0)
        #expect(try ConfigurationLoader.load(path: path).retry.maxAttempts == 9)
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
