import Foundation
import Glibc
import ReconcileCore
import ReconcileFoundation
import ReconcileMock
import Testing
import TestSupport
@testable import ReconcileStore
@testable import ReconcilePostgreSQL

/// Several hosts sharing one PostgreSQL store (issue 15's proof), made of network namespaces:
/// PostgreSQL on one host, the mock verifier on another, three daemons on three more, each with
/// its own spool. 10,000 orders over the three spools; mid-run one daemon is SIGKILLed and
/// another cut off (its link down) for longer than `LeaseTime`, then restored. Checked: every
/// order finished exactly once, every transaction claimed once, one Idempotency-Key per order at
/// the mock, the dead node's leases rescued within `LeaseTime` plus one wake, nothing written by
/// the cut-off node for an attempt whose lease was rescued (its late outcomes refused and
/// logged), and never more than `MaxRate` + `Burst` requests in any second at the mock. The
/// mock answers in 100 ms, so attempts stay in flight; the kill and the cut wait until the node
/// holds leases, and the test fails if the killed node held none or the cut-off node had none in
/// flight (it would prove nothing: one run passed "holding 0 leases, rescued 0.00–0.00 s").
///
/// Beside the orders, 240 Google Play purchases the phone never sent (DESIGN §5b) are published
/// to the Pub/Sub subscription all three nodes pull: each is kept once, becomes exactly one order
/// `google:<orderId>` after the grace (whichever node settles it), and is delivered once — the
/// messages node a pulled and never acknowledged come back to the others.
///
/// The daemons reach the mock over plain HTTP to a loopback address (the only place `http://`
/// may go): `socat` relays it on each daemon's host to the mock's host, where another relay
/// hands it to the mock on that host's loopback. Needs root, `iproute2` and `socat` (skipped,
/// the reason printed, unless `RECONCILE_REQUIRE_NETNS=1`) and PostgreSQL's server (skipped
/// unless `RECONCILE_REQUIRE_POSTGRES=1`, as `.ci/run` sets). About 80 s here (2 cores, shared);
/// `RECONCILE_SHARED_STORE_ORDERS` changes the 10,000 (at least 300).
@Suite(
    "End to end: three hosts sharing a PostgreSQL store", .serialized,
    .enabled(if: NamespacedPostgreSQL.isEnabled, "no network namespaces or no PostgreSQL (reason printed above)"))
struct SharedStoreEndToEndTests {
    /// 10,000 (issue 15's figure) unless `RECONCILE_SHARED_STORE_ORDERS` says otherwise.
    static let orders = ProcessInfo.processInfo.environment["RECONCILE_SHARED_STORE_ORDERS"].flatMap(Int.init).map { max(300, $0) } ?? 10_000
    static let leaseTime = 6.0
    static let maxRate = 300
    static let burst = 30
    static let nodes = ["a", "b", "c"]
    static let mockLatencyMilliseconds = 100
    /// Purchases only Pub/Sub reports (DESIGN §5b), pulled by all three nodes.
    static let discovered = 240
    static let subscription = "projects/test-project/subscriptions/play-rtdn"
    static let package = "com.example.game"

    func configuration(node: String, directory: TemporaryDirectory, database: NamespacedPostgreSQL) -> String {
        """
        [Spool]
        Directory=\(node)/spool
        [State]
        Database=\(database.uri)
        PasswordFile=\(directory.file("db-password"))
        LeaseTime=\(Int(Self.leaseTime))s
        [Control]
        Socket=\(node)/control.sock
        [Verifier]
        Kind=apple
        URL=http://127.0.0.1:8787/verifyReceipt
        BundleID=com.example.app
        SharedSecretFile=\(directory.file("shared-secret"))
        Timeout=2s
        MaxInFlight=48
        MaxRate=\(Self.maxRate)
        Burst=\(Self.burst)
        CircuitThreshold=10
        CircuitCooldown=500ms
        CircuitMaxCooldown=2s
        [Delivery]
        URL=http://127.0.0.1:8787/deliver
        Timeout=2s
        [Retry]
        InitialDelay=100ms
        Multiplier=2
        MaxDelay=1s
        Jitter=none
        MaxAttempts=100
        [GooglePlay]
        PackageName=\(Self.package)
        ServiceAccountFile=\(directory.file("play-key.json"))
        URL=http://127.0.0.1:8787/googleplay
        TokenURL=http://127.0.0.1:8787/googleplay/token
        Subscription=\(Self.subscription)
        PubSubURL=http://127.0.0.1:8787/pubsub
        Timeout=2s
        [Discovery]
        Mode=deliver
        Grace=1s
        [Daemon]
        Node=node-\(node)
        DrainTimeout=2s
        """
    }

