import Foundation
import Glibc
import ReconcileCore
import ReconcileFoundation
import ReconcileStore
import ReconcilePostgreSQL
import ReconcileSQLite
import TestSupport

/// The PostgreSQL half of `store-limit`: `pgbench` running `scripts/pgbench-store.sql` (the
/// `store` scenario's turn as multi-row statements) against the tests' throw-away server, its
/// seeding as one `INSERT … SELECT generate_series`, and our `PostgreSQLOrderStore` doing the
/// `store` scenario's seeding and turns on the same server.
enum StoreLimitPostgreSQL {
    /// The pgbench script, from the source tree this executable was built from.
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("scripts/pgbench-store.sql").path

    /// Our store on PostgreSQL seeds slowly today: both runs get at most this many orders.
    static let countLimit = 10_000

    static func measure(server: PostgreSQLTestServer, count: Int, receipt: String, into report: inout BenchmarkReport) throws {
        guard let pgbench = findPgbench() else {
            report.notes.append("postgresql: pgbench is not installed (postgresql-contrib, or /usr/lib/postgresql/N/bin)")
            return
        }
        guard FileManager.default.fileExists(atPath: script) else {
            report.notes.append("postgresql: \(script) is missing (pgbench needs the source tree)")
            return
        }
        let count = min(count, countLimit)
        for clients in [1, 4] {
            let run = try withDatabase(server) { database in
                try pgbenchRun(server: server, database: database, pgbench: pgbench, clients: clients, count: count, receipt: receipt)
            }
            if clients == 1 { report.add("postgresql pgbench: seeding", run.seedRate, "orders/s") }
            report.add("postgresql pgbench, \(clients) client\(clients == 1 ? "" : "s"): turns", run.rate, "orders/s")
            report.add("postgresql pgbench, \(clients) client\(clients == 1 ? "" : "s"): CPU", run.cpuPerOrder, "us/order")
            if let server = run.serverPerOrder {
                report.add("postgresql pgbench, \(clients) client\(clients == 1 ? "" : "s"): of which server", server, "us/order")
            }
        }
        let ours = try withDatabase(server) { database in
            try oursRun(server: server, database: database, count: count, receipt: receipt)
        }
        report.add("postgresql (ours): seeding", ours.seedRate, "orders/s")
        if let rate = ours.storeSeedRate { report.add("postgresql (ours): seeding, the store's ingest alone", rate, "orders/s") }
        if let (client, server) = ours.seedCPU {
            report.add("postgresql (ours): seeding CPU, this process", client, "us/order")
            report.add("postgresql (ours): seeding CPU, the server", server, "us/order")
        }
        report.add("postgresql (ours): turns", ours.rate, "orders/s")
        report.add("postgresql (ours): CPU", ours.cpuPerOrder, "us/order")
        if let server = ours.serverPerOrder { report.add("postgresql (ours): of which server", server, "us/order") }
        report.notes.append(
            "postgresql \(server.version): the tests' server (fsync=off, synchronous_commit=off), unix socket; pgbench -M prepared -f "
                + "scripts/pgbench-store.sql; \(BenchmarkReport.format(Double(count))) orders each, VACUUM (ANALYZE) after seeding; "
                + "CPU = server + pgbench (or this process)")
    }

    /// A fresh database on `server` with the store's schema, dropped afterwards.
    static func withDatabase<T>(_ server: PostgreSQLTestServer, _ body: (String) throws -> T) throws -> T {
        let database = "limit_\(getpid())_\(UInt32.random(in: 0...UInt32.max))"
        let admin = try PostgreSQLConnection(PostgreSQLConnectionOptions(uri: server.socketURI(database: "postgres")))
        try admin.execute("CREATE DATABASE \(database)")
        defer {
            try? admin.execute("DROP DATABASE IF EXISTS \(database) WITH (FORCE)")
            admin.close()
        }
        try PostgreSQLOrderStore(options: PostgreSQLConnectionOptions(uri: server.socketURI(database: database)), node: "limit").close()
        return try body(database)
    }

