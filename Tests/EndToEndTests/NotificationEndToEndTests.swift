import Foundation
import Glibc
import ReconcileCore
import ReconcileCrypto
import ReconcileFoundation
import ReconcileMock
import Testing
import TestSupport
@testable import ReconcileStore

/// Store notification files in the spool (DESIGN §3, §5a), against the built daemon: App Store
/// Server Notifications V2 signed with the test chain the daemon trusts, dropped as a web handler
/// would drop them.
@Suite("End to end: store notifications", .serialized)
struct NotificationEndToEndTests {
    static let bundleID = AppStoreEndToEndTests.bundleID

    /// A `{"signedPayload":…}` file body: the notification, and its signed transaction inside.
    static func notificationFile(
        _ signer: JWSSigner, id: String, type: String, transactionID: String, environment: String = "Production",
        bundleID: String = bundleID, revoked: Bool = true, signedAt: Int64? = nil
    ) throws -> String {
        let now = signedAt ?? Int64(Date().timeIntervalSince1970 * 1000)
        let revocation = revoked ? ",\"revocationDate\":\(now - 60_000),\"revocationReason\":0" : ""
        let transaction = try signer.sign(payload: Array("""
            {"transactionId":"\(transactionID)","originalTransactionId":"\(transactionID)","productId":"gems","bundleId":"\(bundleID)",\
            "environment":"\(environment)","purchaseDate":\(now - 3_600_000),"signedDate":\(now),"type":"Consumable"\(revocation)}
            """.utf8))
        let payload = try signer.sign(payload: Array("""
            {"notificationType":"\(type)","notificationUUID":"\(id)","version":"2.0","signedDate":\(now),\
            "data":{"appAppleId":1234567890,"bundleId":"\(bundleID)","environment":"\(environment)","signedTransactionInfo":"\(transaction)"}}
            """.utf8))
        return "{\"signedPayload\":\"\(payload)\"}"
    }

