import Foundation
import ReconcileCore
import ReconcileCrypto
import ReconcileEngine
import ReconcileFoundation
import ReconcileHTTP
import ReconcileMock
import ReconcileStore
import ReconcileSystem
import ReconcileSQLite

/// **play**: Google Play orders/s through the scheduler, `GooglePlayVerifier` (JWT grant,
/// `purchases.products.get`) and the libcurl transport against the mock at 50 ms of latency
/// (`[GooglePlay]` alone, `MaxInFlight=64`, no rate limit, `Acknowledge=no` so that every request
/// is a verification), beside `MaxInFlight`/latency, and the access token cache's hit rate. A
/// second run with `Acknowledge=yes` times orders until each is also acknowledged. The service
/// account key is made for the run with `openssl genpkey` (never a real one).
enum PlayScenario {
    static let name = "play"
    static let inFlight = 64
    static let package = "com.example.bench"

    @Sendable static func run(_ options: BenchmarkOptions) async throws -> BenchmarkReport {
        let root = try options.makeDirectory(name)
        defer { try? FileManager.default.removeItem(atPath: root) }
        let account = try makeAccount(in: root)
        let (service, server) = try startMock(checking: account)
        defer { server.stop() }
        let base = "http://127.0.0.1:\(server.port)/googleplay"
        let transport = CurlTransport(maximumConnections: 256)
        var faults = MockFaults()
        faults.latency = .milliseconds(50)
        service.setFaults(faults)
        var report = BenchmarkReport(scenario: name)

        let count = options.files ?? (options.quick ? 640 : 6_400)
        let verified = try await ordersPerSecond(
            root + "/verify", account: account, base: base, transport: transport, count: count, acknowledge: false, prefix: "V")
        let ideal = Double(inFlight) / 0.05
        report.add("play verify, 50 ms", verified.rate, "orders/s", target: options.quick ? "" : ">= 1,152 (90% of 1,280)")
        report.add("play verify / ideal, 50 ms", verified.rate / ideal * 100, "%", target: options.quick ? "" : ">= 90 %")
        report.add("play attempts in flight, mean", verified.meanInFlight, "", target: "of \(inFlight)")
        report.add("play request time, mean", verified.meanRequest * 1000, "ms", target: "of which 50 ms the mock's")
        report.add("token cache hit rate", verified.hitRate * 100, "%")
        report.add("access tokens granted", Double(verified.grants), "")

        let acknowledgedCount = options.quick ? 320 : 3_200
        let acknowledged = try await ordersPerSecond(
            root + "/acknowledge", account: account, base: base, transport: transport, count: acknowledgedCount, acknowledge: true, prefix: "K")
        report.add("play verify + acknowledge, 50 ms", acknowledged.rate, "orders/s")
        report.notes.append(
            "MaxInFlight=\(inFlight), MaxRate=infinity, mock latency 50 ms on every Google request (token grant included); "
                + "with Acknowledge=yes each order is three requests (the read that verifies it, the read before acknowledging, :acknowledge), so that ideal is a third; the mock runs in the same process on loopback")
        return report
    }

    /// The mock in this process on loopback, playing Google Play (and Pub/Sub) for `account`.
    static func startMock(checking account: GoogleServiceAccount) throws -> (MockService, MockHTTPServer) {
        var settings = MockService.Settings()
        settings.googlePlay = MockGooglePlay(settings: MockGooglePlay.Settings(key: account.key.publicKey, audience: account.tokenURI))
        let service = MockService(settings: settings)
        return (service, try MockHTTPServer { service.handle($0) })
    }

    /// A throwaway service account whose key `openssl` makes now.
    static func makeAccount(in root: String) throws -> GoogleServiceAccount {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["openssl", "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", root + "/key.pem"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw BenchmarkError("openssl genpkey failed (\(process.terminationStatus))") }
        let pem = try String(contentsOfFile: root + "/key.pem", encoding: .utf8)
        return GoogleServiceAccount(
            clientEmail: "bench@reconcile-bench.iam.gserviceaccount.com", privateKeyID: "0001", tokenURI: "https://oauth2.googleapis.com/token",
            key: try RS256PrivateKey(pem: pem))
    }

