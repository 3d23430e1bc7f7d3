import Foundation
import Glibc
import ReconcileCore
import ReconcileMock
import Testing
import TestSupport
@testable import ReconcileStore

/// Google Play purchases the phone never sent (DESIGN §5b), pulled from Cloud Pub/Sub against the
/// built daemon and the mock: a one-time purchase a pulled message names is asked of Google, kept
/// when paid, made order `google:<orderId>` after the grace, delivered once with `origin: store`
/// and acknowledged at Google; a message redelivered after a SIGKILL between the commit and the
/// acknowledgement is applied once; a message Google does not confirm changes nothing.
@Suite("End to end: Google Play purchases pulled from Pub/Sub", .serialized)
struct PlayDiscoveryEndToEndTests {
    static let subscription = "projects/test-project/subscriptions/play-rtdn"

    func configure(_ harness: Harness, grace: String = "1s") {
        harness.configure("""
            \(harness.playSection("Subscription=\(Self.subscription)\nPubSubURL=\(harness.base)/pubsub"))
            [Delivery]
            URL=\(harness.base)/deliver
            [Discovery]
            Mode=deliver
            Grace=\(grace)
            \(VerificationEndToEndTests.quickRetry)
            """)
    }

    /// Publishes a `ONE_TIME_PRODUCT_PURCHASED` notification for `token` at the mock.
    func publish(_ harness: Harness, messageID: String, token: String, product: String = "gems") async throws {
        let notification = """
            {"version":"1.0","packageName":"\(Harness.playPackage)","eventTimeMillis":"\(Int64(Date().timeIntervalSince1970 * 1000))",\
            "oneTimeProductNotification":{"version":"1.0","notificationType":1,"purchaseToken":"\(token)","sku":"\(product)"}}
            """
        try await harness.postMock(
            "/_mock/pubsub/publish", #"{"subscription":"\#(Self.subscription)","messages":[{"json":\#(notification),"messageId":"\#(messageID)"}]}"#)
    }

    @Test("a purchase only Pub/Sub reports: pulled, confirmed with Google, after the grace order google:<orderId>, delivered once with origin store, acknowledged at Google; the message acknowledged")
    func pulledBecomesOrder() async throws {
        let harness = Harness("play-discovery")
        _ = try await harness.startPlayMock(arguments: ["--pubsub-ack-deadline", "2"])
        let token = playToken("D1")
        try await harness.registerPurchases([(token, "gems", "\"orderId\":\"GPA.7001\",\"obfuscatedExternalAccountId\":\"acct-1\"")])
        configure(harness)
        try await publish(harness, messageID: "m-1", token: token)
        let daemon = try harness.startDaemon()
        #expect(await eventually(timeout: .seconds(30)) { (try? harness.store().order(id: "google:GPA.7001")?.state) == .finished },
                "\(daemon.standardError.suffix(3000))")
        #expect(await eventually(timeout: .seconds(20)) { (try? harness.store().outboxSummary().pending) == 0 })
        #expect(await eventually(timeout: .seconds(20)) { ((try? await harness.mockStats().pubsubAcknowledged["m-1"]) ?? 0) == 1 })
        daemon.send(SIGTERM)
        #expect(await daemon.wait() == 0)
        let store = try harness.store()
        let order = try #require(try store.order(id: "google:GPA.7001"))
        #expect(order.origin == .store && order.applicationUsername == "acct-1" && order.finishedBy == .delivery)
        let stats = try await harness.mockStats()
        #expect(stats.deliveries["google:GPA.7001"] == 1 && stats.deliveredOrigins["google:GPA.7001"] == "store")
        #expect(try harness.actionStates("google:GPA.7001") == ["play_acknowledge done"])
        #expect(try store.discoveredPurchases(limit: 5).map(\.status) == [.becameOrder(orderID: "google:GPA.7001")])
        #expect(try store.discoveredPurchases(limit: 5).first?.purchase.via == .pubsub)
        let log = daemon.standardError
        #expect(!log.contains(token), "a purchase token was written out")
    }

    @Test("SIGKILLed between the commit and the acknowledgement: the message comes back, and is only acknowledged: taken in once, Google asked once")
    func redeliveredAfterKill() async throws {
        let harness = Harness("play-discovery-kill")
        _ = try await harness.startPlayMock(arguments: ["--pubsub-ack-deadline", "1"])
        let token = playToken("D2")
        try await harness.registerPurchases([(token, "gems", "\"orderId\":\"GPA.7002\",\"obfuscatedExternalAccountId\":\"acct-2\"")])
        configure(harness, grace: "30s")
        try await harness.postMock("/_mock/pubsub/config", #"{"fail_acknowledge":true}"#)
        try await publish(harness, messageID: "m-2", token: token)
        var daemon = try harness.startDaemon()
        // Committed, never acknowledged: killed before it can be.
        #expect(await eventually(timeout: .seconds(20)) { (try? harness.store().discoveredPurchases(limit: 5).count) == 1 },
                "\(daemon.standardError.suffix(3000))")
        daemon.send(SIGKILL)
        #expect(await daemon.wait() == 128 + SIGKILL)
        try await harness.postMock("/_mock/pubsub/config", #"{"fail_acknowledge":false}"#)
        daemon = try harness.startDaemon()
        #expect(await eventually(timeout: .seconds(20)) { ((try? await harness.mockStats().pubsubAcknowledged["m-2"]) ?? 0) == 1 },
                "\(daemon.standardError.suffix(3000))")
        daemon.send(SIGTERM)
        #expect(await daemon.wait() == 0)
        #expect(try await harness.mockStats().pubsubDelivered["m-2"] ?? 0 >= 2, "the message was not delivered again")
        #expect(try harness.scalar("SELECT count(*) FROM notifications WHERE notification_id = 'pubsub:m-2'") == 1)
        #expect(try harness.scalar("SELECT count(*) FROM discovered_purchases") == 1)
        // Known by its message id: acknowledged without asking Google again (once, before the kill).
        #expect(daemon.standardError.contains("Pub/Sub message m-2 was taken in before; acknowledged without asking Google again"), "\(daemon.standardError.suffix(3000))")
        #expect(try await harness.playStats().reads[MockStats.fingerprint(token)] == 1)
    }

