import Foundation
import Glibc
import ReconcileCore
import ReconcileCrypto
import ReconcileFoundation
import ReconcileHTTP
import ReconcileMock
import Testing
import TestSupport
@testable import ReconcileStore

/// Answering Apple's `CONSUMPTION_REQUEST` (DESIGN §5a, `[Notifications] ConsumptionAnswer=`)
/// against the built daemon and the mock's Send Consumption Information, which checks each body
/// as Apple does and records what it accepted.
@Suite("End to end: consumption answers", .serialized)
struct ConsumptionEndToEndTests {
    /// `Kind=appstore` against the mock with the consumption keys in `[Notifications]`, and
    /// attempts enough that an order the mock fails stays pending.
    static func configuration(_ harness: Harness, consumption: String) -> String {
        AppStoreEndToEndTests.configuration(harness).replacingOccurrences(of: "Poll=off", with: "Poll=off\n" + consumption)
            + "\nMaxAttempts=100000\n"
    }

    /// The answers the mock accepted: `{environment, transaction_id, delivery_status, refund_preference, sample_content_provided}`.
    static func answers(_ harness: Harness) async throws -> [JSONValue] {
        let result = await harness.transport.send(HTTPRequest(method: "GET", url: harness.base + "/_mock/stats", timeout: .seconds(5)))
        guard let response = result.response else { throw HarnessError("no stats: \(result.outcome)") }
        return try JSONParser().parse(response.body)["appstore"]?["consumption_answers"]?.arrayValue ?? []
    }

    @Test("a CONSUMPTION_REQUEST file for a finished order is answered DELIVERED with the configured preference, one for a verified order whose delivery fails UNDELIVERED_OTHER, each once; one for an order never verified and one for nobody are not answered; the orders do not change")
    func answersRequests() async throws {
        let harness = Harness("consumption")
        let setup = try await AppStoreEndToEndTests.setUp(harness)
        try await AppStoreEndToEndTests.register(harness, environment: "Production", [("8001", "gems", ""), ("8002", "gems", "")])
        harness.configure(Self.configuration(
            harness, consumption: "ConsumptionAnswer=on\nCustomerConsented=yes\nSampleContentProvided=yes\nRefundPreference=grant_full")
            + "\n[Delivery]\nURL=\(harness.base)/deliver\n")
        harness.drop("f1.json", OrderFixtures.orderJSON("F1", product: "gems", receipt: nil, transactionID: "8001"))
        let daemon = try harness.startDaemon()
        #expect(await harness.waitFor(.finished, count: 1), "\(harness.counts())")
        // The merchant's delivery endpoint fails from now on: V2 is verified (Apple's answer
        // claimed 8002 for it) and waits for its delivery. P3's transaction Apple does not know:
        // never verified, whatever its file says.
        try await harness.configureMock(#"{"status_rates":{"500":1},"path_prefix":"/deliver"}"#)
        harness.drop("v2.json", OrderFixtures.orderJSON("V2", product: "gems", receipt: nil, transactionID: "8002"))
        harness.drop("p3.json", OrderFixtures.orderJSON("P3", product: "gems", receipt: nil, transactionID: "8003"))
        #expect(await eventually(timeout: .seconds(20)) { (try? harness.store().order(id: "V2")?.state) == .verified })

        for (name, id, transaction) in [("c1.json", "cons-1", "8001"), ("c2.json", "cons-2", "8002"), ("c3.json", "cons-3", "9999"), ("c4.json", "cons-4", "8003")] {
            harness.drop(name, try NotificationEndToEndTests.notificationFile(setup.signer, id: id, type: "CONSUMPTION_REQUEST", transactionID: transaction, revoked: false))
        }
        #expect(await eventually(timeout: .seconds(20)) { ((try? await Self.answers(harness)) ?? []).count >= 2 }, "\(daemon.standardError.suffix(2000))")
        #expect(await eventually(timeout: .seconds(20)) { (try? harness.store().history(orderID: "P3").last?.reason) == "consumption_not_answered" })
        // Nothing more can come once no consumption answer is left pending: each request is
        // answered once (what was answered is counted below, after the stop).
        #expect(await eventually(timeout: .seconds(20)) {
            (try? harness.store().pendingActions(dueBy: nil, limit: 10).isEmpty) == true
                && (try? harness.store().notifications(unmatchedOnly: true, limit: 10).count) == 1
        }, "\((try? harness.store().pendingActions(dueBy: nil, limit: 10)) ?? [])")
        let shown = try await harness.ctl(["show", "F1"])
        let waiting = try harness.store().order(id: "V2")?.state
        daemon.send(SIGTERM)
        #expect(await daemon.wait() == 0)

        let answers = try await Self.answers(harness)
        #expect(answers.count == 2, "\(answers)")
        let byTransaction = Dictionary(answers.map { ($0["transaction_id"]?.stringValue ?? "", $0) }, uniquingKeysWith: { first, _ in first })
        #expect(byTransaction["8001"]?["delivery_status"]?.stringValue == "DELIVERED", "\(answers)")
        #expect(byTransaction["8002"]?["delivery_status"]?.stringValue == "UNDELIVERED_OTHER", "\(answers)")
        for transaction in ["8001", "8002"] {
            #expect(byTransaction[transaction]?["refund_preference"]?.stringValue == "GRANT_FULL")
            #expect(byTransaction[transaction]?["sample_content_provided"] == .bool(true))
            #expect(byTransaction[transaction]?["environment"]?.stringValue == "Production")
        }
        #expect(byTransaction["9999"] == nil && byTransaction["8003"] == nil, "an unmatched or unverified request was answered")
        #expect(waiting == .verified, "V2 was meant to be waiting for its delivery when its request came: \(waiting.map(\.rawValue) ?? "none")")

