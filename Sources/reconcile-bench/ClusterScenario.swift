import Foundation
import Glibc
import ReconcileCore
import ReconcileEngine
import ReconcileFoundation
import ReconcileHTTP
import ReconcileMock
import ReconcileStore
import ReconcileSystem
import ReconcileSQLite
import ReconcilePostgreSQL
import TestSupport

/// **cluster**: several schedulers sharing one PostgreSQL store (issue 15's benchmark). With the
/// mock answering after 50 ms and `MaxInFlight` fixed per node (so that the figure measures the
/// coordination, not this machine), orders/s with 1, 2, 3 and 4 nodes on one PostgreSQL beside
/// SQLite's single daemon; the p99 of claim turns and PostgreSQL's CPU. Then at 0 ms, orders/s
/// of SQLite and of PostgreSQL with one node, side by side.
///
/// Each node is the daemon's scheduler with a store (and connection) of its own, in this
/// process: what a node adds to the cluster is its store traffic, which this measures; spool,
/// control socket and journal are each node's own and not shared. PostgreSQL is the tests'
/// throw-away server (`initdb` in a temporary directory, `fsync` off, niced), so that the run
/// needs no set-up; skipped, saying why, where it cannot start.
enum ClusterScenario {
    static let name = "cluster"
    /// `MaxInFlight` per node.
    static let perNode = 10
    static let latency = 0.05

    @Sendable static func run(_ options: BenchmarkOptions) async throws -> BenchmarkReport {
        var report = BenchmarkReport(scenario: name)
        let server: PostgreSQLTestServer
        do {
            server = try PostgreSQLTestServer.shared()
        } catch {
            report.notes.append("skipped: no PostgreSQL server could start here (\(error))")
            return report
        }
        let service = MockService()
        let mock = try MockHTTPServer { service.handle($0) }
        defer { mock.stop() }
        let url = "http://127.0.0.1:\(mock.port)/merchant/verify"
        let transport = CurlTransport(maximumConnections: 256)
        var faults = MockFaults()
        faults.latency = .milliseconds(Int64(latency * 1000))
        service.setFaults(faults)

        // Enough orders for each run to last a few seconds at the ideal rate.
        let perNodeOrders = options.files ?? (options.quick ? 300 : 3_000)
        let ideal = Double(perNode) / latency
        var single = 0.0
        for nodes in 1...4 {
            let run = try await postgreSQL(server: server, nodes: nodes, count: perNodeOrders * nodes, url: url, transport: transport)
            if nodes == 1 { single = run.rate }
            let label = "postgresql, \(nodes) node\(nodes == 1 ? "" : "s")"
            overran(run, "\(label), 50 ms", &report)
            report.add("\(label), 50 ms", run.rate, "orders/s", target: options.quick ? "" : "ideal \(Int(ideal) * nodes)")
            if nodes > 1 {
                report.add("\(label): speed-up", run.rate / single, "x vs 1 node", target: options.quick || nodes < 4 ? "" : ">= 3.5")
            }
            report.add("\(label): claim turn p99", run.claimP99 * 1000, "ms")
            report.add("\(label): postgresql CPU", run.databaseCPU * 100, "% of one core")
        }
        let sqliteRate = try await sqlite(options, count: perNodeOrders, maxInFlight: perNode, url: url, transport: transport)
        report.add("sqlite, 1 daemon, 50 ms", sqliteRate, "orders/s", target: options.quick ? "" : "ideal \(Int(ideal))")

        service.setFaults(MockFaults())
        let fastCount = options.files ?? (options.quick ? 1_000 : 10_000)
        let fastSQLite = try await sqlite(options, count: fastCount, maxInFlight: 64, url: url, transport: transport)
        let fastPostgreSQL = try await postgreSQL(server: server, nodes: 1, count: fastCount, url: url, transport: transport, maxInFlight: 64)
        overran(fastPostgreSQL, "postgresql, 1 node, 0 ms", &report)
        report.add("sqlite, 1 daemon, 0 ms", fastSQLite, "orders/s")
        report.add("postgresql, 1 node, 0 ms", fastPostgreSQL.rate, "orders/s")
        report.add("postgresql, 1 node, 0 ms: claim turn p99", fastPostgreSQL.claimP99 * 1000, "ms")
        report.add("postgresql, 1 node, 0 ms: postgresql CPU", fastPostgreSQL.databaseCPU * 100, "% of one core")
        report.notes.append(
            "MaxInFlight=\(perNode) per node at 50 ms (64 at 0 ms), MaxRate=infinity, LeaseTime=8s; nodes are schedulers with a connection each, in this process")
        report.notes.append(
            "PostgreSQL \(server.version): the tests' server (fsync=off, synchronous_commit=off, niced) on loopback; SQLite: synchronous=FULL on \(options.baseDirectory)")
        report.notes.append("claim turn: one scheduler commit that claims (the outcomes in hand, then the claim), timed from the node")
        return report
    }

