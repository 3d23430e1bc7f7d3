import Foundation
import Glibc
import Synchronization

/// A throwaway PostgreSQL server for the tests of the shared store: Debian's binaries
/// (`/usr/lib/postgresql/N/bin`, or `$RECONCILE_POSTGRES_BIN`), a cluster made by `initdb` in a
/// temporary directory and started by `pg_ctl`, listening on 127.0.0.1 on a free port and on a
/// unix socket in that directory, with `fsync` off for speed. Started once per test process, on
/// first use, and stopped when the process exits (a server left by a process that died is stopped
/// by the next one that starts).
///
/// PostgreSQL refuses to run as root: as root, the cluster belongs to and runs as the `postgres`
/// user the Debian package creates (else `nobody`), through `setpriv`. It runs niced, so that it
/// never takes the CPU from the timing-sensitive tests that run beside it.
///
/// Local (socket) connections are trusted; TCP connections need the superuser's ``password``.
public final class PostgreSQLTestServer: Sendable {
    /// The cluster's directory (data, socket, logs).
    public let directory: String
    public let port: Int
    /// The superuser.
    public let user = "reconcile"
    /// The superuser's password, for TCP connections.
    public let password: String
    /// The server's major version (`15`).
    public let version: Int
    let postmaster: pid_t

    /// Set to `1` (as CI does) to make the PostgreSQL tests fail, not skip, when no server can start.
    public static let requiredVariable = "RECONCILE_REQUIRE_POSTGRES"

    /// Set to 1, the server loads `pg_stat_statements`, and `reconcile-bench store-limit`
    /// prints the statements that took the server's time (a profile of the database's side).
    public static let statisticsVariable = "RECONCILE_PG_STAT_STATEMENTS"

    /// Whether ``statisticsVariable`` is set.
    public static var statementStatistics: Bool { ProcessInfo.processInfo.environment[statisticsVariable] == "1" }

    private init(directory: String, port: Int, password: String, version: Int, postmaster: pid_t) {
        self.directory = directory
        self.port = port
        self.password = password
        self.version = version
        self.postmaster = postmaster
    }

    /// The server's main process (its backends are its children).
    public var postmasterPID: pid_t { postmaster }

    /// The socket directory (libpq's `host` for a unix socket).
    public var socketDirectory: String { directory }

    /// A libpq URI for `database` through the unix socket (no password needed).
    public func socketURI(database: String) -> String {
        "postgresql:///\(database)?host=\(directory)&port=\(port)&user=\(user)"
    }

    /// A libpq URI for `database` over TCP on 127.0.0.1 (needs ``password``).
    public func tcpURI(database: String) -> String {
        "postgresql://\(user)@127.0.0.1:\(port)/\(database)"
    }

    // MARK: - The shared server

    private static let started: Result<PostgreSQLTestServer, PostgreSQLTestServerError> = {
        do {
            return .success(try start())
        } catch let error as PostgreSQLTestServerError {
            return .failure(error)
        } catch {
            return .failure(PostgreSQLTestServerError("\(error)"))
        }
    }()

    /// The process's server, started on first use.
    ///
    /// - Throws: why it could not start.
    public static func shared() throws -> PostgreSQLTestServer {
        try started.get()
    }

    /// Whether PostgreSQL tests should run: when the server is up, or when it could not start but
    /// ``requiredVariable`` says the tests must (they then fail with the reason). Otherwise the
    /// reason is printed, once, and the tests are skipped.
    public static let isEnabled: Bool = {
        switch started {
        case .success:
            return true
        case .failure(let error):
            if isRequired { return true }
            FileHandle.standardError.write(Data(
                "PostgreSQL tests skipped: \(error.reason) (set \(requiredVariable)=1 to make them fail instead)\n".utf8))
            return false
        }
    }()

    /// Whether ``requiredVariable`` is `1`.
    public static var isRequired: Bool {
        ProcessInfo.processInfo.environment[requiredVariable] == "1"
    }

    // MARK: - Starting