    @Test("a message naming a token Google does not know changes nothing: recorded, acknowledged, no purchase kept, no order")
    func unconfirmed() async throws {
        let harness = Harness("play-discovery-unconfirmed")
        _ = try await harness.startPlayMock(arguments: ["--pubsub-ack-deadline", "2"])
        configure(harness)
        try await publish(harness, messageID: "m-3", token: playToken("FORGED"))
        let daemon = try harness.startDaemon()
        #expect(await eventually(timeout: .seconds(20)) { ((try? await harness.mockStats().pubsubAcknowledged["m-3"]) ?? 0) == 1 },
                "\(daemon.standardError.suffix(3000))")
        daemon.send(SIGTERM)
        #expect(await daemon.wait() == 0)
        #expect(try harness.scalar("SELECT count(*) FROM discovered_purchases") == 0)
        #expect(try harness.scalar("SELECT count(*) FROM orders") == 0)
        #expect(daemon.standardError.contains("Google does not confirm the one-time purchase"), "\(daemon.standardError.suffix(3000))")
    }

    @Test("a purchase Google says is pending is left unacknowledged; delivered again once paid, it is kept")
    func pendingThenPaid() async throws {
        let harness = Harness("play-discovery-pending")
        _ = try await harness.startPlayMock(arguments: ["--pubsub-ack-deadline", "1"])
        let token = playToken("D4")
        try await harness.registerPurchases([(token, "gems", "\"states\":[2,0],\"orderId\":\"GPA.7004\",\"obfuscatedExternalAccountId\":\"acct-4\"")])
        configure(harness, grace: "30s")
        try await publish(harness, messageID: "m-4", token: token)
        let daemon = try harness.startDaemon()
        #expect(await eventually(timeout: .seconds(30)) { (try? harness.store().discoveredPurchases(limit: 5).count) == 1 },
                "\(daemon.standardError.suffix(3000))")
        #expect(await eventually(timeout: .seconds(10)) { ((try? await harness.mockStats().pubsubAcknowledged["m-4"]) ?? 0) == 1 })
        daemon.send(SIGTERM)
        #expect(await daemon.wait() == 0)
        #expect(try await harness.mockStats().pubsubDelivered["m-4"] ?? 0 >= 2, "taken before it was paid")
        #expect(daemon.standardError.contains("not paid yet"), "\(daemon.standardError.suffix(3000))")
        #expect(try harness.store().discoveredPurchases(limit: 5).first?.purchase.transactionKey == "google:GPA.7004")
    }

    @Test("a push file of a one-time purchase: taken in as a record, confirmed with Google, after the grace order google:<orderId> delivered once")
    func pushFileConfirmed() async throws {
        let harness = Harness("play-discovery-push-file")
        _ = try await harness.startPlayMock()
        let token = playToken("D5")
        let forged = playToken("FORGED5")
        try await harness.registerPurchases([(token, "gems", "\"orderId\":\"GPA.7005\",\"obfuscatedExternalAccountId\":\"acct-5\"")])
        // Push files only: no subscription to pull.
        harness.configure("""
            \(harness.playSection())
            [Delivery]
            URL=\(harness.base)/deliver
            [Discovery]
            Mode=deliver
            Grace=1s
            \(VerificationEndToEndTests.quickRetry)
            """)
        let daemon = try harness.startDaemon()
        func push(_ messageID: String, _ token: String) -> String {
            let notification = #"{"version":"1.0","packageName":"\#(Harness.playPackage)","eventTimeMillis":"1","oneTimeProductNotification":{"version":"1.0","notificationType":1,"purchaseToken":"\#(token)","sku":"gems"}}"#
            return #"{"message":{"attributes":{},"data":"\#(Data(notification.utf8).base64EncodedString())","messageId":"\#(messageID)"},"subscription":"projects/p/subscriptions/play"}"#
        }
        harness.drop("push-5.json", push("p-5", token))
        harness.drop("push-6.json", push("p-6", forged))
        #expect(await eventually(timeout: .seconds(30)) { (try? harness.store().order(id: "google:GPA.7005")?.state) == .finished },
                "\(daemon.standardError.suffix(3000))")
        daemon.send(SIGTERM)
        #expect(await daemon.wait() == 0)
        let store = try harness.store()
        #expect(try store.order(id: "google:GPA.7005")?.applicationUsername == "acct-5")
        #expect(try store.discoveredPurchases(limit: 5).map(\.status) == [.becameOrder(orderID: "google:GPA.7005")])
        #expect(try store.discoveredPurchases(limit: 5).first?.purchase.via == .file)
        #expect(try harness.scalar("SELECT count(*) FROM notifications WHERE notification_id IN ('pubsub:p-5', 'pubsub:p-6')") == 2)
        #expect(try await harness.mockStats().deliveries == ["google:GPA.7005": 1])
        // The forged one changed nothing and said why.
        #expect(try harness.scalar("SELECT count(*) FROM orders") == 1)
        #expect(daemon.standardError.contains("Play push p-6 (one-time purchase of gems): Google does not confirm the purchase it names"), "\(daemon.standardError.suffix(3000))")
        #expect(!daemon.standardError.contains(token), "a purchase token was written out")
    }
}
