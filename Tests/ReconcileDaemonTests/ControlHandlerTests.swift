import Foundation
import Glibc
import ReconcileCore
import ReconcileEngine
@testable import ReconcileStore
@testable import ReconcileSQLite
import Testing
import TestSupport
@testable import ReconcileDaemon
@testable import ReconcileSystem
import ReconcileFoundation

/// A transport for a scheduler that is never run.
private struct NoTransport: HTTPTransport {
    func send(_ request: HTTPRequest) async -> HTTPExchangeResult {
        HTTPExchangeResult(.failure(HTTPFailure(.connectionRefused, "not in this test")), latency: .zero)
    }
}

@Suite("Control handler: operator actions", .serialized)
struct ControlHandlerTests {
    let directory = TemporaryDirectory(prefix: "handler")
    let log = CapturingLogHandler()
    static let root = ControlSocketServer.Peer(pid: 1, uid: 0, gid: 0, userName: "root", mayWrite: true)

    /// A handler over a store with `count` escalated orders (and one more, a duplicate).
    func handler(escalated count: Int) throws -> (ControlHandler, SQLiteOrderStore) {
        let store = try SQLiteOrderStore(path: directory.file("orders.db"), mode: .owner)
        let candidates = try (0..<count).map { index in
            let bytes = Array(OrderFixtures.orderJSON("E\(index)").utf8)
            return IngestCandidate(submission: try OrderFileParser().parse(bytes), raw: bytes, contentHash: "E\(index)", fileName: "E\(index).json")
        }
        _ = try store.ingest(candidates, verifierKind: .http, now: Date())
        try store.write { try $0.execute("UPDATE orders SET state = 'held', resume_state = 'pending', next_attempt_at = NULL") }
        let senders = Scheduler.Senders(
            verifier: MerchantVerifier(endpoint: EndpointSettings(url: "https://merchant.example/verify", timeout: .seconds(1)), transport: NoTransport()))
        let settings = Scheduler.Settings(
            resolver: AttemptResolver(policy: RetryPolicy(Configuration.RetrySettings()), deliveryConfigured: false),
            maxInFlight: 4, maxRate: nil, burst: 10, circuitThreshold: 10, circuitCooldown: .seconds(1), circuitMaxCooldown: .seconds(5),
            requestTimeout: .seconds(1))
        let logger = Logger(handler: log, minimumLevel: .debug)
        let handler = ControlHandler(
            store: store, scheduler: Scheduler(store: store, settings: settings, senders: senders, logger: .discarding, clock: ManualClock()), configPath: "/x.conf",
            verifiers: ConfiguredVerifiers(kind: .http), support: SupportLookup(appStore: nil, appStoreMissing: "no App Store credentials here", googlePlay: nil),
            logger: logger, requestReload: { .success(1) })
        return (handler, store)
    }

    /// Hands `request` to the handler on a thread of its own, as the control socket does: the
    /// handler blocks its thread while it asks the scheduler (`AsyncResult`), which must never be
    /// one of the cooperative pool's few threads (one blocked there starves every other test).
    func ask(_ handler: ControlHandler, _ request: String) async throws -> String {
        try await offPool { handler.handle(Array(request.utf8), peer: Self.root) }
    }

    func answer(_ text: String) -> JSONObject? {
        guard case .object(let object)? = try? JSONParser().parse(Array(text.utf8)) else { return nil }
        return object
    }

    @Test("status: each endpoint's circuit carries every documented field, null when it has no value")
    func statusCircuitFields() async throws {
        let (handler, _) = try handler(escalated: 1)
        let object = try #require(answer(try await ask(handler, #"{"v":1,"op":"status"}"#)))
        let circuits = try #require(object["status"]?.objectValue?["circuits"]?.arrayValue)
        let merchant = try #require(circuits.compactMap(\.objectValue).first { $0["endpoint"]?.stringValue == "merchant" }, "\(circuits)")
        #expect(merchant.keys == ["endpoint", "state", "open_until", "reason", "openings", "paused_until", "consecutive_failures", "last_failure"])
        #expect(merchant["state"]?.stringValue == "closed")
        #expect(merchant["consecutive_failures"]?.int64Value == 0)
        #expect(merchant["last_failure"] == .null)
        #expect(merchant["open_until"] == .null)
        #expect(merchant["reason"] == .null)
        #expect(merchant["openings"]?.int64Value == 0)
        #expect(merchant["paused_until"] == .null)
    }

