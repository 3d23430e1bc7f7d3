import Foundation
import Glibc
import ReconcileCore
import ReconcileFoundation
import ReconcileMock
import Testing
import TestSupport
@testable import ReconcileStore

/// Google Play refunds (issue 17, DESIGN §5a) against the mock's Play API: voided purchases read
/// with `voidedpurchases.list`, because a Pub/Sub push asked for it or because `Poll=` came round.
@Suite("End to end: Google Play voided purchases", .serialized)
struct PlayVoidedEndToEndTests {
    /// A Pub/Sub push of a voided purchase notification, as a web handler drops it.
    static func push(messageID: String, token: String, orderID: String, package: String = Harness.playPackage) -> String {
        let notification = #"{"version":"1.0","packageName":"\#(package)","eventTimeMillis":"\#(Int64(Date().timeIntervalSince1970 * 1000))","voidedPurchaseNotification":{"purchaseToken":"\#(token)","orderId":"\#(orderID)","productType":2,"refundType":1}}"#
        let data = Data(notification.utf8).base64EncodedString()
        return #"{"message":{"attributes":{},"data":"\#(data)","messageId":"\#(messageID)"},"subscription":"projects/p/subscriptions/play"}"#
    }

    /// `"voided": {…}` for a purchase registered again with the mock: Google voided it now.
    static func voided(source: Int, reason: Int) -> String {
        #""voided":{"voidedTimeMillis":"\#(Int64(Date().timeIntervalSince1970 * 1000))","voidedSource":"\#(source)","voidedReason":"\#(reason)"}"#
    }

    func state(_ harness: Harness, _ orderID: String) -> OrderState? {
        try? harness.store().order(id: orderID)?.state
    }

