import Foundation
import Glibc
import ReconcileCore
import ReconcileCrypto
import ReconcileHTTP
import ReconcileMock
import Testing
import TestSupport
@testable import ReconcileStore

/// Purchases the phone never sent (DESIGN §5b) against the built daemon and the mock: an App
/// Store `ONE_TIME_CHARGE`, as a file or only in the notification history, waits out the grace,
/// becomes order `apple:<transactionId>` and is delivered once with `origin: store`; the
/// phone's own order, inside the grace, takes it over; after it, ends `same_purchase_as`.
@Suite("End to end: purchases the phone never sent", .serialized)
struct DiscoveryEndToEndTests {
    static let account = "5b1c2f4e-7d3a-4e2b-9c1d-0a6f8e3b2d71"

    /// A signed `ONE_TIME_CHARGE` notification file for `transactionID`, bought by `account`.
    static func oneTimeChargeFile(_ signer: JWSSigner, id: String, transactionID: String, account: String? = account) throws -> String {
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let token = account.map { ",\"appAccountToken\":\"\($0)\"" } ?? ""
        let transaction = try signer.sign(payload: Array("""
            {"transactionId":"\(transactionID)","originalTransactionId":"\(transactionID)","productId":"gems",\
            "bundleId":"\(AppStoreEndToEndTests.bundleID)","environment":"Production","purchaseDate":\(now - 60_000),\
            "signedDate":\(now),"type":"Consumable","inAppOwnershipType":"PURCHASED"\(token)}
            """.utf8))
        let payload = try signer.sign(payload: Array("""
            {"notificationType":"ONE_TIME_CHARGE","notificationUUID":"\(id)","version":"2.0","signedDate":\(now),\
            "data":{"appAppleId":1234567890,"bundleId":"\(AppStoreEndToEndTests.bundleID)","environment":"Production",\
            "signedTransactionInfo":"\(transaction)"}}
            """.utf8))
        return "{\"signedPayload\":\"\(payload)\"}"
    }

    static func configuration(_ harness: Harness, mode: String = "deliver", grace: String = "2s", poll: String = "off") -> String {
        AppStoreEndToEndTests.configuration(harness, poll: poll)
            + "\n[Delivery]\nURL=\(harness.base)/deliver\n[Discovery]\nMode=\(mode)\nGrace=\(grace)\n"
    }

    @Test("a ONE_TIME_CHARGE file no phone order follows: after the grace, order apple:<id>, origin store, delivered once; the phone's order that comes later ends same_purchase_as it")
    func fileBecomesOrder() async throws {
        let harness = Harness("discovery-file")
        let setup = try await AppStoreEndToEndTests.setUp(harness)
        try await AppStoreEndToEndTests.register(harness, environment: "Production", [("7001", "gems", ",\"appAccountToken\":\"\(Self.account)\"")])
        harness.configure(Self.configuration(harness))
        let daemon = try harness.startDaemon()
        harness.drop("n1.json", try Self.oneTimeChargeFile(setup.signer, id: "otc-1", transactionID: "7001"))
        #expect(await eventually(timeout: .seconds(30)) { (try? harness.store().order(id: "apple:7001")?.state) == .finished },
                "\(daemon.standardError.suffix(3000))")
        let store = try harness.store()
        let made = try #require(try store.order(id: "apple:7001"))
        #expect(made.origin == .store && made.applicationUsername == Self.account && made.finishedBy == .delivery)
        var stats = try await harness.mockStats()
        #expect(stats.deliveries["apple:7001"] == 1 && stats.deliveredOrigins["apple:7001"] == "store", "\(stats.deliveries)")