    @Test("a bulk action answers with counts and the first orders, logs one summary line with its MESSAGE_ID and each order at debug")
    func bulkAnswerAndLog() async throws {
        let (handler, store) = try handler(escalated: 2_500)
        try store.write { try $0.execute("UPDATE orders SET state = 'escalated', reason = 'max_attempts', resume_state = NULL") }
        let text = try await ask(handler, #"{"v":1,"op":"retry","state":"escalated","note":"outage over"}"#)
        let object = try #require(answer(text), "\(text)")
        #expect(object["ok"]?.boolValue == true)
        #expect(object["matched"]?.int64Value == 2_500)
        #expect(object["changed"]?.int64Value == 2_500)
        #expect(object["applied"]?.int64Value == 2_500)
        #expect(object["interrupted"]?.boolValue == false)
        #expect(object["results"]?.arrayValue?.count == 100)
        #expect(text.utf8.count < 16_384, "\(text.utf8.count) bytes")

        let summaries = log.records(with: .operatorBulkAction)
        #expect(summaries.count == 1)
        let summary = try #require(summaries.first)
        #expect(summary.level == .info)
        #expect(summary.message == "operator:root retry on 2500 escalated orders: 2500 changed: outage over")
        #expect(summary.fields.contains { $0.0 == .count && $0.1 == "2500" })
        #expect(summary.fields.contains { $0.0 == .orderState && $0.1 == "escalated" })
        // The catalog's entry for it substitutes only fields the line carries.
        let entry = try #require(try JournalCatalog.repositoryCatalog().entries.first { $0.id == MessageID.operatorBulkAction.rawValue })
        #expect(entry.header("Subject") == "@ACTOR@ applied @REASON@ to @COUNT@ orders")
        for field in entry.substitutions {
            #expect(summary.fields.contains { $0.0.rawValue == field }, "the catalog uses @\(field)@, the summary line has no \(field)")
        }
        let perOrder = log.records.filter { $0.message.hasPrefix("operator:root retry order ") }
        #expect(perOrder.count == 2_500)
        #expect(perOrder.allSatisfy { $0.level == .debug })
        #expect(log.records.filter { $0.level >= .info }.count == 1)
    }

    @Test("a few named orders: one info line each, the whole answer per order, no summary")
    func fewNamedOrders() async throws {
        let (handler, _) = try handler(escalated: 3)
        let text = try await ask(handler, #"{"v":1,"op":"release","orders":["E0","E1","NOPE"]}"#)
        let object = try #require(answer(text))
        #expect(object["matched"] == nil)
        #expect(object["changed"]?.int64Value == 2)
        #expect(object["results"]?.arrayValue?.count == 3)
        #expect(log.records.filter { $0.level == .info }.map(\.message) == ["operator:root release order E0", "operator:root release order E1"])
        #expect(log.records(with: .operatorBulkAction).isEmpty)
    }

    @Test("stopping: a bulk action ends at the next batch and its answer says how far it got")
    func interruptedByStop() async throws {
        let (handler, store) = try handler(escalated: 1_500)
        try store.write { try $0.execute("UPDATE orders SET state = 'escalated', reason = 'max_attempts', resume_state = NULL") }
        handler.beginStopping()
        let object = try #require(answer(try await ask(handler, #"{"v":1,"op":"retry","state":"escalated"}"#)))
        #expect(object["ok"]?.boolValue == true)
        #expect(object["interrupted"]?.boolValue == true)
        #expect(object["applied"]?.int64Value == 0)
        #expect(object["not_reached"]?.int64Value == 1_500)
        let summary = try #require(log.records(with: .operatorBulkAction).first)
        #expect(summary.message.hasSuffix("0 changed; interrupted by the stop, 1500 not reached"), "\(summary.message)")
    }

    @Test("lookup and recover without the store's credentials: an error that names what is missing, logged with the operator")
    func lookupWithoutCredentials() async throws {
        let (handler, _) = try handler(escalated: 0)
        let apple = try #require(answer(try await ask(handler, #"{"v":1,"op":"lookup","store_order_id":"MK5TTV4XYZ"}"#)))
        #expect(apple["ok"]?.boolValue == false)
        #expect(apple["error"]?.stringValue == "no App Store credentials here")
        let play = try #require(answer(try await ask(handler, #"{"v":1,"op":"recover","store_order_id":"GPA.1234-5678-9012-34567","user":"u1"}"#)))
        #expect(play["ok"]?.boolValue == false)
        #expect(play["error"]?.stringValue?.contains("[GooglePlay]") == true, "\(play)")
        let lines = log.records.filter { $0.message.hasPrefix("operator:root ") }.map(\.message)
        #expect(lines == [
            "operator:root looked up App Store order MK5TTV4XYZ: no App Store credentials here",
            "operator:root recover of Google Play order GPA.1234-5678-9012-34567: " + (play["error"]?.stringValue ?? ""),
        ])
    }
}