    private static func start() throws -> PostgreSQLTestServer {
        let began = ContinuousClock.now
        let binaries = try findBinaries()
        let account = try serverAccount()
        stopAbandonedServers()

        let directory = "/tmp/reconcile-pg-\(getpid())-\(UUID().uuidString.prefix(8).lowercased())"
        guard mkdir(directory, 0o700) == 0 else { throw PostgreSQLTestServerError("cannot create \(directory): \(String(cString: strerror(errno)))") }
        var serverStarted = false
        defer { if !serverStarted { try? FileManager.default.removeItem(atPath: directory) } }
        if let account { guard chown(directory, account.uid, account.gid) == 0 else {
            throw PostgreSQLTestServerError("cannot give \(directory) to \(account.name): \(String(cString: strerror(errno)))")
        } }

        let password = (0..<4).map { _ in String(UInt64.random(in: .min ... .max), radix: 16) }.joined()
        let passwordFile = directory + "/superuser-password"
        try write(password + "\n", to: passwordFile, owner: account)
        let data = directory + "/data"
        try run(
            binaries.directory + "/initdb",
            ["-D", data, "-U", "reconcile", "--pwfile=\(passwordFile)", "--auth-local=trust", "--auth-host=scram-sha-256",
             "-E", "UTF8", "--locale=C", "--no-sync", "--no-instructions"],
            as: account, in: directory, log: directory + "/initdb.log")
        try? FileManager.default.removeItem(atPath: passwordFile)

        var lastFailure = ""
        for _ in 0..<3 {
            let port = try LoopbackPort.free()
            let settings = """

                # reconcile tests
                listen_addresses = '127.0.0.1'
                port = \(port)
                unix_socket_directories = '\(directory)'
                fsync = off
                synchronous_commit = off
                full_page_writes = off
                shared_buffers = 32MB
                max_connections = 80
                timezone = 'UTC'
                log_min_messages = warning
                \(Self.statementStatistics ? "shared_preload_libraries = 'pg_stat_statements'" : "")

                """
            let configuration = try FileHandle(forWritingTo: URL(fileURLWithPath: data + "/postgresql.conf"))
            try configuration.seekToEnd()
            try configuration.write(contentsOf: Data(settings.utf8))
            try configuration.close()
            do {
                try run(
                    binaries.directory + "/pg_ctl", ["-D", data, "-l", directory + "/server.log", "-w", "-t", "90", "-s", "start"],
                    as: account, in: directory, log: directory + "/pg_ctl.log")
            } catch let error as PostgreSQLTestServerError {
                lastFailure = error.reason
                continue  // most likely another process took the port meanwhile
            }
            guard let pidText = try? String(contentsOfFile: data + "/postmaster.pid", encoding: .utf8),
                let postmaster = pidText.split(separator: "\n").first.flatMap({ pid_t($0) })
            else { throw PostgreSQLTestServerError("the server started, but \(data)/postmaster.pid names no process") }
            let server = PostgreSQLTestServer(directory: directory, port: port, password: password, version: binaries.version, postmaster: postmaster)
            serverStarted = true
            running.withLock { $0 = (postmaster, directory) }
            atexit { PostgreSQLTestServer.stopAtExit() }
            let took = (ContinuousClock.now - began).formatted(.units(allowed: [.seconds], fractionalPart: .show(length: 1)))
            FileHandle.standardError.write(Data("PostgreSQL \(binaries.version) test server started in \(took): \(directory), 127.0.0.1:\(port)\n".utf8))
            return server
        }
        throw PostgreSQLTestServerError("pg_ctl could not start the server: \(lastFailure)")
    }

