import Foundation
import Glibc
import TestSupport
@testable import ReconcileStore
@testable import ReconcilePostgreSQL

/// A PostgreSQL server on a host of a ``TestNetwork``: Debian's binaries (as the test server
/// fixture finds them), a cluster made by `initdb` in a directory under `/tmp`, run as the
/// `postgres` user inside the host's namespace, listening on the host's private address (password
/// auth for the subnet) and on a unix socket in its directory (trusted: the test reads and
/// writes the database through it, from outside the namespaces).
final class NamespacedPostgreSQL: @unchecked Sendable {
    // @unchecked: used from one test at a time.
    let directory: String
    let address: String
    let port = 5432
    let user = "reconcile"
    let password: String
    let database = "reconcile"
    private let binaries: String

    /// The server's binaries: `$RECONCILE_POSTGRES_BIN`, else the newest `/usr/lib/postgresql/N/bin`.
    static let binaries: String? = {
        if let path = ProcessInfo.processInfo.environment["RECONCILE_POSTGRES_BIN"] { return path }
        let root = "/usr/lib/postgresql"
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []).compactMap(Int.init).sorted(by: >)
        return versions.first(where: { FileManager.default.isExecutableFile(atPath: "\(root)/\($0)/bin/pg_ctl") }).map { "\(root)/\($0)/bin" }
    }()

    /// Why no server can be made here, or `nil`.
    static let unavailable: String? = {
        guard let binaries, FileManager.default.isExecutableFile(atPath: binaries + "/pg_ctl") else {
            return "no PostgreSQL server under /usr/lib/postgresql (Debian: postgresql)"
        }
        guard getpwnam("postgres") != nil else { return "no postgres user to run the server as" }
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv") else { return "/usr/bin/setpriv is missing (Debian: util-linux)" }
        return nil
    }()

    /// Whether the tests on a namespaced server run: network namespaces are needed (else skipped, reason printed, unless
    /// `RECONCILE_REQUIRE_NETNS=1`), and PostgreSQL's server binaries (else skipped, unless
    /// `RECONCILE_REQUIRE_POSTGRES=1`, as in CI: then the test runs and fails saying why).
    static let isEnabled: Bool = {
        guard TestNetwork.isEnabled else { return false }
        guard let reason = NamespacedPostgreSQL.unavailable else { return true }
        if ProcessInfo.processInfo.environment[PostgreSQLTestServer.requiredVariable] == "1" { return true }
        FileHandle.standardError.write(
            Data("shared-store network test skipped: \(reason) (set \(PostgreSQLTestServer.requiredVariable)=1 to make it fail instead)\n".utf8))
        return false
    }()

    init(network: TestNetwork, host: String) throws {
        if let reason = Self.unavailable { throw HarnessError(reason) }
        binaries = Self.binaries!
        guard let account = getpwnam("postgres") else { throw HarnessError("no postgres user to run the server as") }
        let (uid, gid) = (account.pointee.pw_uid, account.pointee.pw_gid)
        Self.removeAbandoned(binaries: binaries, as: Self.asPostgresPrefix(uid: uid, gid: gid))
        directory = "/tmp/reconcile-netns-pg-\(getpid())"
        try? FileManager.default.removeItem(atPath: directory)
        guard mkdir(directory, 0o700) == 0, chown(directory, uid, gid) == 0 else { throw HarnessError("cannot make \(directory)") }
        address = network.address(host)
        password = String(UInt64.random(in: .min ... .max), radix: 36)
        let passwordFile = directory + "/superuser-password"
        guard FileManager.default.createFile(atPath: passwordFile, contents: Data((password + "\n").utf8), attributes: [.posixPermissions: 0o600]),
            chown(passwordFile, uid, gid) == 0
        else { throw HarnessError("cannot write \(passwordFile)") }
        let asPostgres = Self.asPostgresPrefix(uid: uid, gid: gid)
        let data = directory + "/data"
        guard SpawnedCommand.run(asPostgres + [
            binaries + "/initdb", "-D", data, "-U", user, "--pwfile=\(passwordFile)", "--auth-local=trust", "--auth-host=scram-sha-256",
            "-E", "UTF8", "--locale=C", "--no-sync",
        ], log: directory + "/initdb.log") == 0 else { throw HarnessError("initdb failed in \(directory)") }
        let settings = """

            listen_addresses = '\(address)'
            port = \(port)
            unix_socket_directories = '\(directory)'
            fsync = off
            synchronous_commit = off
            full_page_writes = off
            max_connections = 100
            timezone = 'UTC'

            """
        try append(settings, to: data + "/postgresql.conf")
        try append("host all all \(TestNetwork.subnet).0/24 scram-sha-256\n", to: data + "/pg_hba.conf")
        // Inside the host's namespace, so that it can bind the host's address.
        guard SpawnedCommand.run([TestNetwork.ip, "netns", "exec", network.namespace(host)] + asPostgres + [
            binaries + "/pg_ctl", "-D", data, "-l", directory + "/server.log", "-w", "-t", "60", "-s", "start",
        ], log: directory + "/pg_ctl.log") == 0 else {
            throw HarnessError("pg_ctl could not start the server: \((try? String(contentsOfFile: directory + "/server.log", encoding: .utf8)) ?? "")")
        }
        try connect(database: "postgres").execute("CREATE DATABASE \(database)")
    }

    /// Stops and removes the servers of test processes that died before they could.
    static func removeAbandoned(binaries: String, as prefix: [String]) {
        for name in (try? FileManager.default.contentsOfDirectory(atPath: "/tmp")) ?? [] where name.hasPrefix("reconcile-netns-pg-") {
            guard let pid = Int32(name.dropFirst("reconcile-netns-pg-".count)), kill(pid, 0) != 0, errno == ESRCH else { continue }
            _ = SpawnedCommand.run(prefix + [binaries + "/pg_ctl", "-D", "/tmp/\(name)/data", "-m", "immediate", "-w", "-t", "30", "stop"], log: "/dev/null")
            try? FileManager.default.removeItem(atPath: "/tmp/\(name)")
        }
    }

    /// A connection through the unix socket (no network, no password).
    func connect(database: String? = nil) throws -> PostgreSQLConnection {
        try PostgreSQLConnection(PostgreSQLConnectionOptions(
            uri: "postgresql:///\(database ?? self.database)?host=\(directory)&port=\(port)&user=\(user)", applicationName: "reconcile-netns-test"))
    }

    /// The URI the daemons use: the host's address, fast network time-outs.
    var uri: String {
        "postgresql://\(user)@\(address):\(port)/\(database)?connect_timeout=2&keepalives_idle=1&keepalives_interval=1&keepalives_count=2&tcp_user_timeout=3000"
    }

    /// Stops the server at once and removes its directory.
    func stop() {
        if let account = getpwnam("postgres") {
            _ = SpawnedCommand.run([
                "/usr/bin/setpriv", "--reuid=\(account.pointee.pw_uid)", "--regid=\(account.pointee.pw_gid)", "--clear-groups", "--",
                binaries + "/pg_ctl", "-D", directory + "/data", "-m", "immediate", "-w", "-t", "30", "stop",
            ], log: "/dev/null")
        }
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// What runs a command as the `postgres` user.
    private static func asPostgresPrefix(uid: uid_t, gid: gid_t) -> [String] {
        ["/usr/bin/setpriv", "--reuid=\(uid)", "--regid=\(gid)", "--clear-groups", "--"]
    }

    private func append(_ text: String, to path: String) throws {
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        try handle.seekToEnd()
        try handle.write(contentsOf: Data(text.utf8))
        try handle.close()
    }
}
