import Foundation
import Glibc
import ReconcileCore
import ReconcileCrypto
import ReconcileHTTP
import ReconcileMock
import Testing
import TestSupport
@testable import ReconcileStore

/// Pulling App Store notifications (DESIGN §5a, `[Notifications] Poll=`) against the built daemon
/// and the mock's Get Notification History: a refund Apple could not deliver to the web handler
/// reaches the daemon anyway, and the same notification arriving also as a file is applied once.
@Suite("End to end: polled App Store notifications", .serialized)
struct PolledNotificationEndToEndTests {
    @Test("a REFUND only at the mock (no file) revokes the finished order by polling; the same notification dropped as a file too is applied once: one row, one revoked transition")
    func pollRevokes() async throws {
        let harness = Harness("notifications-poll")
        let setup = try await AppStoreEndToEndTests.setUp(harness)
        try await AppStoreEndToEndTests.register(harness, environment: "Production", [("6001", "gems", ""), ("6002", "gems", "")])
        harness.configure(AppStoreEndToEndTests.configuration(harness, poll: "1s"))
        harness.drop("f1.json", OrderFixtures.orderJSON("F1", product: "gems", receipt: nil, transactionID: "6001"))
        harness.drop("f2.json", OrderFixtures.orderJSON("F2", product: "gems", receipt: nil, transactionID: "6002"))
        let daemon = try harness.startDaemon()
        #expect(await harness.waitFor(.finished, count: 2), "\(harness.counts())")

        // Apple sent the refund; the web handler was down: only the notification history has it.
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let body = """
            {"environment":"Production","notifications":[{"notificationUUID":"poll-1","notificationType":"REFUND","version":"2.0",\
            "data":{"appAppleId":1234567890,"transactionInfo":{"transactionId":"6001","originalTransactionId":"6001","productId":"gems",\
            "purchaseDate":\(now - 3_600_000),"type":"Consumable","revocationDate":\(now - 60_000),"revocationReason":0}}}]}
            """
        let registered = await harness.transport.send(
            HTTPRequest(url: harness.base + "/_mock/appstore/notifications", body: Array(body.utf8), timeout: .seconds(5)))
        #expect(registered.response?.status == 200, "\(registered.outcome)")
        #expect(await eventually(timeout: .seconds(20)) { (try? harness.store().order(id: "F1")?.state) == .revoked }, "\(daemon.standardError.suffix(2000))")

        // The web handler comes back and delivers Apple's retry of the same notification as a file.
        harness.drop("n1.json", try NotificationEndToEndTests.notificationFile(setup.signer, id: "poll-1", type: "REFUND", transactionID: "6001"))
        #expect(await eventually(timeout: .seconds(20)) {
            (try? FileManager.default.contentsOfDirectory(atPath: harness.directory.file("spool/incoming")).isEmpty) == true
        })
        // Further polls see it again (the overlap): still nothing more.
        let polls = try await harness.mockStats().byEndpoint["production"] ?? 0
        #expect(await eventually(timeout: .seconds(20)) { ((try? await harness.mockStats().byEndpoint["production"]) ?? 0) >= polls + 2 })
        daemon.send(SIGTERM)
        #expect(await daemon.wait() == 0)

        let store = try harness.store()
        #expect(try harness.scalar("SELECT count(*) FROM notifications") == 1)
        let stored = try store.notifications(orderID: "F1")
        #expect(stored.map(\.notification.notificationID) == ["poll-1"] && stored.first?.notification.via == .poll, "\(stored)")
        #expect(try store.history(orderID: "F1").filter { $0.to == .revoked }.count == 1)
        #expect(try store.order(id: "F1")?.reason == "refunded")
        #expect(try store.order(id: "F2")?.state == .finished)
        #expect(try harness.scalar("SELECT count(*) FROM checkpoints WHERE name = 'appstore.production'") == 1)
        #expect(Set(try FileManager.default.contentsOfDirectory(atPath: harness.directory.file("spool/rejected"))).isEmpty, "the file was taken, not quarantined")
        let log = daemon.standardError
        #expect(log.contains("App Store REFUND for transaction 6001: order F1 finished → revoked (polled)"), "\(log.suffix(2000))")
        #expect(!log.contains("eyJ"), "a JWS was written out")
        #expect(!log.contains("does not verify"), "\(log.suffix(2000))")
    }

    @Test("RENEWAL_EXTENSION summaries and EXTERNAL_PURCHASE_TOKEN name their app outside data: polled, they verify and the checkpoint moves on; dropped as a file, one is recorded, not quarantined wrong_bundle (issue 23 item 11)")
    func summaryNotifications() async throws {
        let harness = Harness("notifications-summary")
        let setup = try await AppStoreEndToEndTests.setUp(harness)
        let bundle = AppStoreEndToEndTests.bundleID
        let body = """
            {"environment":"Production","notifications":[\
            {"notificationUUID":"sum-1","notificationType":"RENEWAL_EXTENSION","subtype":"SUMMARY","version":"2.0",\
            "summary":{"environment":"Production","appAppleId":1234567890,"bundleId":"\(bundle)","productId":"sub.monthly",\
            "requestIdentifier":"efb27071-45a4-4aca-9854-2a1e9146f265","storefrontCountryCodes":["CAN","USA"],"succeededCount":5,"failedCount":2}},\
            {"notificationUUID":"ext-1","notificationType":"EXTERNAL_PURCHASE_TOKEN","subtype":"UNREPORTED","version":"2.0",\
            "externalPurchaseToken":{"externalPurchaseId":"b2158121-7af9-49d4-9561-1f588205523e","tokenCreationDate":1698148950000,\
            "appAppleId":1234567890,"bundleId":"\(bundle)"}}]}
            """
        let registered = await harness.transport.send(
            HTTPRequest(url: harness.base + "/_mock/appstore/notifications", body: Array(body.utf8), timeout: .seconds(5)))
        #expect(registered.response?.status == 200, "\(registered.outcome)")
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let summary = try setup.signer.sign(payload: Array("""
            {"notificationType":"RENEWAL_EXTENSION","subtype":"SUMMARY","notificationUUID":"sum-file","version":"2.0","signedDate":\(now),\
            "summary":{"environment":"Production","appAppleId":1234567890,"bundleId":"\(bundle)","productId":"sub.monthly",\
            "requestIdentifier":"r-2","storefrontCountryCodes":["USA"],"succeededCount":1,"failedCount":0}}
            """.utf8))
        harness.drop("summary.json", "{\"signedPayload\":\"\(summary)\"}")
        harness.configure(AppStoreEndToEndTests.configuration(harness, poll: "1s"))
        let daemon = try harness.startDaemon()
        #expect(await eventually(timeout: .seconds(20)) {
            (try? harness.scalar("SELECT count(*) FROM notifications")) == 3
        }, "\(daemon.standardError.suffix(2000))")
        // Two polls after the first: the checkpoint moves at each.
        #expect(await eventually(timeout: .seconds(20)) { ((try? harness.store().checkpoint("appstore.production")) ?? nil) != nil })
        let first = try harness.store().checkpoint("appstore.production")
        #expect(await eventually(timeout: .seconds(20)) {
            guard let current = try? harness.store().checkpoint("appstore.production"), let first else { return false }
            return current > first
        }, "the checkpoint does not move: \(daemon.standardError.suffix(2000))")
        daemon.send(SIGTERM)
        #expect(await daemon.wait() == 0)

        let stored = try harness.store().notifications(unmatchedOnly: false, limit: 10)
        #expect(Set(stored.map(\.notification.notificationID)) == ["sum-1", "ext-1", "sum-file"], "\(stored)")
        #expect(stored.first { $0.notification.notificationID == "sum-1" }?.notification.subtype == "SUMMARY")
        #expect(stored.first { $0.notification.notificationID == "ext-1" }?.notification.environment == "Production")
        #expect(Set(try FileManager.default.contentsOfDirectory(atPath: harness.directory.file("spool/rejected"))).isEmpty, "the summary file was quarantined")
        let log = daemon.standardError
        #expect(!log.contains("does not verify") && !log.contains("wrong_bundle"), "\(log.suffix(2000))")
    }
}