        let store = try harness.store()
        #expect(try store.order(id: "F1")?.state == .finished, "a consumption request changed the order")
        let actions = try store.actions(orderID: "F1")
        #expect(actions.map(\.kind) == [.consumptionAnswer] && actions.first?.state == .done && actions.first?.idempotencyKey == "F1:consumption:cons-1", "\(actions)")
        #expect(try store.actions(orderID: "V2").filter { $0.kind == .consumptionAnswer }.map(\.state) == [.done])
        #expect(try store.actions(orderID: "P3").isEmpty && store.order(id: "P3")?.state != .finished)
        #expect(try store.history(orderID: "F1").last?.reason == "consumption_answer_queued")
        #expect(try store.notifications(unmatchedOnly: true, limit: 10).map(\.notification.notificationID) == ["cons-3"])
        #expect(shown.status == 0 && shown.output.contains("consumption_answer") && shown.output.contains("answered"), "\(shown.output)")
        let log = daemon.standardError
        #expect(!log.contains("eyJ") && !shown.output.contains("eyJ"), "a JWS or token was written out")
    }

    @Test("a CONSUMPTION_REQUEST only in the notification history (no file) is answered by polling, once")
    func polled() async throws {
        let harness = Harness("consumption-poll")
        _ = try await AppStoreEndToEndTests.setUp(harness)
        try await AppStoreEndToEndTests.register(harness, environment: "Production", [("8201", "gems", "")])
        harness.configure(Self.configuration(harness, consumption: "ConsumptionAnswer=on\nCustomerConsented=yes").replacingOccurrences(of: "Poll=off", with: "Poll=1s"))
        harness.drop("f1.json", OrderFixtures.orderJSON("F1", product: "gems", receipt: nil, transactionID: "8201"))
        let daemon = try harness.startDaemon()
        #expect(await harness.waitFor(.finished, count: 1), "\(harness.counts())")
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let body = """
            {"environment":"Production","notifications":[{"notificationUUID":"poll-cons-1","notificationType":"CONSUMPTION_REQUEST","version":"2.0",\
            "data":{"appAppleId":1234567890,"consumptionRequestReason":"UNINTENDED_PURCHASE","transactionInfo":{"transactionId":"8201",\
            "originalTransactionId":"8201","productId":"gems","purchaseDate":\(now - 3_600_000),"type":"Consumable"}}}]}
            """
        let registered = await harness.transport.send(
            HTTPRequest(url: harness.base + "/_mock/appstore/notifications", body: Array(body.utf8), timeout: .seconds(5)))
        #expect(registered.response?.status == 200, "\(registered.outcome)")
        #expect(await eventually(timeout: .seconds(20)) { ((try? await Self.answers(harness)) ?? []).count >= 1 }, "\(daemon.standardError.suffix(2000))")
        // Later polls see it again through the overlap: still one answer after two more.
        let polled = try await harness.mockStats().byEndpoint["production", default: 0]
        #expect(await eventually(timeout: .seconds(20)) {
            ((try? await harness.mockStats().byEndpoint["production"]) ?? 0) >= polled + 2
        })
        daemon.send(SIGTERM)
        #expect(await daemon.wait() == 0)
        let answers = try await Self.answers(harness)
        #expect(answers.count == 1 && answers.first?["transaction_id"]?.stringValue == "8201", "\(answers)")
        #expect(answers.first?["delivery_status"]?.stringValue == "DELIVERED" && answers.first?["refund_preference"] == .null)
        #expect(answers.first?["sample_content_provided"] == .bool(false))
    }

    @Test("ConsumptionAnswer=on without consent: said once at start; a request is recorded with why, and nothing is sent")
    func withoutConsent() async throws {
        let harness = Harness("consumption-no-consent")
        let setup = try await AppStoreEndToEndTests.setUp(harness)
        try await AppStoreEndToEndTests.register(harness, environment: "Production", [("8101", "gems", "")])
        harness.configure(Self.configuration(harness, consumption: "ConsumptionAnswer=on\nCustomerConsented=no"))
        harness.drop("f1.json", OrderFixtures.orderJSON("F1", product: "gems", receipt: nil, transactionID: "8101"))
        let daemon = try harness.startDaemon()
        #expect(await harness.waitFor(.finished, count: 1), "\(harness.counts())")
        harness.drop("c1.json", try NotificationEndToEndTests.notificationFile(setup.signer, id: "cons-9", type: "CONSUMPTION_REQUEST", transactionID: "8101", revoked: false))
        // Recorded in the transaction that would have queued an answer: none is (checked below),
        // so none can be sent later.
        #expect(await eventually(timeout: .seconds(20)) { (try? harness.store().history(orderID: "F1").last?.reason) == "consumption_not_answered" })
        daemon.send(SIGTERM)
        #expect(await daemon.wait() == 0)
        #expect(try await Self.answers(harness).isEmpty)
        #expect(try harness.store().actions(orderID: "F1").isEmpty)
        let log = daemon.standardError
        #expect(log.components(separatedBy: "ConsumptionAnswer=on but CustomerConsented=no").count == 2, "said once: \(log.suffix(2000))")
    }
}