    @Test("a REFUND file revokes a finished order, the same notification again changes nothing, REFUND_REVERSED finishes it again; one for nobody is listed unmatched; another chain, another bundle and a tampered payload are quarantined and change nothing")
    func refunds() async throws {
        let harness = Harness("notifications")
        let setup = try await AppStoreEndToEndTests.setUp(harness)
        try await AppStoreEndToEndTests.register(harness, environment: "Production", [("3001", "gems", ""), ("3002", "gems", "")])
        // Verification of order P1 fails for now (the mock does not know 3003): it stays pending.
        harness.configure(AppStoreEndToEndTests.configuration(harness) + "\n[Revocation]\nURL=\(harness.base)/revocation\n")
        harness.drop("f1.json", OrderFixtures.orderJSON("F1", product: "gems", receipt: nil, transactionID: "3001"))
        harness.drop("f2.json", OrderFixtures.orderJSON("F2", product: "gems", receipt: nil, transactionID: "3002"))
        let daemon = try harness.startDaemon()
        #expect(await harness.waitFor(.finished, count: 2), "\(harness.counts())")

        harness.drop("n1.json", try Self.notificationFile(setup.signer, id: "nnnn-1", type: "REFUND", transactionID: "3001"))
        #expect(await eventually(timeout: .seconds(20)) { (try? harness.store().order(id: "F1")?.state) == .revoked })
        // The web handler delivered it twice (Apple retries with the same notificationUUID).
        harness.drop("n1-again.json", try Self.notificationFile(setup.signer, id: "nnnn-1", type: "REFUND", transactionID: "3001"))
        harness.drop("nobody.json", try Self.notificationFile(setup.signer, id: "nnnn-2", type: "REFUND", transactionID: "9999"))
        // Signed by a chain the daemon does not trust; for another app; tampered after signing.
        let stranger = try await TestCertificateChain.makeUnshared()
        let strangerSigner = JWSSigner(key: try ES256PrivateKey(pem: stranger.leafKeyPEM), certificateChainDER: stranger.x5c)
        harness.drop("chain.json", try Self.notificationFile(strangerSigner, id: "nnnn-3", type: "REFUND", transactionID: "3002"))
        harness.drop("bundle.json", try Self.notificationFile(setup.signer, id: "nnnn-4", type: "REFUND", transactionID: "3002", bundleID: "com.example.other"))
        let good = try Self.notificationFile(setup.signer, id: "nnnn-5", type: "REFUND", transactionID: "3002")
        harness.drop("tampered.json", Self.tamper(good))
        #expect(await eventually(timeout: .seconds(20)) { Self.rejectedReasons(harness).count == 3 }, "\(Self.rejectedReasons(harness))")
        #expect(await eventually(timeout: .seconds(20)) { (try? harness.store().notifications(unmatchedOnly: true, limit: 10).count) == 1 })

        harness.drop("n6.json", try Self.notificationFile(setup.signer, id: "nnnn-6", type: "REFUND_REVERSED", transactionID: "3001", revoked: false))
        #expect(await eventually(timeout: .seconds(20)) { (try? harness.store().order(id: "F1")?.state) == .finished })
        // The merchant was told both, each once, under its own key.
        #expect(await eventually(timeout: .seconds(20)) {
            ((try? await harness.mockStats())?.revocationsSucceeded["F1:reinstated:nnnn-6"] ?? 0) == 1
        })
        let stats = try await harness.mockStats()
        #expect(stats.revocationKeys["F1"] == ["F1:revoked:nnnn-1", "F1:reinstated:nnnn-6"], "\(stats.revocationKeys)")
        #expect(stats.revocationBodies["F1:revoked:nnnn-1"]?["event"]?.stringValue == "revoked")
        #expect(stats.revocationBodies["F1:revoked:nnnn-1"]?["transaction_id"]?.stringValue == "3001")
        #expect(stats.revocationBodies["F1:reinstated:nnnn-6"]?["event"]?.stringValue == "reinstated")
        #expect(stats.revocationKeys["F2"] == nil, "an unverified notification told the merchant")
        let listed = try await harness.ctl(["notifications", "--json"])
        let unmatched = try await harness.ctl(["notifications", "--unmatched"])
        let shown = try await harness.ctl(["show", "F1"])
        let status = try await harness.ctl(["status"])
        daemon.send(SIGTERM)
        #expect(await daemon.wait() == 0)

        let store = try harness.store()
        #expect(try store.order(id: "F2")?.state == .finished, "an unverified notification changed an order")
        let history = try store.history(orderID: "F1").suffix(2)
        #expect(history.map(\.reason) == ["refunded", "refund_reversed"] && history.map(\.to) == [.revoked, .finished])
        #expect(history.first?.detail?.contains("App Store REFUND, transaction 3001, revoked at ") == true, "\(history.first?.detail ?? "")")
        #expect(try store.notifications(orderID: "F1").map(\.notification.notificationID) == ["nnnn-1", "nnnn-6"])
        let reasons = Self.rejectedReasons(harness).sorted()
        #expect(reasons.contains { $0.hasPrefix("invalid_chain: the notification does not verify") }, "\(reasons)")
        #expect(reasons.contains { $0.hasPrefix("wrong_bundle: the notification does not verify") }, "\(reasons)")
        #expect(reasons.contains { $0.hasPrefix("bad_signature: the notification does not verify") }, "\(reasons)")
        let log = daemon.standardError
        #expect(log.contains("App Store REFUND for transaction 3001: order F1 finished → revoked"), "\(log.suffix(1500))")
        #expect(log.contains("App Store REFUND_REVERSED for transaction 3001: order F1 revoked → finished"))
        #expect(log.contains("App Store REFUND for transaction 9999 (from spool file nobody.json) matches no order"))
        // No signed payload in any output.
        for written in [log, listed.output, unmatched.output, shown.output, reasons.joined(separator: "\n")] {
            #expect(!written.contains("eyJ"), "a JWS was written out")
        }
        #expect(listed.status == 0 && listed.output.contains("\"notification_id\":\"nnnn-1\"") && listed.output.contains("\"outcome\":\"unmatched\""), "\(listed)")
        #expect(unmatched.output.contains("9999") && !unmatched.output.contains("3001"), "\(unmatched.output)")
        #expect(shown.output.contains("REFUND_REVERSED"), "\(shown.output)")
        #expect(status.output.contains("1 unmatched"), "\(status.output)")
    }

    @Test("a refund for an order not yet verified ends it rejected `refunded`: nothing is delivered")
    func refundBeforeVerification() async throws {
        let harness = Harness("notifications-pending")
        let setup = try await AppStoreEndToEndTests.setUp(harness)
        // The App Store answers 500 for a while: the order stays pending.
        harness.configure(AppStoreEndToEndTests.configuration(harness, extra: "") + "\n[Delivery]\nURL=\(harness.base)/deliver\n")
        try await harness.configureMock(#"{"status_rates":{"500":1},"path_prefix":"/appstore/"}"#)
        try await AppStoreEndToEndTests.register(harness, environment: "Production", [("4001", "gems", "")])
        harness.drop("p1.json", OrderFixtures.orderJSON("P1", product: "gems", receipt: nil, transactionID: "4001"))
        let daemon = try harness.startDaemon()
        #expect(await eventually(timeout: .seconds(20)) { ((try? harness.store().order(id: "P1")?.attempts) ?? 0) >= 1 })
        harness.drop("n.json", try Self.notificationFile(setup.signer, id: "pppp-1", type: "REFUND", transactionID: "4001"))
        #expect(await eventually(timeout: .seconds(20)) { (try? harness.store().order(id: "P1")?.state) == .rejected })
        try await harness.configureMock(#"{"reset":true}"#)
        // A sentinel order, verified and delivered once the App Store answers again: the turns
        // that took it would have taken P1 too, were it still to be verified.
        try await AppStoreEndToEndTests.register(harness, environment: "Production", [("4002", "gems", "")])
        harness.drop("p2.json", OrderFixtures.orderJSON("P2", product: "gems", receipt: nil, transactionID: "4002"))
        #expect(await harness.waitFor(.finished, count: 1, timeout: .seconds(30)), "\(harness.counts())")
        daemon.send(SIGTERM)
        #expect(await daemon.wait() == 0)
        #expect(try harness.store().order(id: "P1")?.reason == "refunded")
        #expect(try await harness.mockStats().deliveries["P2"] != nil, "the sentinel was not delivered")
        #expect(try await harness.mockStats().deliveries["P1"] == nil, "a refunded order was delivered")
    }

    @Test("Kind=apple: App Store notifications are verified against RootCertificates= too; a refund revokes the receipt order that claimed its transaction; without a readable root a file is set aside naming it")
    func kindApple() async throws {
        let harness = Harness("notifications-apple")
        let setup = try await AppStoreEndToEndTests.setUp(harness, mockArguments: ["--shared-secret", "s3cret"])
        harness.directory.write("shared-secret", "s3cret\n")
        func configuration(roots: String) -> String {
            """
            [Verifier]
            Kind=apple
            URL=\(harness.base)/verifyReceipt
            BundleID=\(Self.bundleID)
            SharedSecretFile=shared-secret
            RootCertificates=\(roots)
            MaxRate=infinity
            """
        }
        harness.configure(configuration(roots: "root.der"))
        harness.dropOrder("A1", receipt: appleReceipt("7001"))
        let daemon = try harness.startDaemon()
        #expect(await harness.waitFor(.finished, count: 1), "\(harness.counts())")
        harness.drop("refund.json", try Self.notificationFile(setup.signer, id: "apple-1", type: "REFUND", transactionID: "7001"))
        #expect(await eventually(timeout: .seconds(20)) { (try? harness.store().order(id: "A1")?.state) == .revoked })
        // A root file that is not there: orders go on; notification files are set aside, named why.
        harness.configure(configuration(roots: "missing-root.der"))
        let reload = try await harness.ctl(["reload"])
        #expect(reload.status == 0, "\(reload)")
        harness.drop("refund-2.json", try Self.notificationFile(setup.signer, id: "apple-2", type: "REFUND", transactionID: "7002"))
        #expect(await eventually(timeout: .seconds(20)) { !Self.rejectedReasons(harness).isEmpty })
        daemon.send(SIGTERM)
        #expect(await daemon.wait() == 0)
        let reasons = Self.rejectedReasons(harness)
        #expect(reasons.count == 1 && reasons[0].hasPrefix("notification_not_verifiable: ") && reasons[0].contains("missing-root.der"), "\(reasons)")
        #expect(try harness.store().order(id: "A1")?.reason == "refunded")
    }

    /// The reasons written beside the files in `rejected/`, as `code: detail`.
    static func rejectedReasons(_ harness: Harness) -> [String] {
        harness.directory.list("spool/rejected").filter { $0.hasSuffix(".reason") }.compactMap { name in
            guard let text = harness.directory.read("spool/rejected/\(name)") else { return nil }
            let lines = text.split(separator: "\n")
            let code = lines.first { $0.hasPrefix("reason: ") }?.dropFirst("reason: ".count) ?? ""
            let detail = lines.first { $0.hasPrefix("detail: ") }?.dropFirst("detail: ".count) ?? ""
            return "\(code): \(detail)"
        }
    }

    /// The payload with one character changed after it was signed.
    static func tamper(_ file: String) -> String {
        let parts = file.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        var payload = Array(parts[1])
        let index = payload.count / 2
        payload[index] = payload[index] == "A" ? "B" : "A"
        return ([parts[0], String(payload)] + parts[2...]).joined(separator: ".")
    }
}