    static func pgbenchRun(
        server: PostgreSQLTestServer, database: String, pgbench: String, clients: Int, count: Int, receipt: String
    ) throws -> StoreLimitScenario.Run {
        let connection = try PostgreSQLConnection(PostgreSQLConnectionOptions(uri: server.socketURI(database: database)))
        defer { connection.close() }
        let dueAt = Date().addingTimeInterval(-60).epochMilliseconds
        let seedStart = ContinuousClock.now
        // What Seeding stores: the receipt, the file's bytes and (as its content hash) its text.
        try connection.execute(
            """
            BEGIN;
            INSERT INTO orders (order_id, product_id, state, receipt, raw, content_hash, received_at, updated_at, next_attempt_at)
            SELECT 'B' || g, 'gems', 'pending', '\(receipt)', convert_to(text, 'UTF8'), text, \(dueAt), \(dueAt), \(dueAt)
            FROM (SELECT g, '{"order_id":"B' || g || '","product_id":"gems","receipt":"\(receipt)"}' AS text
                  FROM generate_series(0, \(count - 1)) AS g) AS files;
            INSERT INTO transitions (order_ref, at, actor, from_state, to_state, reason, detail)
            SELECT id, \(dueAt), 'daemon', NULL, 'pending', 'received', 'spool file seed' FROM orders;
            COMMIT;
            """)
        let seedRate = Double(count) / (ContinuousClock.now - seedStart).inSeconds
        // Turns on a settled table: autovacuum would otherwise take the fresh rows on meanwhile.
        try connection.execute("VACUUM (ANALYZE) orders, transitions")

        // Each client's last turn leases orders it never finishes: one turn more than needed.
        let turns = (count + StoreLimitScenario.batch * clients - 1) / (StoreLimitScenario.batch * clients) + 1
        let log = "/tmp/reconcile-bench-pgbench-\(getpid()).log"
        defer { unlink(log) }
        let arguments = [
            pgbench, "-n", "-M", "prepared", "-f", script, "-c", String(clients), "-j", String(clients), "-t", String(turns),
            "-D", "held=0", "-D", "now=\(Date().epochMilliseconds)", "-D", "batch=\(StoreLimitScenario.batch)",
            "-h", server.socketDirectory, "-p", String(server.port), "-U", server.user, database,
        ]
        let serverCPU = ClusterScenario.databaseCPU(server)
        let childCPU = childrenCPUSeconds()
        let start = ContinuousClock.now
        let (status, latestCPU) = try spawnSampling(arguments, log: log) { ClusterScenario.databaseCPU(server) }
        let elapsed = (ContinuousClock.now - start).inSeconds
        let serverUsed = latestCPU.subtracting(serverCPU)
        let used = serverUsed + childrenCPUSeconds() - childCPU
        let output = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        guard status == 0 else { throw BenchmarkError("pgbench exited with \(status): \(output.suffix(800))") }
        let finished = Int(try connection.scalar("SELECT count(*) FROM orders WHERE state = 'finished'") ?? 0)
        guard finished >= count - StoreLimitScenario.batch * clients else {
            throw BenchmarkError("pgbench finished \(finished) of \(count) orders: \(output.suffix(800))")
        }
        return StoreLimitScenario.Run(
            seedRate: seedRate, rate: Double(finished) / elapsed, cpuPerOrder: used / Double(finished) * 1e6,
            serverPerOrder: serverUsed / Double(finished) * 1e6)
    }

