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
}