    struct Run {
        var rate: Double
        var hitRate: Double
        var grants: Int
        /// Attempts in flight, sampled every 20 ms while orders were left.
        var meanInFlight: Double
        /// Seconds per request to Google's API as the transport timed it (50 ms of it the mock's).
        var meanRequest: Double
    }

    static func ordersPerSecond(
        _ root: String, account: GoogleServiceAccount, base: String, transport: CurlTransport, count: Int, acknowledge: Bool, prefix: String
    ) async throws -> Run {
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        let tokens = (0..<count).map { "\(prefix)\($0).AO-J1Oz" + String(repeating: "b", count: 40) }
        let purchases = tokens.enumerated().map { index, token in
            "{\"token\":\"\(token)\",\"package\":\"\(package)\",\"product\":\"gems\",\"orderId\":\"GPA.\(prefix)\(index)\"}"
        }
        let registered = await transport.send(HTTPRequest(
            url: base.replacingOccurrences(of: "/googleplay", with: "/_mock/googleplay/purchases"),
            body: Array("{\"purchases\":[\(purchases.joined(separator: ","))]}".utf8), timeout: .seconds(30)))
        guard registered.response?.status == 200 else { throw BenchmarkError("the mock refused the purchases: \(registered.outcome)") }

        let store = try SQLiteOrderStore(path: root + "/orders.db", mode: .owner)
        try Seeding.insertPlayOrders(into: store, tokens: tokens, prefix: prefix, at: Date().addingTimeInterval(-1))
        let cache = PlayAccessTokenCache(
            account: account, endpoint: EndpointSettings(url: base + "/token", timeout: .seconds(10)), transport: transport)
        let verifier = GooglePlayVerifier(
            api: EndpointSettings(url: base, timeout: .seconds(10)), packageName: package, allowTestPurchases: false, tokens: cache,
            transport: transport)
        let followUp = PlayFollowUp(acknowledge: acknowledge, consume: false, packageName: package)
        var settings = Scheduler.Settings(
            resolver: AttemptResolver(policy: RetryPolicy(Configuration.RetrySettings()), deliveryConfigured: false, playFollowUp: followUp),
            maxInFlight: inFlight, maxRate: nil, burst: 10, circuitThreshold: 10, circuitCooldown: .seconds(5),
            circuitMaxCooldown: .seconds(300), requestTimeout: .seconds(10))
        settings.googlePlay = Scheduler.PoolLimits(
            maxInFlight: inFlight, maxRate: nil, burst: 10, circuitThreshold: 10, circuitCooldown: .seconds(5), circuitMaxCooldown: .seconds(300))
        var senders = Scheduler.Senders(verifier: nil)
        senders.googlePlay = verifier
        let scheduler = Scheduler(store: store, settings: settings, senders: senders, logger: .discarding, clock: SystemClock())
        let start = ContinuousClock.now
        let loop = Task { await scheduler.run() }
        var inFlightSamples: [Int] = []
        while true {
            let status = await scheduler.status()
            if status.counters.finished >= count { break }
            inFlightSamples.append(status.inFlight)
            try await Task.sleep(for: .milliseconds(20))
        }
        let requests = await scheduler.status().requestDurations[.googlePlay]
        if acknowledge {
            while try store.outboxSummary().pending > 0 {
                try await Task.sleep(for: .milliseconds(20))
            }
        }
        let elapsed = (ContinuousClock.now - start).inSeconds
        await scheduler.stop(drainTimeout: .seconds(5))
        await loop.value
        let statistics = await cache.statistics
        return Run(
            rate: Double(count) / elapsed, hitRate: statistics.hitRate, grants: statistics.refreshes,
            meanInFlight: inFlightSamples.isEmpty ? 0 : Double(inFlightSamples.reduce(0, +)) / Double(inFlightSamples.count),
            meanRequest: requests.map { $0.count == 0 ? 0 : $0.sum / Double($0.count) } ?? 0)
    }
}
