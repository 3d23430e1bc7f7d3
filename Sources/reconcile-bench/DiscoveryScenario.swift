import Foundation
import Glibc
import ReconcileCore
import ReconcileCrypto
import ReconcileEngine
import ReconcileFoundation
import ReconcileHTTP
import ReconcileMock
import ReconcileSpool
import ReconcileStore
import ReconcileSystem
import ReconcileSQLite
import TestSupport

/// **discovery**: purchases the phone never sent (DESIGN §5b). App Store `ONE_TIME_CHARGE`
/// notification files, each signed with a throwaway App Store-shaped chain, go through the
/// daemon's own spool ingest — both signatures and the chain verified, the notification and
/// its purchase committed together (`synchronous=FULL`), the file unlinked — then every purchase,
/// its grace over, is settled into an order as the scheduler's turn does it. Purchases/s for
/// each step.
enum DiscoveryScenario {
    static let name = "discovery"

    @Sendable static func run(_ options: BenchmarkOptions) async throws -> BenchmarkReport {
        let count = options.files ?? (options.quick ? 2_000 : 20_000)
        let root = try options.makeDirectory(name)
        defer { try? FileManager.default.removeItem(atPath: root) }
        var report = BenchmarkReport(scenario: name)
        report.add("purchases", Double(count), "")

        let chain = try await TestCertificateChain.make()
        let signer = JWSSigner(key: try ES256PrivateKey(pem: chain.leafKeyPEM), certificateChainDER: chain.x5c)
        let layout = SpoolLayout(root: root + "/spool")
        try layout.prepare()
        try FileManager.default.createDirectory(atPath: root + "/state", withIntermediateDirectories: true)
        let store = try SQLiteOrderStore(path: root + "/state/orders.db", mode: .owner)
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        for index in 0..<count {
            let transaction = try signer.sign(payload: Array("""
                {"transactionId":"\(5_000_000_000 + index)","originalTransactionId":"\(5_000_000_000 + index)","productId":"gems",\
                "bundleId":"com.example.app","environment":"Production","purchaseDate":\(now - 60_000),"signedDate":\(now),\
                "type":"Consumable","appAccountToken":"5b1c2f4e-7d3a-4e2b-9c1d-\(String(format: "%012d", index))"}
                """.utf8))
            let payload = try signer.sign(payload: Array("""
                {"notificationType":"ONE_TIME_CHARGE","notificationUUID":"bench-\(index)","version":"2.0","signedDate":\(now),\
                "data":{"appAppleId":1234567890,"bundleId":"com.example.app","environment":"Production","signedTransactionInfo":"\(transaction)"}}
                """.utf8))
            let name = String(format: "otc-%06d.json", index)
            guard FileManager.default.createFile(atPath: layout.temporary + "/" + name, contents: Data("{\"signedPayload\":\"\(payload)\"}".utf8)) else {
                throw BenchmarkFailure("cannot write \(name)")
            }
            rename(layout.temporary + "/" + name, layout.incoming + "/" + name)
        }
        sync()

        let verifier = try SignedDataVerifier(rootCertificates: [chain.rootDER], bundleID: "com.example.app", environment: .production)
        var settings = SpoolIngestor.Settings(
            verifiers: ConfiguredVerifiers(kind: .appstore), maxFileSize: 1 << 20,
            notifications: NotificationFileReader(appStore: .init(production: verifier, sandbox: nil)))
        let deliver = DiscoverySettings(mode: .deliver, grace: .zero)
        settings.discovery = deliver
        let ingestor = SpoolIngestor(layout: layout, store: store, settings: settings, logger: .discarding, clock: SystemClock())
        let start = ContinuousClock.now
        let summary = await ingestor.rescan()
        let ingested = (ContinuousClock.now - start).inSeconds
        let waiting = try store.summary().discovered.waiting
        guard summary.notifications == count, waiting == count else {
            throw BenchmarkFailure("discovery lost track: \(summary.notifications) notifications, \(waiting) purchases waiting, of \(count)")
        }
        report.add("through files (verify, commit, unlink)", Double(count) / ingested, "purchases/s")

        // The scheduler settles at most 100 a turn; here as fast as the store allows.
        let settleStart = ContinuousClock.now
        var made = 0
        while true {
            let settled = try store.settleDiscovered(
                settings: deliver, verifiers: ConfiguredVerifiers(kind: .appstore), now: Date(), limit: 100, digest: { SHA256.hexDigest($0) })
            if settled.isEmpty { break }
            made += settled.filter { if case .becameOrder = $0.status { true } else { false } }.count
        }
        let settling = (ContinuousClock.now - settleStart).inSeconds
        guard made == count, try store.countsByState()[.pending] == count else { throw BenchmarkFailure("settling made \(made) orders of \(count)") }
        report.add("settled into orders, 100 a transaction", Double(count) / settling, "purchases/s")
        report.notes.append("state and spool on \(DiskProbe.filesystem(of: root)), synchronous=FULL; ES256 chain and two signatures per file")

        let pulled = try await pullRate(root: root, count: options.quick ? 500 : 5_000)
        report.add("through Pub/Sub pull (Google at 50 ms)", pulled, "purchases/s")
        report.notes.append(
            "pull: the mock in this process at 50 ms a request (pull, purchases.products.get, acknowledge), 100 messages a pull, "
                + "16 purchases asked of Google at once, each purchase confirmed and committed with its message before the acknowledgement")
        return report
    }