    /// The Play purchases only Pub/Sub reports: registered with the mock (each with its order id
    /// and account), and one `ONE_TIME_PRODUCT_PURCHASED` message each, published.
    static func publishDiscovered(_ socketPath: String) throws {
        var purchases: [String] = []
        var messages: [String] = []
        for index in 0..<discovered {
            let token = "disc\(index).AO-J1Oz" + String(repeating: "x", count: 40)
            purchases.append(
                #"{"token":"\#(token)","package":"\#(package)","product":"gems","orderId":"GPA.5000-0000-0000-\#(String(format: "%05d", index))","obfuscatedExternalAccountId":"acct-\#(index)"}"#)
            let notification = #"{"version":"1.0","packageName":"\#(package)","eventTimeMillis":"1","oneTimeProductNotification":{"version":"1.0","notificationType":1,"purchaseToken":"\#(token)","sku":"gems"}}"#
            messages.append(#"{"json":\#(notification),"messageId":"d-\#(index)"}"#)
        }
        _ = try mockRequest(socketPath, method: "POST", path: "/_mock/googleplay/purchases", body: #"{"purchases":[\#(purchases.joined(separator: ","))]}"#)
        _ = try mockRequest(
            socketPath, method: "POST", path: "/_mock/pubsub/publish",
            body: #"{"subscription":"\#(subscription)","messages":[\#(messages.joined(separator: ","))]}"#)
    }

    @Test("10,000 orders on three hosts; one SIGKILLed, one cut off past LeaseTime: each order finished once, rescued in time, no late write, the rate kept")
    func threeHosts() async throws {
        if let reason = TestNetwork.unavailable { Issue.record("\(reason)"); return }
        if let reason = NamespacedPostgreSQL.unavailable { Issue.record("\(reason)"); return }
        let began = ContinuousClock.now
        let directory = TemporaryDirectory(prefix: "e2e-netns")
        let network = try TestNetwork()
        var processes: [Process] = []
        var daemons: [String: ChildProcess] = [:]
        var database: NamespacedPostgreSQL?
        defer {
            for daemon in daemons.values where daemon.isRunning { daemon.send(SIGKILL) }
            for process in processes where process.isRunning { kill(process.processIdentifier, SIGKILL) }
            database?.stop()
            network.tearDown()
        }
        try network.addHost("db", number: 2)
        let mockAddress = try network.addHost("mock", number: 3)
        for (index, node) in Self.nodes.enumerated() { try network.addHost(node, number: 11 + index) }

        let postgres = try NamespacedPostgreSQL(network: network, host: "db")
        database = postgres
        _ = directory.write("db-password", postgres.password + "\n")
        _ = directory.write("shared-secret", "s3cret\n")
        _ = directory.write("play-key.json", try await TestServiceAccount.make().json)

        // The mock on its host's loopback, relayed to its address and (for the stats) to a unix
        // socket the test reads.
        // Each answer takes 100 ms: attempts stay in flight, so a node killed or cut off holds
        // leases (answered at once, a node could hold none at the moment and test nothing).
        let mock = try ChildProcess(
            "reconcile-mock",
            arguments: [
                "--port", "8787", "--idle-exit", "120s", "--lifetime", "10min", "--faults", #"{"latency_ms": \#(Self.mockLatencyMilliseconds)}"#,
                "--googleplay-key", directory.file("play-key.json"), "--pubsub-ack-deadline", "3",
            ],
            directory: directory, label: "mock",
            wrapper: network.wrapper("mock"))
        let statsSocket = directory.file("mock.sock")
        processes.append(try network.spawn(
            "mock", "/usr/bin/socat", ["TCP-LISTEN:8787,bind=\(mockAddress),fork,reuseaddr,backlog=512", "TCP:127.0.0.1:8787"],
            log: directory.file("relay-mock.log")))
        processes.append(try network.spawn(
            "mock", "/usr/bin/socat", ["UNIX-LISTEN:\(statsSocket),fork,unlink-early", "TCP:127.0.0.1:8787"], log: directory.file("relay-stats.log")))
        for node in Self.nodes {
            processes.append(try network.spawn(
                node, "/usr/bin/socat", ["TCP-LISTEN:8787,bind=127.0.0.1,fork,reuseaddr,backlog=512", "TCP:\(mockAddress):8787"],
                log: directory.file("relay-\(node).log")))
        }
        #expect(await eventually(timeout: .seconds(10)) { (try? Self.mockStats(statsSocket)) != nil }, "the mock does not answer: \(mock.standardError)")

        // Three daemons, one per host, each with its own spool.
        for node in Self.nodes {
            for folder in ["spool/tmp", "spool/incoming"] {
                try FileManager.default.createDirectory(atPath: directory.file("\(node)/\(folder)"), withIntermediateDirectories: true)
            }
            _ = directory.write("\(node).conf", configuration(node: node, directory: directory, database: postgres))
            daemons[node] = try ChildProcess(
                "reconciled", arguments: ["--config", directory.file("\(node).conf"), "--log-level", "info"], directory: directory,
                label: "node-\(node)", wrapper: network.wrapper(node))
        }
        let connection = try postgres.connect()
        func scalar(_ sql: String) -> Int { Int((try? connection.scalar(sql)) ?? nil ?? -1) }
        let live = await eventually(timeout: .seconds(30), every: .milliseconds(200)) {
            scalar("SELECT count(*) FROM nodes WHERE stopped_at IS NULL AND last_heartbeat > (extract(epoch FROM clock_timestamp()) * 1000)::bigint - 3000") == 3
        }
        try #require(live, "three live nodes: \(daemons.mapValues(\.standardError))")
        // Every node has taken its 1/3 share, and says so.
        let shared = await eventually(timeout: .seconds(30), every: .milliseconds(100)) {
            Self.nodes.allSatisfy { daemons[$0]?.standardError.contains("live nodes on the shared store: 3 ") == true }
        }
        try #require(shared, "not every node took a third: \(daemons.mapValues { $0.standardError.suffix(1500) })")

        // 10,000 orders spread over the three spools: written first (the test's own work, not
        // timed), then moved into the spools at once.
        var moves: [(String, String)] = []
        for index in 0..<Self.orders {
            let node = Self.nodes[index % 3]
            let id = String(format: "N%05d", index)
            let temporary = directory.write("\(node)/spool/tmp/\(id).json", OrderFixtures.orderJSON(id, product: "gems", receipt: appleReceipt("T\(id)").base64))
            moves.append((temporary, directory.file("\(node)/spool/incoming/\(id).json")))
        }
        // Node a's first: its spool must be taken in before it dies (nothing brings it back),
        // and ingest shares each node's connection with its scheduler. The purchases only
        // Pub/Sub reports go out at the same time: node a pulls its share before it dies.
        let start = Date()
        try Self.publishDiscovered(statsSocket)
        for (from, to) in moves where to.contains("/a/spool/") { precondition(rename(from, to) == 0) }
        let aTakenIn = await eventually(timeout: .seconds(60), every: .milliseconds(50)) { directory.list("a/spool/incoming").isEmpty }
        try #require(aTakenIn, "node a did not take in its spool: \(daemons["a"]?.standardError.suffix(3000) ?? "")")
        for (from, to) in moves where !to.contains("/a/spool/") { precondition(rename(from, to) == 0) }
        let written = Date()
        // Mid-run: a fifth of the orders finished.
        let midRun = await eventually(timeout: .seconds(150), every: .milliseconds(100)) {
            scalar("SELECT count(*) FROM orders WHERE state = 'finished'") >= Self.orders / 5
        }
        let states = { (try? connection.query("SELECT state, count(*) FROM orders GROUP BY state ORDER BY 1") { "\($0.string(0)) \($0.int(1))" }) ?? [] }
        try #require(
            midRun,
            "the run did not get going: \(states()), spools \(Self.nodes.map { directory.list("\($0)/spool/incoming").count }); node a: \(daemons["a"]?.standardError.suffix(3000) ?? "")")
        print("node a's spool taken in after \(String(format: "%.1f", written.timeIntervalSince(start))) s; mid-run after \(String(format: "%.1f", Date().timeIntervalSince(start))) s: \(states())")

        // Node a dies, while it holds leases. Its leases, as it left them.
        let holding = { (node: String) in scalar("SELECT count(*) FROM orders WHERE lease_owner LIKE 'node-\(node)/%'") }
        let aHolds = await eventually(timeout: .seconds(10), every: .milliseconds(20)) { holding("a") >= 3 }
        #expect(aHolds, "node a never held 3 leases: \(states())")
        let dead = try #require(daemons["a"])
        dead.send(SIGKILL)
        let killedAt = Date()
        _ = await dead.wait(timeout: .seconds(5))
        let deadLeases = try connection.query(
            "SELECT order_id, leased_until FROM orders WHERE lease_owner LIKE 'node-a/%'") { ($0.string(0), Date(epochMilliseconds: $0.int64(1))) }
        // The point of the kill: leases to rescue.
        #expect(!deadLeases.isEmpty, "node a held no leases when it was killed: nothing to rescue, the rescue untested")
        // Node b is cut off for longer than LeaseTime, then comes back; while it has attempts in
        // flight.
        let bHolds = await eventually(timeout: .seconds(10), every: .milliseconds(20)) { holding("b") >= 3 }
        #expect(bHolds, "node b never held 3 leases: \(states())")
        try network.setLink("b", up: false)
        let cutAt = Date()
        let cutLeases = try connection.query("SELECT order_id FROM orders WHERE lease_owner LIKE 'node-b/%'") { $0.string(0) }
        #expect(!cutLeases.isEmpty, "node b had nothing in flight when it was cut off: no late outcome to refuse, the cut untested")
        // Meanwhile, when each of the dead node's leases is given back (a delivery's rescue
        // leaves no transition, so the lease itself is watched).
        var rescuedAt: [String: Date] = [:]
        /// Looks at the leases every 50 ms until `done` says enough.
        func watchRescues(until done: () -> Bool) async throws {
            while !done() {
                let held = Set(try connection.query("SELECT order_id FROM orders WHERE lease_owner LIKE 'node-a/%'") { $0.string(0) })
                let now = Date()
                for (orderID, _) in deadLeases where rescuedAt[orderID] == nil && !held.contains(orderID) { rescuedAt[orderID] = now }
                // real sleep: the sampling interval; the cut itself must outlast the real LeaseTime
                try await Task.sleep(for: .milliseconds(50))
            }
        }
        try await watchRescues { Date().timeIntervalSince(cutAt) >= Self.leaseTime + 4 }
        try network.setLink("b", up: true)
        let restoredAt = Date()
        try await watchRescues { rescuedAt.count >= deadLeases.count || Date().timeIntervalSince(killedAt) >= 60 }

        let done = await eventually(timeout: .seconds(120), every: .milliseconds(250)) {
            scalar("SELECT count(*) FROM orders WHERE state = 'finished'") == Self.orders + Self.discovered
        }
        let finishedAt = Date()
        #expect(done, "not every order finished: \(states())")

        // Every order finished exactly once, every transaction (one per receipt) claimed once,
        // by its own order.
        let all = Self.orders + Self.discovered
        #expect(scalar("SELECT count(*) FROM orders WHERE order_id NOT LIKE 'google:%'") == Self.orders)
        #expect(scalar("SELECT count(*) FROM transitions WHERE to_state = 'finished'") == all)
        #expect(scalar("SELECT count(DISTINCT order_ref) FROM transitions WHERE to_state = 'finished'") == all)
        #expect(scalar("SELECT count(*) FROM claims") == all)
        #expect(scalar("SELECT count(DISTINCT order_ref) FROM claims") == all)
        #expect(scalar(
            "SELECT count(*) FROM claims c JOIN orders o ON o.id = c.order_ref WHERE c.transaction_id <> CASE WHEN o.order_id LIKE 'google:%' THEN o.order_id ELSE 'T' || o.order_id END"
        ) == 0)
        // Each purchase Pub/Sub reported: kept once, exactly one order made of it (whichever node
        // settled it), that order finished.
        #expect(scalar("SELECT count(*) FROM discovered_purchases") == Self.discovered)
        #expect(scalar("SELECT count(*) FROM discovered_purchases d JOIN orders o ON o.id = d.order_ref WHERE d.status = 'became_order' AND o.order_id = d.transaction_key AND o.origin = 'store'") == Self.discovered)
        #expect(scalar("SELECT count(*) FROM orders WHERE order_id LIKE 'google:GPA.5000-%'") == Self.discovered)
        // Nothing written for an attempt whose lease had been rescued: no completion links an
        // attempt that began before a rescue of its order recorded earlier.
        let lateWrites = scalar(
            """
            SELECT count(*) FROM transitions c JOIN attempts a ON a.id = c.attempt_ref
            JOIN transitions r ON r.order_ref = c.order_ref AND r.reason = 'lease_expired' AND r.id < c.id AND r.at > a.started_at
            """)
        // Nor an attempt row for an attempt whose lease was rescued (a late retry may change no
        // state, so leave no transition): the rescued attempt is the last one claimed before the
        // rescue, and a rescue counts it, so it can have no row of its own.
        let lateAttempts = scalar(
            """
            SELECT count(*) FROM transitions r
            JOIN LATERAL (
                SELECT c.reason, c.detail FROM transitions c
                WHERE c.order_ref = r.order_ref AND c.id < r.id AND c.reason IN ('attempt', 'probe') ORDER BY c.id DESC LIMIT 1
            ) c ON c.reason = 'attempt'
            JOIN attempts a ON a.order_ref = r.order_ref AND a.kind = 'verify' AND a.number = substring(c.detail from 'attempt ([0-9]+)')::int
            WHERE r.reason = 'lease_expired'
            """)
        #expect(lateWrites == 0 && lateAttempts == 0, "late writes: \(lateWrites) transitions, \(lateAttempts) attempts")

        // The dead node's leases rescued within LeaseTime plus one wake, none before it ended
        // (a verification's rescue also recorded as a transition, on the database's clock).
        var rescueDelays: [Double] = []
        for (orderID, leasedUntil) in deadLeases {
            #expect(rescuedAt[orderID] != nil, "order \(orderID) of the dead node was never rescued")
            if let rescued = rescuedAt[orderID] { rescueDelays.append(rescued.timeIntervalSince(killedAt)) }
            let transition = try connection.queryFirst(
                "SELECT t.at FROM transitions t JOIN orders o ON o.id = t.order_ref WHERE o.order_id = $1 AND t.reason = 'lease_expired' ORDER BY t.id LIMIT 1",
                [.text(orderID)]) { Date(epochMilliseconds: $0.int64(0)) }
            if let transition { #expect(transition >= leasedUntil, "order \(orderID) rescued before its lease ended") }
        }
        let wake = ClusterTiming(leaseTime: .seconds(Int64(Self.leaseTime))).heartbeatInterval.inSeconds
        let slowestRescue = rescueDelays.max() ?? 0
        #expect(slowestRescue <= Self.leaseTime + wake + 1.0, "slowest rescue \(slowestRescue) s after the kill")

        // The cut-off node's late outcomes were refused, and said so.
        let nodeB = try #require(daemons["b"])
        let refusals = nodeB.standardError.components(separatedBy: "was lost; its outcome was not applied").count - 1
        let unreachable = nodeB.standardError.contains("the store is unreachable")
        #expect(unreachable, "node b never said the store was unreachable")
        // An attempt of node b's whose lease was rescued while it was cut off ended (its request
        // timed out) while the store was out of reach; its outcome came late and was refused.
        let rescuedOfCut = scalar("SELECT count(DISTINCT order_ref) FROM transitions WHERE reason = 'lease_expired' AND detail LIKE '%node-b/%'")
        #expect(rescuedOfCut == 0 || refusals > 0, "\(rescuedOfCut) of node b's leases rescued, but no late outcome refused")
        #expect(nodeB.isRunning, "node b did not survive the cut: \(nodeB.standardError.suffix(2000))")

        // The mock: one Idempotency-Key per order (its own id, on every delivery), every order
        // delivered, at most MaxRate + Burst requests in any second at each endpoint.
        let stats = try Self.mockStats(statsSocket)
        #expect(stats.idempotencyMismatches == 0)
        #expect(stats.deliveriesSucceeded.count == all)
        // Each made order delivered (with its own id as the Idempotency-Key, checked above). A
        // delivery in flight on the killed or cut-off node may reach the merchant and be sent
        // again by the node that rescued it: at least once, the key telling the merchant so.
        let discoveredDeliveries = stats.deliveriesSucceeded.filter { $0.key.hasPrefix("google:") }
        #expect(discoveredDeliveries.count == Self.discovered, "\(discoveredDeliveries.count) of \(Self.discovered) purchases delivered")
        #expect(stats.pubsubAcknowledged.count == Self.discovered, "\(stats.pubsubAcknowledged.count) of \(Self.discovered) messages acknowledged")
        let redelivered = stats.pubsubDelivered.values.filter { $0 > 1 }.count
        let peaks = ["production", "delivery"].map { (stats.perSecond[$0] ?? [:]).values.max() ?? 0 }
        let peak = peaks.max() ?? 0
        #expect(peaks[0] > 0 && peaks[1] > 0)
        #expect(peak <= Self.maxRate + Self.burst, "peak \(peaks) requests in one second (verifyReceipt, delivery)")

        print(
            """
            three hosts: \(Self.orders) orders finished in \(String(format: "%.1f", finishedAt.timeIntervalSince(start))) s; \
            node a SIGKILLed holding \(deadLeases.count) leases, rescued \(String(format: "%.2f", rescueDelays.min() ?? 0))–\(String(format: "%.2f", slowestRescue)) s after the kill \
            (LeaseTime \(Int(Self.leaseTime)) s, heartbeat \(wake) s); node b cut off for \(String(format: "%.1f", restoredAt.timeIntervalSince(cutAt))) s holding \(cutLeases.count) leases, \
            \(rescuedOfCut) rescued, \(refusals) late outcomes refused and logged; \(Self.discovered) purchases from Pub/Sub made one order each \
            (\(redelivered) messages delivered again, \(discoveredDeliveries.values.filter { $0 > 1 }.count) orders delivered again after a rescue); requests at the mock \(stats.requests), peak \(peak)/s \
            (MaxRate \(Self.maxRate) + Burst \(Self.burst)); late writes \(lateWrites + lateAttempts); took \(ContinuousClock.now - began)
            """)
        for daemon in daemons.values where daemon.isRunning { daemon.send(SIGTERM) }
        for daemon in daemons.values { _ = await daemon.wait(timeout: .seconds(10)) }
    }

    /// The mock's counters, through the unix-socket relay on its host.
    static func mockStats(_ socketPath: String) throws -> MockStats {
        MockStats(json: try JSONParser().parse(try mockRequest(socketPath, method: "GET", path: "/_mock/stats")))
    }

    /// One request to the mock through the unix-socket relay on its host: the answer's body.
    static func mockRequest(_ socketPath: String, method: String, path: String, body: String = "") throws -> [UInt8] {
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw HarnessError("socket: \(errno)") }
        defer { close(descriptor) }
        var timeout = timeval(tv_sec: 30, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            let bytes = Array(socketPath.utf8.prefix(buffer.count - 1))
            buffer.copyBytes(from: bytes + [0])
        }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard connected == 0 else { throw HarnessError("cannot connect to \(socketPath): \(errno)") }
        let request = Array("\(method) \(path) HTTP/1.1\r\nHost: mock\r\nConnection: close\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)".utf8)
        // MSG_NOSIGNAL: until the mock listens, the relay accepts and hangs up at once, and a
        // plain write(2) to it would kill the whole test process with SIGPIPE.
        guard send(descriptor, request, request.count, Int32(MSG_NOSIGNAL)) == request.count else {
            throw HarnessError("cannot send to the mock: \(errno)")
        }
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = read(descriptor, &buffer, buffer.count)
            if count <= 0 { break }
            received += buffer[0..<count]
            // Done once the body is as long as Content-Length says.
            if let headerEnd = received.firstRange(of: Array("\r\n\r\n".utf8)) {
                let head = String(decoding: received[..<headerEnd.lowerBound], as: UTF8.self).lowercased()
                if let line = head.split(separator: "\r\n").first(where: { $0.hasPrefix("content-length:") }),
                    let length = Int(line.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)),
                    received.count - headerEnd.upperBound >= length
                {
                    return Array(received[headerEnd.upperBound...])
                }
            }
        }
        guard let headerEnd = received.firstRange(of: Array("\r\n\r\n".utf8)) else { throw HarnessError("no answer from the mock") }
        return Array(received[headerEnd.upperBound...])
    }
}