    /// Says in the report when a run's seeding outlasted its head start: its rate is then low.
    static func overran(_ run: Run, _ label: String, _ report: inout BenchmarkReport) {
        guard run.seedingOverran > 0 else { return }
        report.notes.append(
            "\(label): the seeding outlasted its head start by \(String(format: "%.2f", run.seedingOverran)) s; the rate is counted from when the orders fell due, so it reads low")
    }

    struct Run {
        var rate: Double
        var claimP99: Double
        /// PostgreSQL's CPU during the run, in cores.
        var databaseCPU: Double
        /// How long the seeding outlasted its head start, in seconds (0 when it did not): the
        /// nodes had orders to work on for less than the time the rate is counted over.
        var seedingOverran: Double
    }

    /// `count` orders in a fresh database, finished by `nodes` schedulers that each take
    /// `maxInFlight` (default ``perNode``) in flight.
    static func postgreSQL(
        server: PostgreSQLTestServer, nodes: Int, count: Int, url: String, transport: CurlTransport, maxInFlight: Int = perNode
    ) async throws -> Run {
        let database = "bench_\(getpid())_\(UInt32.random(in: 0...UInt32.max))"
        let admin = try PostgreSQLConnection(PostgreSQLConnectionOptions(uri: server.socketURI(database: "postgres")))
        try admin.execute("CREATE DATABASE \(database)")
        defer {
            try? admin.execute("DROP DATABASE IF EXISTS \(database) WITH (FORCE)")
            admin.close()
        }
        let options = PostgreSQLConnectionOptions(uri: server.socketURI(database: database), applicationName: "reconcile-bench")
        let leaseTime = Duration.seconds(8)
        var stores: [TimedStore] = []
        var schedulers: [Scheduler] = []
        for index in 0..<nodes {
            let store = TimedStore(try PostgreSQLOrderStore(options: options, node: "bench-\(index)"))
            stores.append(store)
            var settings = schedulerSettings(url: url, transport: transport, maxInFlight: maxInFlight * nodes)
            settings.leaseTime = leaseTime
            schedulers.append(Scheduler(store: store, settings: settings, senders: senders(url: url, transport: transport), logger: .discarding, clock: SystemClock()))
        }
        defer { for store in stores { (store.base as? PostgreSQLOrderStore)?.close() } }
        let loops = schedulers.map { scheduler in Task { await scheduler.run() } }
        // Every node counts every other (and has waited out its joining hold) before orders come.
        let deadline = ContinuousClock.now + .seconds(30)
        while true {
            var ready = 0
            for scheduler in schedulers where await scheduler.status().cluster?.liveNodes == nodes { ready += 1 }
            if ready == nodes { break }
            guard ContinuousClock.now < deadline else { throw BenchmarkError("the \(nodes) nodes did not see each other within 30 s") }
            try await Task.sleep(for: .milliseconds(50))
        }
        let interval = ClusterTiming(leaseTime: leaseTime).heartbeatInterval.inSeconds
        // Due a little after the next heartbeats and after the seeding (which commits in batches
        // of 5,000, each visible to the nodes at once, and on a busy machine has gone at fewer
        // than 1,000 orders a second): each node sleeps until they are due.
        let due = Date().addingTimeInterval(interval * 2 + 0.5 + Double(count) / 400)
        let seeder = try PostgreSQLOrderStore(options: options, node: "bench-seed")
        try Seeding.insertOrders(into: seeder, count: count, at: due)
        seeder.close()
        if PostgreSQLTestServer.statementStatistics {
            // From here on: the nodes' statements only, printed when they are done.
            try admin.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements; SELECT pg_stat_statements_reset()")
        }
        let startCPU = databaseCPU(server)
        // Timed from the moment the orders fell due, never from later: had the seeding outlasted
        // its head start, the nodes would have begun before a clock started after it (a run once
        // showed 4 nodes above their ideal rate that way).
        let headStartLeft = due.timeIntervalSinceNow
        let start = ContinuousClock.now.advanced(by: .milliseconds(Int64(headStartLeft * 1000)))
        if start > ContinuousClock.now { try await Task.sleep(until: start) }
        while true {
            var finished = 0
            for scheduler in schedulers { finished += await scheduler.status().counters.finished }
            if finished >= count { break }
            guard ContinuousClock.now - start < .seconds(600) else { throw BenchmarkError("\(finished) of \(count) orders finished in 10 minutes") }
            try await Task.sleep(for: .milliseconds(10))
        }
        let elapsed = (ContinuousClock.now - start).inSeconds
        let cpu = databaseCPU(server).subtracting(startCPU)
        if PostgreSQLTestServer.statementStatistics {
            print("   \(nodes) node\(nodes == 1 ? "" : "s"), \(maxInFlight) in flight each, \(count) orders:")
            try StoreLimitPostgreSQL.printStatementProfile(server: server, database: database)
        }
        for scheduler in schedulers { await scheduler.stop(drainTimeout: .seconds(5)) }
        for loop in loops { await loop.value }
        let durations = stores.flatMap(\.claimDurations).sorted()
        let p99 = durations.isEmpty ? 0 : durations[min(durations.count - 1, Int(Double(durations.count) * 0.99))]
        return Run(rate: Double(count) / elapsed, claimP99: p99, databaseCPU: cpu / elapsed, seedingOverran: max(0, -headStartLeft))
    }