    /// Google Play one-time purchases pulled from Pub/Sub, each confirmed with Google and kept
    /// (`Mode=record`), by the daemon's own puller against the mock: purchases/s.
    static func pullRate(root: String, count: Int) async throws -> Double {
        let account = try PlayScenario.makeAccount(in: root)
        let (service, server) = try PlayScenario.startMock(checking: account)
        defer { server.stop() }
        let base = "http://127.0.0.1:\(server.port)"
        let transport = CurlTransport(maximumConnections: 64)
        let package = PlayScenario.package
        let subscription = "projects/bench/subscriptions/play-rtdn"
        let tokens = (0..<count).map { "P\($0).AO-J1Oz" + String(repeating: "c", count: 40) }
        let purchases = tokens.enumerated().map { index, token in
            "{\"token\":\"\(token)\",\"package\":\"\(package)\",\"product\":\"gems\",\"orderId\":\"GPA.P\(index)\",\"obfuscatedExternalAccountId\":\"acct-\(index)\"}"
        }
        let messages = tokens.enumerated().map { index, token in
            "{\"messageId\":\"b\(index)\",\"json\":{\"packageName\":\"\(package)\",\"eventTimeMillis\":\"1\",\"oneTimeProductNotification\":"
                + "{\"notificationType\":1,\"purchaseToken\":\"\(token)\",\"sku\":\"gems\"}}}"
        }
        for (path, body) in [
            ("/_mock/googleplay/purchases", "{\"purchases\":[\(purchases.joined(separator: ","))]}"),
            ("/_mock/pubsub/publish", "{\"subscription\":\"\(subscription)\",\"messages\":[\(messages.joined(separator: ","))]}"),
        ] {
            let sent = await transport.send(HTTPRequest(url: base + path, body: Array(body.utf8), timeout: .seconds(60)))
            guard sent.response?.status == 200 else { throw BenchmarkFailure("the mock refused \(path): \(sent.outcome)") }
        }
        var faults = MockFaults()
        faults.latency = .milliseconds(50)
        service.setFaults(faults)

        try FileManager.default.createDirectory(atPath: root + "/pull", withIntermediateDirectories: true)
        let store = try SQLiteOrderStore(path: root + "/pull/orders.db", mode: .owner)
        let cache = PlayAccessTokenCache(
            account: account, endpoint: EndpointSettings(url: base + "/googleplay/token", timeout: .seconds(10)), transport: transport,
            scopes: [GoogleJWT.scope, GoogleJWT.pubSubScope])
        var verifier = GooglePlayVerifier(
            api: EndpointSettings(url: base + "/googleplay", timeout: .seconds(10)), packageName: package, allowTestPurchases: false, tokens: cache,
            transport: transport)
        verifier.pubSub = EndpointSettings(url: base + "/pubsub", timeout: .seconds(60))
        var settings = Scheduler.Settings(
            resolver: AttemptResolver(policy: RetryPolicy(Configuration.RetrySettings()), deliveryConfigured: false),
            maxInFlight: 64, maxRate: nil, burst: 10, circuitThreshold: 10, circuitCooldown: .seconds(5), circuitMaxCooldown: .seconds(300),
            requestTimeout: .seconds(10))
        settings.googlePlay = Scheduler.PoolLimits(
            maxInFlight: 64, maxRate: nil, burst: 10, circuitThreshold: 10, circuitCooldown: .seconds(5), circuitMaxCooldown: .seconds(300))
        var senders = Scheduler.Senders(verifier: nil)
        senders.googlePlay = verifier
        let gate = Scheduler(store: store, settings: settings, senders: senders, logger: .discarding, clock: SystemClock())
        let puller = PlayPubSubPuller(
            settings: .init(subscription: subscription, verifier: verifier, discovery: DiscoverySettings(mode: .record)),
            store: store, gate: gate, logger: .discarding, clock: SystemClock())
        let start = ContinuousClock.now
        var kept = 0
        var empty = 0
        while kept < count && empty < 3 {
            let summary = await puller.pullNow()
            kept += summary.discovered
            empty = summary.pulled == 0 ? empty + 1 : 0
        }
        let elapsed = (ContinuousClock.now - start).inSeconds
        guard kept == count, try store.summary().discovered.waiting == count else {
            throw BenchmarkFailure("pull kept \(kept) of \(count) purchases")
        }
        return Double(count) / elapsed
    }
}