    /// initdb, pg_ctl and postgres of the newest version installed.
    private static func findBinaries() throws -> (directory: String, version: Int) {
        let needed = ["initdb", "pg_ctl", "postgres"]
        func complete(_ directory: String) -> Bool {
            needed.allSatisfy { FileManager.default.isExecutableFile(atPath: directory + "/" + $0) }
        }
        if let directory = ProcessInfo.processInfo.environment["RECONCILE_POSTGRES_BIN"] {
            guard complete(directory) else {
                throw PostgreSQLTestServerError("RECONCILE_POSTGRES_BIN=\(directory) does not hold \(needed.joined(separator: ", "))")
            }
            return (directory, 0)
        }
        let root = "/usr/lib/postgresql"
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []).compactMap(Int.init).sorted(by: >)
        guard let version = versions.first(where: { complete("\(root)/\($0)/bin") }) else {
            throw PostgreSQLTestServerError("no PostgreSQL server binaries under \(root)/*/bin (Debian: apt-get install postgresql)")
        }
        return ("\(root)/\(version)/bin", version)
    }

    /// Who runs the server: as root, `postgres` (else `nobody`); otherwise the current user (`nil`).
    private static func serverAccount() throws -> Account? {
        guard geteuid() == 0 else { return nil }
        for name in ["postgres", "nobody"] {
            if let entry = getpwnam(name) { return Account(name: name, uid: entry.pointee.pw_uid, gid: entry.pointee.pw_gid) }
        }
        throw PostgreSQLTestServerError("running as root, and there is neither a postgres nor a nobody user to run the server as")
    }

    struct Account {
        var name: String
        var uid: uid_t
        var gid: gid_t
    }

    /// Runs a server program (as `account`, through setpriv) to its end, its output in `log`.
    ///
    /// posix_spawn, not Foundation's Process: Process notices its child's end when a socket the
    /// child inherited closes, and the server that `pg_ctl start` leaves running would hold it
    /// open. The child gets no descriptor of ours but its standard streams, and a clean
    /// environment (no sanitizer preloads, no PG* variables).
    private static func run(_ program: String, _ arguments: [String], as account: Account?, in directory: String, log: String) throws {
        // Niced: the server and its backends yield the CPU to the test process, whose other
        // suites (running meanwhile) measure time.
        let nice = ["/usr/bin/nice", "-n", "10"]
        let command = nice + (account.map { ["/usr/bin/setpriv", "--reuid=\($0.uid)", "--regid=\($0.gid)", "--clear-groups", "--", program] } ?? [program])
        let argv: [UnsafeMutablePointer<CChar>?] = (command + arguments).map { strdup($0) } + [nil]
        let environment = ["PATH=/usr/bin:/bin", "LANG=C", "LC_ALL=C", "HOME=\(directory)", "TZ=UTC"]
        let envp: [UnsafeMutablePointer<CChar>?] = environment.map { strdup($0) } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        let output = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard output >= 0 else { throw PostgreSQLTestServerError("cannot create \(log): \(String(cString: strerror(errno)))") }
        defer { close(output) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, output, 1)
        posix_spawn_file_actions_adddup2(&actions, output, 2)
        // glibc's _np actions, which Swift's Glibc module hides (they need _GNU_SOURCE).
        guard let closeFrom = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np"),
            let changeDirectory = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addchdir_np")
        else { throw PostgreSQLTestServerError("this C library lacks posix_spawn_file_actions_addclosefrom_np or _addchdir_np (glibc ≥ 2.34 has them)") }
        typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
        typealias ChangeDirectory = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, UnsafePointer<CChar>) -> Int32
        _ = unsafeBitCast(closeFrom, to: CloseFrom.self)(&actions, 3)
        _ = unsafeBitCast(changeDirectory, to: ChangeDirectory.self)(&actions, directory)
        var child: pid_t = 0
        let spawned = posix_spawn(&child, command[0], &actions, nil, argv, envp)
        guard spawned == 0 else { throw PostgreSQLTestServerError("cannot run \(command[0]): \(String(cString: strerror(spawned)))") }
        var status: Int32 = 0
        while waitpid(child, &status, 0) < 0 && errno == EINTR {}
        let exited = status & 0x7f == 0
        let code = (status >> 8) & 0xff
        guard exited, code == 0 else {
            let said = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            let serverLog = (try? String(contentsOfFile: directory + "/server.log", encoding: .utf8)) ?? ""
            let tail = (said + serverLog).split(separator: "\n").suffix(6).joined(separator: " | ")
            let how = exited ? "status \(code)" : "signal \(status & 0x7f)"
            throw PostgreSQLTestServerError("\((program as NSString).lastPathComponent) failed (\(how)): \(tail)")
        }
    }

    private static func write(_ text: String, to path: String, owner: Account?) throws {
        guard FileManager.default.createFile(atPath: path, contents: Data(text.utf8), attributes: [.posixPermissions: 0o600]) else {
            throw PostgreSQLTestServerError("cannot write \(path)")
        }
        if let owner { _ = chown(path, owner.uid, owner.gid) }
    }

    // MARK: - Stopping

    private static let running = Mutex<(postmaster: pid_t, directory: String)?>(nil)

    /// Stops the server (immediate shutdown: nothing in it is worth keeping) and removes its
    /// directory. Called at process exit.
    private static func stopAtExit() {
        guard let (postmaster, directory) = running.withLock({ $0 }) else { return }
        stop(postmaster: postmaster, directory: directory)
    }

    private static func stop(postmaster: pid_t, directory: String) {
        // Only the postmaster of this directory: a pid from a file may since name another process.
        let commandLine = (try? Data(contentsOf: URL(fileURLWithPath: "/proc/\(postmaster)/cmdline"))) ?? Data()
        let isOurs = String(decoding: commandLine, as: UTF8.self).contains(directory + "/data")
        if isOurs, kill(postmaster, SIGQUIT) == 0 {
            // Not our child (pg_ctl detached it): wait until it is gone.
            for _ in 0..<500 where kill(postmaster, 0) == 0 { usleep(10_000) }
        }
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Servers of test processes that died without stopping theirs (the directory names the pid).
    private static func stopAbandonedServers() {
        for name in (try? FileManager.default.contentsOfDirectory(atPath: "/tmp")) ?? [] where name.hasPrefix("reconcile-pg-") {
            let parts = name.split(separator: "-")
            guard parts.count >= 4, let owner = pid_t(parts[2]), owner != getpid() else { continue }
            guard kill(owner, 0) != 0 && errno == ESRCH else { continue }
            let directory = "/tmp/" + name
            let pidText = (try? String(contentsOfFile: directory + "/data/postmaster.pid", encoding: .utf8)) ?? ""
            if let postmaster = pidText.split(separator: "\n").first.flatMap({ pid_t($0) }), postmaster > 1 {
                stop(postmaster: postmaster, directory: directory)
            } else {
                try? FileManager.default.removeItem(atPath: directory)
            }
        }
    }
}
