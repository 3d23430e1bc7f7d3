import Foundation
import ReconcileCore
import ReconcileEngine
import ReconcileHTTP
import ReconcileMock
import ReconcileStore
import Synchronization

/// **e2e**: orders/s through the daemon's scheduler, merchant verifier and libcurl transport
/// against the mock (`Kind=http`, no delivery, `MaxInFlight=64`, no rate limit), at 0 ms and
/// 50 ms of server latency, beside the raw request rate of the same transport against the same
/// server.
enum EndToEndScenario {
    static let name = "e2e"
    static let inFlight = 64

    @Sendable static func run(_ options: BenchmarkOptions) async throws -> BenchmarkReport {
        let service = MockService()
        let server = try MockHTTPServer { service.handle($0) }
        defer { server.stop() }
        let url = "http://127.0.0.1:\(server.port)/merchant/verify"
        let transport = CurlTransport(maximumConnections: 256)
        var report = BenchmarkReport(scenario: name)

        let rawCount = options.quick ? 2_000 : 20_000
        let raw = await rawRate(transport: transport, url: url, count: rawCount)
        report.add("raw client rate, 0 ms", raw, "requests/s")

        let fastCount = options.files ?? (options.quick ? 2_000 : 20_000)
        let fast = try await ordersPerSecond(options, transport: transport, url: url, count: fastCount)
        report.add("e2e, 0 ms", fast, "orders/s", target: options.quick ? "" : ">= 70% of raw")
        report.add("e2e / raw, 0 ms", fast / raw * 100, "%", target: options.quick ? "" : ">= 70 %")

        var faults = MockFaults()
        faults.latency = .milliseconds(50)
        service.setFaults(faults)
        let slowCount = options.quick ? 500 : 6_000
        let slow = try await ordersPerSecond(options, transport: transport, url: url, count: slowCount)
        let ideal = Double(inFlight) / 0.05
        report.add("e2e, 50 ms", slow, "orders/s", target: options.quick ? "" : ">= 1,152 (90% of 1,280)")
        report.add("e2e / ideal, 50 ms", slow / ideal * 100, "%", target: options.quick ? "" : ">= 90 %")
        report.notes.append("MaxInFlight=\(inFlight), MaxRate=infinity, synchronous=FULL; the mock runs in the same process on loopback")
        return report
    }

    /// The transport alone: `count` requests, `inFlight` at a time. Each is what the merchant
    /// verifier would send for a distinct order (the same body fields and headers, its own
    /// `Idempotency-Key`), so that the mock does the same work per request in both runs.
    static func rawRate(transport: CurlTransport, url: String, count: Int) async -> Double {
        let next = Counter()
        let start = ContinuousClock.now
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<inFlight {
                group.addTask {
                    while case let index = next.value.add(1, ordering: .relaxed).oldValue, index < count {
                        let orderID = "RAW\(index)"
                        let body = Array((#"{"order_id":"\#(orderID)","product_id":"gems","receipt":"QUJD","transaction_id":null,"#
                            + #""application_username":null,"user_id":null,"amount":null,"currency":null,"created_at":null}"#).utf8)
                        _ = await transport.send(HTTPRequest(
                            url: url,
                            headers: [
                                HTTPHeader("Content-Type", "application/json"), HTTPHeader("Accept", "application/json"),
                                HTTPHeader("User-Agent", "reconciled/\(ReconcileVersion.current)"),
                                HTTPHeader("Idempotency-Key", orderID), HTTPHeader("Reconcile-Attempt", "1"),
                            ],
                            body: body, timeout: .seconds(10)))
                    }
                }
            }
        }
        return Double(count) / (ContinuousClock.now - start).inSeconds
    }

    /// `count` orders put straight into a store on disk, then verified by the scheduler.
    static func ordersPerSecond(_ options: BenchmarkOptions, transport: CurlTransport, url: String, count: Int) async throws -> Double {
        let root = try options.makeDirectory(name)
        defer { try? FileManager.default.removeItem(atPath: root) }
        let store = try SQLiteOrderStore(path: root + "/orders.db", mode: .owner)
        try Seeding.insertOrders(into: store, count: count, at: Date().addingTimeInterval(-1))
        let settings = Scheduler.Settings(
            verifier: MerchantVerifier(endpoint: EndpointSettings(url: url, timeout: .seconds(10)), transport: transport),
            delivery: nil,
            resolver: AttemptResolver(policy: RetryPolicy(Configuration.RetrySettings()), deliveryConfigured: false),
            maxInFlight: inFlight, maxRate: nil, burst: 10, circuitThreshold: 10, circuitCooldown: .seconds(5),
            circuitMaxCooldown: .seconds(300), requestTimeout: .seconds(10))
        let scheduler = Scheduler(store: store, settings: settings, logger: .discarding)
        let start = ContinuousClock.now
        let loop = Task { await scheduler.run() }
        // The scheduler's own counter: polling the store would compete with it for the connection.
        while await scheduler.status().counters.finished < count {
            try await Task.sleep(for: .milliseconds(20))
        }
        let elapsed = (ContinuousClock.now - start).inSeconds
        await scheduler.stop(drainTimeout: .seconds(5))
        await loop.value
        return Double(count) / elapsed
    }
}

/// A shared counter for the benchmark's workers.
final class Counter: Sendable {
    let value = Atomic<Int>(0)
}