    /// Our store on the same server: the `store` scenario's seeding and turns.
    static func oursRun(server: PostgreSQLTestServer, database: String, count: Int, receipt: String) throws -> StoreLimitScenario.Run {
        let store = try PostgreSQLOrderStore(options: PostgreSQLConnectionOptions(uri: server.socketURI(database: database)), node: "limit")
        defer { store.close() }
        let seedStart = ContinuousClock.now
        let seedServer = ClusterScenario.databaseCPU(server)
        let seedClient = RawClient.cpuSeconds()
        let inStore = try Seeding.insertOrders(into: store, count: count, at: Date().addingTimeInterval(-60), receipt: receipt)
        let seedRate = Double(count) / (ContinuousClock.now - seedStart).inSeconds
        let storeSeedRate = Double(count) / inStore.inSeconds
        let seedCPU = (
            client: (RawClient.cpuSeconds() - seedClient) / Double(count) * 1e6,
            server: ClusterScenario.databaseCPU(server).subtracting(seedServer) / Double(count) * 1e6
        )
        let connection = try PostgreSQLConnection(PostgreSQLConnectionOptions(uri: server.socketURI(database: database)))
        try connection.execute("VACUUM (ANALYZE) orders, transitions")
        connection.close()
        let serverCPU = ClusterScenario.databaseCPU(server)
        let (rate, cpuPerOrder) = try StoreScenario.turns(of: store, count: count)
        let serverUsed = ClusterScenario.databaseCPU(server).subtracting(serverCPU)
        if PostgreSQLTestServer.statementStatistics { try printStatementProfile(server: server, database: database) }
        return StoreLimitScenario.Run(
            seedRate: seedRate, rate: rate, cpuPerOrder: cpuPerOrder + serverUsed / Double(count) * 1e6,
            serverPerOrder: serverUsed / Double(count) * 1e6, seedCPU: seedCPU, storeSeedRate: storeSeedRate)
    }

    /// The statements that took the server's time in `database`, most first, from
    /// `pg_stat_statements` (``PostgreSQLTestServer/statisticsVariable``): calls, total and mean
    /// execution time, rows, and the statement's start.
    static func printStatementProfile(server: PostgreSQLTestServer, database: String) throws {
        let connection = try PostgreSQLConnection(PostgreSQLConnectionOptions(uri: server.socketURI(database: database)))
        defer { connection.close() }
        try connection.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        let rows = try connection.query(
            """
            SELECT calls, round(total_exec_time)::bigint, round((1000 * mean_exec_time)::numeric, 1)::text, rows,
                left(regexp_replace(query, '\\s+', ' ', 'g'), 90)
            FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
            ORDER BY total_exec_time DESC LIMIT 15
            """, format: .text
        ) { row in
            [row.string(0), row.string(1), row.string(2), row.string(3), row.string(4)]
        }
        print("   server's statements (pg_stat_statements): calls, total ms, mean us, rows, statement")
        for row in rows { print("   " + row.joined(separator: "\t")) }
    }

    static func findPgbench() -> String? {
        var candidates = ["/usr/bin/pgbench"]
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? []
        candidates += versions.compactMap(Int.init).sorted(by: >).map { "/usr/lib/postgresql/\($0)/bin/pgbench" }
        return candidates.first { access($0, X_OK) == 0 }
    }

    static func childrenCPUSeconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_CHILDREN.rawValue, &usage)
        return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
    }

    /// Runs `command` (output into `log`) and calls `sample` every 50 ms until it ends, keeping
    /// each process's latest CPU (a server backend that ends with the command is counted up to
    /// its last sample). Returns the exit status and the last samples merged.
    static func spawnSampling(_ command: [String], log: String, sample: () -> ProcessCPU) throws -> (Int32, ProcessCPU) {
        let argv: [UnsafeMutablePointer<CChar>?] = command.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        var child: pid_t = 0
        let spawned = posix_spawn(&child, command[0], &actions, nil, argv, environ)
        guard spawned == 0 else { throw BenchmarkError("cannot run \(command[0]): \(String(cString: strerror(spawned)))") }
        var latest = sample()
        var status: Int32 = 0
        while true {
            let result = waitpid(child, &status, WNOHANG)
            if result == child { break }
            if result < 0 && errno != EINTR { throw BenchmarkError("waitpid: \(String(cString: strerror(errno)))") }
            usleep(50_000)
            latest.seconds.merge(sample().seconds) { _, new in new }
        }
        return (status & 0x7f == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f), latest)
    }
}