        // The phone's order, late: verified for the same transaction, finished with nothing delivered.
        harness.drop("m1.json", OrderFixtures.orderJSON(
            "M-7001", product: "gems", receipt: nil, transactionID: "7001", extra: "\"application_username\":\"\(Self.account)\""))
        #expect(await eventually(timeout: .seconds(30)) { (try? harness.store().order(id: "M-7001")?.state) == .finished },
                "\(daemon.standardError.suffix(3000))")
        let late = try #require(try store.order(id: "M-7001"))
        #expect(late.finishedBy == .discovery && late.reason == "same_purchase_as", "\(late)")
        #expect(try store.history(orderID: "M-7001").last?.detail == "apple:7001")
        stats = try await harness.mockStats()
        #expect(stats.deliveries["M-7001"] == nil && stats.deliveries["apple:7001"] == 1)
        #expect(try store.discoveredPurchases(limit: 10).map(\.status) == [.becameOrder(orderID: "apple:7001")])
        // show on either names the other.
        let shown = try await harness.ctl(["show", "apple:7001"])
        #expect(shown.output.contains("same purchase  M-7001 (the phone's order, late"), "\(shown.output)")
        let shownJSON = try await harness.ctl(["show", "apple:7001", "--json"])
        #expect(shownJSON.output.contains(#""same_purchase_orders":["M-7001"]"#), "\(shownJSON.output)")
        let lateShown = try await harness.ctl(["show", "M-7001"]).output
        #expect(lateShown.contains("same_purchase_as") && lateShown.contains(": apple:7001"), "\(lateShown)")
        daemon.send(SIGTERM)
        #expect(await daemon.wait() == 0)
        let log = daemon.standardError
        #expect(log.contains("App Store purchase 7001 of gems") && log.contains("became order apple:7001"), "\(log.suffix(3000))")
        #expect(!log.contains("eyJ"), "a JWS was written out")
    }

    @Test("the phone's order inside the grace takes the purchase over: one order, the merchant's own id, one delivery")
    func phoneOrderInsideGrace() async throws {
        let harness = Harness("discovery-grace")
        let setup = try await AppStoreEndToEndTests.setUp(harness)
        try await AppStoreEndToEndTests.register(harness, environment: "Production", [("7101", "gems", ",\"appAccountToken\":\"\(Self.account)\"")])
        harness.configure(Self.configuration(harness, grace: "4s"))
        let daemon = try harness.startDaemon()
        harness.drop("n1.json", try Self.oneTimeChargeFile(setup.signer, id: "otc-2", transactionID: "7101"))
        #expect(await eventually(timeout: .seconds(20)) { (try? harness.store().discoveredPurchases(limit: 5).count) == 1 })
        harness.drop("m1.json", OrderFixtures.orderJSON(
            "M-7101", product: "gems", receipt: nil, transactionID: "7101", extra: "\"application_username\":\"\(Self.account)\""))
        #expect(await eventually(timeout: .seconds(30)) {
            (try? harness.store().discoveredPurchases(limit: 5).first?.status) == .joined(orderID: "M-7101")
        }, "\(daemon.standardError.suffix(3000))")
        let store = try harness.store()
        #expect(try store.order(id: "M-7101")?.state == .finished)
        #expect(try store.order(id: "apple:7101") == nil)
        let stats = try await harness.mockStats()
        #expect(stats.deliveries == ["M-7101": 1] && stats.deliveredOrigins["M-7101"] == nil, "\(stats.deliveries)")
        daemon.send(SIGTERM)
        #expect(await daemon.wait() == 0)
    }

    @Test("pulled from the notification history with no file: with Mode=record both purchases are listed, recorded after the grace, and no order is made")
    func historyRecordAndNoAccount() async throws {
        let harness = Harness("discovery-history")
        _ = try await AppStoreEndToEndTests.setUp(harness)
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let body = """
            {"environment":"Production","notifications":[{"notificationUUID":"otc-h1","notificationType":"ONE_TIME_CHARGE","version":"2.0",\
            "data":{"appAppleId":1234567890,"transactionInfo":{"transactionId":"7201","originalTransactionId":"7201","productId":"gems",\
            "purchaseDate":\(now - 60_000),"type":"Consumable","appAccountToken":"\(Self.account)"}}},\
            {"notificationUUID":"otc-h2","notificationType":"ONE_TIME_CHARGE","version":"2.0",\
            "data":{"appAppleId":1234567890,"transactionInfo":{"transactionId":"7202","originalTransactionId":"7202","productId":"gems",\
            "purchaseDate":\(now - 60_000),"type":"Consumable"}}}]}
            """
        let registered = await harness.transport.send(
            HTTPRequest(url: harness.base + "/_mock/appstore/notifications", body: Array(body.utf8), timeout: .seconds(5)))
        #expect(registered.response?.status == 200, "\(registered.outcome)")
        harness.configure(Self.configuration(harness, mode: "record", grace: "1s", poll: "1h"))
        let daemon = try harness.startDaemon()
        #expect(await eventually(timeout: .seconds(30)) {
            (try? harness.store().discoveredPurchases(limit: 5).map(\.status)) == [.recorded, .recorded]
        }, "\(daemon.standardError.suffix(3000))")
        #expect(try harness.store().order(id: "apple:7201") == nil)
        daemon.send(SIGTERM)
        #expect(await daemon.wait() == 0)
        let log = daemon.standardError
        #expect(log.contains("[Discovery] Mode=record, so no order is made"), "\(log.suffix(3000))")
        #expect(try harness.store().discoveredPurchases(limit: 5).allSatisfy { $0.purchase.via == .history })
    }

    @Test("a purchase the app set no account for cannot be granted: after the grace it is no_account, logged at warning, and no order is made")
    func noAccount() async throws {
        let harness = Harness("discovery-no-account")
        let setup = try await AppStoreEndToEndTests.setUp(harness)
        harness.configure(Self.configuration(harness, grace: "1s"))
        let daemon = try harness.startDaemon()
        harness.drop("n1.json", try Self.oneTimeChargeFile(setup.signer, id: "otc-3", transactionID: "7301", account: nil))
        #expect(await eventually(timeout: .seconds(30)) {
            (try? harness.store().discoveredPurchases(limit: 5).first?.status) == .noAccount
        }, "\(daemon.standardError.suffix(3000))")
        #expect(try harness.store().order(id: "apple:7301") == nil)
        daemon.send(SIGTERM)
        #expect(await daemon.wait() == 0)
        let log = daemon.standardError
        #expect(log.contains("the app set no account at purchase; it cannot be granted to anyone"), "\(log.suffix(3000))")
        #expect(try await harness.mockStats().deliveries.isEmpty)
    }

    @Test("a forged ONE_TIME_CHARGE (a chain the daemon does not trust) and a tampered one change nothing: quarantined with the reason, no purchase kept, no order; a genuine one beside them is delivered")
    func forgedChangesNothing() async throws {
        let harness = Harness("discovery-forged")
        let setup = try await AppStoreEndToEndTests.setUp(harness)
        let other = try await TestCertificateChain.makeUnshared()
        let forger = JWSSigner(key: try ES256PrivateKey(pem: other.leafKeyPEM), certificateChainDER: other.x5c)
        harness.configure(Self.configuration(harness, grace: "1s"))
        let daemon = try harness.startDaemon()
        harness.drop("forged.json", try Self.oneTimeChargeFile(forger, id: "otc-f1", transactionID: "7401"))
        harness.drop("tampered.json", NotificationEndToEndTests.tamper(try Self.oneTimeChargeFile(setup.signer, id: "otc-f2", transactionID: "7402")))
        #expect(await eventually(timeout: .seconds(20)) { NotificationEndToEndTests.rejectedReasons(harness).count == 2 },
                "\(daemon.standardError.suffix(3000))")
        // A genuine one dropped after them becomes an order after the grace: by then the others
        // would have too.
        try await AppStoreEndToEndTests.register(harness, environment: "Production", [("7403", "gems", ",\"appAccountToken\":\"\(Self.account)\"")])
        harness.drop("genuine.json", try Self.oneTimeChargeFile(setup.signer, id: "otc-f3", transactionID: "7403"))
        #expect(await eventually(timeout: .seconds(30)) { (try? harness.store().order(id: "apple:7403")?.state) == .finished },
                "\(daemon.standardError.suffix(3000))")
        daemon.send(SIGTERM)
        #expect(await daemon.wait() == 0)
        let reasons = NotificationEndToEndTests.rejectedReasons(harness).sorted()
        #expect(reasons.count == 2 && reasons[0].hasPrefix("bad_signature: ") && reasons[1].hasPrefix("invalid_chain: "), "\(reasons)")
        #expect(try harness.store().discoveredPurchases(limit: 5).map(\.purchase.transactionKey) == ["7403"])
        #expect(try harness.scalar("SELECT count(*) FROM orders") == 1 && harness.scalar("SELECT count(*) FROM notifications") == 1)
        #expect(try await harness.mockStats().deliveries == ["apple:7403": 1])
    }
}