    /// SQLite's single daemon: `count` orders, `maxInFlight` in flight.
    static func sqlite(_ options: BenchmarkOptions, count: Int, maxInFlight: Int, url: String, transport: CurlTransport) async throws -> Double {
        let root = try options.makeDirectory(name)
        defer { try? FileManager.default.removeItem(atPath: root) }
        let store = try SQLiteOrderStore(path: root + "/orders.db", mode: .owner)
        try Seeding.insertOrders(into: store, count: count, at: Date().addingTimeInterval(-1))
        let scheduler = Scheduler(
            store: store, settings: schedulerSettings(url: url, transport: transport, maxInFlight: maxInFlight),
            senders: senders(url: url, transport: transport), logger: .discarding, clock: SystemClock())
        let start = ContinuousClock.now
        let loop = Task { await scheduler.run() }
        while await scheduler.status().counters.finished < count {
            try await Task.sleep(for: .milliseconds(10))
        }
        let elapsed = (ContinuousClock.now - start).inSeconds
        await scheduler.stop(drainTimeout: .seconds(5))
        await loop.value
        return Double(count) / elapsed
    }

    static func schedulerSettings(url: String, transport: CurlTransport, maxInFlight: Int) -> Scheduler.Settings {
        Scheduler.Settings(
            resolver: AttemptResolver(policy: RetryPolicy(Configuration.RetrySettings()), deliveryConfigured: false),
            maxInFlight: maxInFlight, maxRate: nil, burst: 10, circuitThreshold: 10, circuitCooldown: .seconds(5),
            circuitMaxCooldown: .seconds(300), requestTimeout: .seconds(3))
    }

    static func senders(url: String, transport: CurlTransport) -> Scheduler.Senders {
        Scheduler.Senders(verifier: MerchantVerifier(endpoint: EndpointSettings(url: url, timeout: .seconds(3)), transport: transport))
    }

    /// CPU seconds so far of the server's processes (the postmaster and its children), by pid.
    static func databaseCPU(_ server: PostgreSQLTestServer) -> ProcessCPU {
        var times: [Int32: Double] = [:]
        let postmaster = server.postmasterPID
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] {
            guard let pid = Int32(entry), let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
                let close = stat.lastIndex(of: ")")
            else { continue }
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            // After the command: ppid is field 4, utime 14, stime 15 (1-based in proc(5)).
            guard fields.count > 12, let parent = Int32(fields[1]), pid == postmaster || parent == postmaster,
                let user = Double(fields[11]), let system = Double(fields[12])
            else { continue }
            times[pid] = (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
        }
        return ProcessCPU(seconds: times)
    }
}

/// CPU seconds of a set of processes, by pid.
struct ProcessCPU {
    var seconds: [Int32: Double]

    /// The CPU used since `earlier`: a process started since counts whole; one that ended is lost.
    func subtracting(_ earlier: ProcessCPU) -> Double {
        seconds.reduce(0) { $0 + $1.value - (earlier.seconds[$1.key] ?? 0) }
    }
}