    @Test("a push of a voided purchase is confirmed with voidedpurchases.list and revokes the order (Poll=off), the merchant told once as google_play; a forged push and a redelivered one change nothing; polling finds a chargeback nobody pushed; the token is never logged")
    func voidedPurchases() async throws {
        let harness = Harness("play-voided")
        _ = try await harness.startPlayMock()
        let tokens = (1...4).map { playToken("V\($0)") }
        let purchases = [
            (tokens[0], "gems", #""orderId":"GPA.1001""#), (tokens[1], "gems", #""orderId":"GPA.1002""#),
            (tokens[2], "gems", #""orderId":"GPA.1003""#), (tokens[3], "gems", #""states":[2],"orderId":"GPA.1004""#),
        ]
        try await harness.registerPurchases(purchases)
        func configure(poll: String) {
            harness.configure("""
                \(harness.playSection())
                [Notifications]
                Poll=\(poll)
                [Revocation]
                URL=\(harness.base)/revocation
                \(VerificationEndToEndTests.quickRetry)
                MaxAttempts=1000
                """)
        }
        configure(poll: "off")
        for (index, orderID) in ["V1", "V2", "V3", "V4"].enumerated() { harness.dropPlayOrder(orderID, token: tokens[index]) }
        var daemon = try await harness.startDaemonAndWait()
        #expect(await harness.waitFor(.finished, count: 3), "\(harness.counts())")
        // Its payment is pending at Google: pending, or in a retry's attempt at this moment.
        #expect([.pending, .verifying].contains(state(harness, "V4")), "\(String(describing: state(harness, "V4")))")
        let listedBefore = try await harness.playStats().voidedListRequests
        #expect(listedBefore == 0, "Poll=off: nothing read without a push")

        // 1. Google refunds V1 and pushes; the web handler drops the push twice (Pub/Sub redelivers).
        try await harness.registerPurchases([(tokens[0], "gems", #""orderId":"GPA.1001","# + Self.voided(source: 0, reason: 1))])
        harness.drop("push-1.json", Self.push(messageID: "9001", token: tokens[0], orderID: "GPA.1001"))
        #expect(await eventually(timeout: .seconds(20)) { state(harness, "V1") == .revoked }, "\(harness.counts())")
        #expect(try harness.store().order(id: "V1")?.reason == "refunded")
        harness.drop("push-1-again.json", Self.push(messageID: "9001", token: tokens[0], orderID: "GPA.1001"))
        // 2. A forged push for V2, which Google never voided; and a refund of V4 before it was ever paid.
        harness.drop("push-forged.json", Self.push(messageID: "9002", token: tokens[1], orderID: "GPA.1002"))
        try await harness.registerPurchases([(tokens[3], "gems", #""states":[2],"orderId":"GPA.1004","# + Self.voided(source: 0, reason: 2))])
        harness.drop("push-4.json", Self.push(messageID: "9004", token: tokens[3], orderID: "GPA.1004"))
        #expect(await eventually(timeout: .seconds(30)) { state(harness, "V4") == .rejected }, "\(harness.counts())")
        #expect(try harness.store().order(id: "V4")?.reason == "refunded")
        #expect(await eventually(timeout: .seconds(20)) { ((try? await harness.mockStats())?.revocationsSucceeded.filter { $0.key.hasPrefix("V1:revoked:voided:") }.values.reduce(0, +) ?? 0) == 1 })
        #expect(await eventually(timeout: .seconds(20)) { (try? harness.store().notifications(unmatchedOnly: false, limit: 50).count) == 5 })
        #expect(state(harness, "V2") == .finished, "a push nobody confirmed revoked an order")
        #expect(harness.directory.list("spool/incoming").isEmpty && harness.directory.list("spool/rejected").isEmpty)
        let stats = try await harness.mockStats()
        // Keyed by the voided purchase itself (`voided:<token digest>:<voided time>`).
        let v1Keys = stats.revocationKeys["V1"] ?? []
        #expect(v1Keys.count == 1 && v1Keys.allSatisfy { $0.hasPrefix("V1:revoked:voided:") }, "\(stats.revocationKeys)")
        let v1Key = v1Keys.first ?? ""
        #expect(stats.revocationBodies[v1Key]?["store"]?.stringValue == "google_play")
        #expect(stats.revocationBodies[v1Key]?["reason"]?.stringValue == "refunded")
        #expect(stats.revocationKeys["V2"] == nil && stats.revocationKeys["V4"] == nil, "\(stats.revocationKeys)")
        let listed = try await harness.ctl(["notifications", "--json"])
        let shown = try await harness.ctl(["show", "V1"])
        daemon.send(SIGTERM)
        #expect(await daemon.wait() == 0)
        #expect(listed.output.contains("pubsub:9001") && listed.output.contains("VOIDED_PURCHASE"), "\(listed.output)")
        #expect(shown.output.contains("VOIDED_PURCHASE") && shown.output.contains("revoked"), "\(shown.output)")

        // 3. Polling: Google charges V3 back and nobody pushes; the next poll finds it.
        try await harness.registerPurchases([(tokens[2], "gems", #""orderId":"GPA.1003","# + Self.voided(source: 2, reason: 7))])
        configure(poll: "2s")
        daemon = try await harness.startDaemonAndWait()
        #expect(await eventually(timeout: .seconds(30)) { state(harness, "V3") == .revoked }, "\(harness.counts())")
        #expect(try harness.store().order(id: "V3")?.reason == "chargeback")
        #expect(await eventually(timeout: .seconds(20)) { ((try? await harness.mockStats())?.revocationsSucceeded.filter { $0.key.hasPrefix("V3:revoked:voided:") }.values.reduce(0, +) ?? 0) == 1 })
        // The polls list V1 again: taken in once, told once.
        let listedAgainFrom = try await harness.playStats().voidedListRequests
        #expect(await eventually(timeout: .seconds(30)) { ((try? await harness.playStats().voidedListRequests) ?? 0) >= listedAgainFrom + 2 })
        daemon.send(SIGTERM)
        #expect(await daemon.wait() == 0)
        let after = try await harness.mockStats()
        #expect(after.revocationKeys["V1"] == [v1Key] && after.revocationKeys["V3"]?.count == 1, "\(after.revocationKeys)")
        #expect(try await harness.playStats().voidedListRequests >= 2)
        #expect(try harness.store().checkpoint("googleplay.\(Harness.playPackage)") != nil)
        for token in tokens {
            #expect(!daemon.standardError.contains(token), "a purchase token in the log")
            #expect(!listed.output.contains(token) && !shown.output.contains(token), "a purchase token in reconcilectl's output")
        }
    }

    @Test("without [GooglePlay] a push is set aside: nothing could confirm it")
    func pushWithoutPlay() async throws {
        let harness = Harness("play-push-refused")
        try await harness.startMock()
        harness.configure("""
            [Verifier]
            Kind=http
            URL=\(harness.base)/merchant/verify
            """)
        harness.drop("push.json", Self.push(messageID: "1", token: playToken("X"), orderID: "GPA.1"))
        let daemon = try await harness.startDaemonAndWait()
        #expect(await eventually(timeout: .seconds(20)) { NotificationEndToEndTests.rejectedReasons(harness).count == 1 })
        daemon.send(SIGTERM)
        #expect(await daemon.wait() == 0)
        let reasons = NotificationEndToEndTests.rejectedReasons(harness)
        #expect(reasons.first?.hasPrefix("notification_not_verifiable: ") == true && reasons.first?.contains("[GooglePlay]") == true, "\(reasons)")
    }
}
