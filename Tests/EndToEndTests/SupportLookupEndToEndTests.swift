import Foundation
import Glibc
import ReconcileCore
import ReconcileFoundation
import ReconcileMock
import Testing
import TestSupport
@testable import ReconcileStore

/// Support's look-ups by the customer's store order id (DESIGN §5b) against the built daemon,
/// `reconcilectl` and the mock: `lookup` shows which stored order holds each purchase of an App
/// Store or Play order; `recover` makes one order for each purchase nobody holds — delivered
/// once, with `origin: operator` — and nothing on a second run; refunded purchases and ones
/// without an account are left with the reason; every refusal names what to do.
@Suite("End to end: support look-ups and recover", .serialized)
struct SupportLookupEndToEndTests {
    static let account = "0c6b2a5e-3d4f-4a1b-8e7c-9f2d1b3a4c5e"

    /// Registers the App Store customer order `orderID` of `transactions` with the mock.
    static func registerOrder(_ harness: Harness, _ orderID: String, _ transactions: [String], extra: String = "") async throws {
        let list = transactions.map { "\"\($0)\"" }.joined(separator: ",")
        try await harness.postMock("/_mock/appstore/orders", #"{"orders":[{"orderId":"\#(orderID)","transactionIds":[\#(list)]\#(extra)}]}"#)
    }

    /// `lookup`/`recover --json`'s purchases, by transaction.
    static func purchases(_ output: String) throws -> [String: JSONObject] {
        let object = try #require(try JSONParser().parse(Array(output.utf8)).objectValue)
        let list = try #require(object["purchases"]?.arrayValue)
        return Dictionary(uniqueKeysWithValues: list.compactMap(\.objectValue).map { ($0["transaction"]?.stringValue ?? "?", $0) })
    }

    @Test("App Store: lookup names the order holding each purchase; recover makes one order (origin operator, delivered once), leaves the refunded and the account-less, and a second run makes nothing new")
    func appStoreLookupAndRecover() async throws {
        let harness = Harness("support-apple")
        _ = try await AppStoreEndToEndTests.setUp(harness)
        let revoked = Int64(Date().timeIntervalSince1970 * 1000) - 10_000
        try await AppStoreEndToEndTests.register(harness, environment: "Production", [
            ("8001", "gems", ",\"appAccountToken\":\"\(Self.account)\""), ("8002", "gems", ""),
            ("8003", "gems", ",\"appAccountToken\":\"\(Self.account)\",\"revocationDate\":\(revoked),\"revocationReason\":0"),
            ("8004", "coins", ",\"appAccountToken\":\"\(Self.account)\""),
        ])
        try await Self.registerOrder(harness, "MK5TTV4XYZ", ["8001", "8002", "8003", "8004"])
        harness.configure(DiscoveryEndToEndTests.configuration(harness, mode: "record"))
        let daemon = try harness.startDaemon()
        // The phone's own order holds 8004.
        harness.drop("m1.json", OrderFixtures.orderJSON(
            "M-8004", product: "coins", receipt: nil, transactionID: "8004", extra: "\"application_username\":\"\(Self.account)\""))
        #expect(await eventually(timeout: .seconds(30)) { (try? harness.store().order(id: "M-8004")?.state) == .finished },
                "\(daemon.standardError.suffix(3000))")

        let lookup = try await harness.ctl(["lookup", "mk5ttv4xyz", "--json"])
        #expect(lookup.status == 0, "\(lookup.error)")
        var found = try Self.purchases(lookup.output)
        #expect(found["8004"]?["held_by"]?.stringValue == "M-8004")
        #expect(found["8001"]?["held_by"] == .null && found["8001"]?["state"]?.stringValue == "purchased")
        #expect(found["8003"]?["state"]?.stringValue == "refunded" && found["8003"]?["refunded_at"]?.stringValue != nil)
        #expect(found["8002"]?["account"] == .null && found["8001"]?["account"]?.stringValue == Self.account)
        #expect(!lookup.output.contains("eyJ"), "a signed transaction was printed")
        let table = try await harness.ctl(["lookup", "MK5TTV4XYZ"])
        #expect(table.status == 0 && table.output.hasPrefix("App Store order MK5TTV4XYZ: 4 purchases\n"), "\(table.output)")
        #expect(table.output.contains("M-8004") && table.output.contains("refunded"), "\(table.output)")

        // First run: 8001 made; 8002 no account; 8003 refunded; 8004 held. Not all done: exit 1.
        let first = try await harness.ctl(["recover", "MK5TTV4XYZ", "--note", "ticket 4411", "--json"])
        #expect(first.status == 1, "\(first.error)")
        found = try Self.purchases(first.output)
        #expect(found["8001"]?["made"]?.stringValue == "apple:8001")
        #expect(found["8002"]?["left"]?.stringValue == "no_account" && found["8003"]?["left"]?.stringValue == "refunded")
        #expect(found["8004"]?["left"]?.stringValue == "held" && found["8004"]?["why"]?.stringValue == "order M-8004 holds it already")
        #expect(await eventually(timeout: .seconds(30)) { (try? harness.store().order(id: "apple:8001")?.state) == .finished },
                "\(daemon.standardError.suffix(3000))")
        // With --user: 8002 too, granted to that user. The plain output says what was made and left.
        let second = try await harness.ctl(["recover", "MK5TTV4XYZ", "--user", "user-8002"])
        #expect(second.status == 1 && second.output.contains("made order apple:8002 for 8002\n"), "\(second.output)\(second.error)")
        #expect(second.output.contains("left 8001: order apple:8001 holds it already\n"), "\(second.output)")
        #expect(await eventually(timeout: .seconds(30)) { (try? harness.store().order(id: "apple:8002")?.state) == .finished })
        // A third run makes nothing new.
        let third = try await harness.ctl(["recover", "MK5TTV4XYZ", "--user", "user-8002", "--json"])
        found = try Self.purchases(third.output)
        #expect(found.values.allSatisfy { $0["made"] == .null }, "\(third.output)")

        let store = try harness.store()
        let made = try #require(try store.order(id: "apple:8001"))
        #expect(made.origin == .operator && made.applicationUsername == Self.account && made.finishedBy == .delivery)
        #expect(try store.order(id: "apple:8002")?.applicationUsername == "user-8002")
        #expect(try store.order(id: "apple:8003") == nil && store.order(id: "apple:8004") == nil)
        let stats = try await harness.mockStats()
        #expect(stats.deliveries["apple:8001"] == 1 && stats.deliveries["apple:8002"] == 1 && stats.deliveries["M-8004"] == 1, "\(stats.deliveries)")
        #expect(stats.deliveredOrigins["apple:8001"] == "operator")
        #expect(Set(try store.discoveredPurchases(limit: 10).map(\.status)) == [.becameOrder(orderID: "apple:8001"), .becameOrder(orderID: "apple:8002")])
        daemon.send(SIGTERM)
        #expect(await daemon.wait() == 0)
        let log = daemon.standardError
        #expect(log.contains("operator:root recovered App Store purchase 8001 of gems of App Store order MK5TTV4XYZ as order apple:8001: ticket 4411"), "\(log.suffix(4000))")
        #expect(log.contains("operator:root looked up App Store order MK5TTV4XYZ: 4 purchases, 1 held by stored orders"), "\(log.suffix(4000))")
        #expect(!log.contains("eyJ"), "a JWS was written out")
    }

    @Test("a purchase discovered with no account is escalated no_account; recover --user makes it an order, delivered once, and discovered says so")
    func noAccountRecoveredWithUser() async throws {
        let harness = Harness("support-no-account")
        let setup = try await AppStoreEndToEndTests.setUp(harness)
        try await AppStoreEndToEndTests.register(harness, environment: "Production", [("8101", "gems", "")])
        try await Self.registerOrder(harness, "MNOACCT01", ["8101"])
        harness.configure(DiscoveryEndToEndTests.configuration(harness, grace: "1s") + "\n[Daemon]\nMetricsFile=reconciled.prom\n")
        let daemon = try harness.startDaemon()
        harness.drop("n1.json", try DiscoveryEndToEndTests.oneTimeChargeFile(setup.signer, id: "otc-s1", transactionID: "8101", account: nil))
        #expect(await eventually(timeout: .seconds(30)) { (try? harness.store().discoveredPurchases(limit: 5).first?.status) == .noAccount },
                "\(daemon.standardError.suffix(3000))")
        let refused = try await harness.ctl(["recover", "MNOACCT01"])
        #expect(refused.status == 1 && refused.output.contains("run recover again with --user ID"), "\(refused.output)")
        let recovered = try await harness.ctl(["recover", "MNOACCT01", "--user", "user-81"])
        #expect(recovered.status == 0 && recovered.output.contains("made order apple:8101"), "\(recovered.output)\(recovered.error)")
        #expect(await eventually(timeout: .seconds(30)) { (try? harness.store().order(id: "apple:8101")?.state) == .finished },
                "\(daemon.standardError.suffix(3000))")
        #expect(try harness.store().discoveredPurchases(limit: 5).first?.status == .becameOrder(orderID: "apple:8101"))
        let listed = try await harness.ctl(["discovered"])
        #expect(listed.output.contains("became_order") && listed.output.contains("apple:8101"), "\(listed.output)")
        let stats = try await harness.mockStats()
        #expect(stats.deliveries == ["apple:8101": 1] && stats.deliveredOrigins["apple:8101"] == "operator", "\(stats.deliveries)")
        daemon.send(SIGTERM)
        #expect(await daemon.wait() == 0)
        // The final metrics count each step: the file's report, its grace ending, both recovers.
        let metrics = try PrometheusText(parsing: try String(contentsOfFile: harness.directory.file("reconciled.prom"), encoding: .utf8))
        for (source, outcome) in [("file", "waiting"), ("file", "no_account"), ("recover", "left_no_account"), ("recover", "became_order")] {
            #expect(metrics.value("reconciled_discovered_purchases_total", ["source": source, "outcome": outcome]) == 1, "\(source) \(outcome)")
        }
    }

    @Test("errors a person can act on: an unknown order id, the store's 429 with its wait, no daemon, a Play id without [GooglePlay], a sandbox-only setup")
    func errors() async throws {
        let harness = Harness("support-errors")
        _ = try await AppStoreEndToEndTests.setUp(harness)
        try await Self.registerOrder(harness, "MBUSY0001", [], extra: #","status":429,"retryAfter":7"#)
        harness.configure(DiscoveryEndToEndTests.configuration(harness, mode: "record"))
        let stopped = try await harness.ctl(["lookup", "MK5TTV4XYZ"])
        #expect(stopped.status == 1 && stopped.error.contains("reconciled is not running") && stopped.error.contains("holds the credentials"), "\(stopped.error)")
        let usage = try await harness.ctl(["lookup", "12/34"])
        #expect(usage.status == 64 && usage.error.contains("is not a store order id"), "\(usage.error)")
        var daemon = try harness.startDaemon()
        #expect(await eventually(timeout: .seconds(20)) { (try? await harness.ctl(["status"]).status) == 0 })
        let unknown = try await harness.ctl(["lookup", "MNOSUCH01"])
        #expect(unknown.status == 1 && unknown.error.contains("Apple knows no order MNOSUCH01"), "\(unknown.error)")
        let busy = try await harness.ctl(["recover", "MBUSY0001"])
        #expect(busy.status == 1 && busy.error.contains("try again in"), "\(busy.error)")
        let play = try await harness.ctl(["lookup", "GPA.1234-5678-9012-34567"])
        #expect(play.status == 1 && play.error.contains("[GooglePlay]"), "\(play.error)")
        daemon.send(SIGTERM)
        #expect(await daemon.wait() == 0)
        // Apple serves Look Up Order ID in production only: a daemon pointed at the sandbox says so
        // (and sends nothing: it has no orders).
        harness.configure(DiscoveryEndToEndTests.configuration(harness, mode: "record").replacingOccurrences(
            of: "URL=\(harness.base)/appstore/production", with: "URL=https://api.storekit-sandbox.apple.com"))
        daemon = try harness.startDaemon()
        #expect(await eventually(timeout: .seconds(20)) { (try? await harness.ctl(["status"]).status) == 0 }, "\(daemon.standardError.suffix(2000))")
        let sandbox = try await harness.ctl(["lookup", "MK5TTV4XYZ"])
        #expect(sandbox.status == 1 && sandbox.error.contains("production only"), "\(sandbox.error)")
        daemon.send(SIGTERM)
        #expect(await daemon.wait() == 0)
    }

    @Test("Google Play: lookup names the holding order; recover makes google:<orderId>, delivered once and acknowledged; a refunded order is left")
    func playLookupAndRecover() async throws {
        let harness = Harness("support-play")
        _ = try await harness.startPlayMock()
        let lost = playToken("S1")
        let held = playToken("S2")
        let refunded = playToken("S3")
        try await harness.registerPurchases([
            (lost, "gems", #""orderId":"GPA.3312-0001-0001-00001","obfuscatedExternalAccountId":"acct-s1""#),
            (held, "gems", #""orderId":"GPA.3312-0002-0002-00002","obfuscatedExternalAccountId":"acct-s2""#),
            (refunded, "gems", #""orderId":"GPA.3312-0003-0003-00003","obfuscatedExternalAccountId":"acct-s3","voided":{"voidedTimeMillis":"1700000000000"}"#),
        ])
        harness.configure("""
            \(harness.playSection())
            [Delivery]
            URL=\(harness.base)/deliver
            \(VerificationEndToEndTests.quickRetry)
            """)
        let daemon = try harness.startDaemon()
        harness.dropPlayOrder("M-S2", token: held, extra: "\"application_username\":\"acct-s2\"")
        #expect(await eventually(timeout: .seconds(30)) { (try? harness.store().order(id: "M-S2")?.state) == .finished },
                "\(daemon.standardError.suffix(3000))")
        let heldLookup = try await harness.ctl(["lookup", "GPA.3312-0002-0002-00002", "--json"])
        #expect(heldLookup.status == 0, "\(heldLookup.error)")
        #expect(try Self.purchases(heldLookup.output)["google:GPA.3312-0002-0002-00002"]?["held_by"]?.stringValue == "M-S2", "\(heldLookup.output)")
        let lostLookup = try await harness.ctl(["lookup", "GPA.3312-0001-0001-00001", "--package", Harness.playPackage, "--json"])
        #expect(try Self.purchases(lostLookup.output)["google:GPA.3312-0001-0001-00001"]?["held_by"] == .null, "\(lostLookup.output)")
        #expect(!lostLookup.output.contains(lost) && !heldLookup.output.contains(held), "a purchase token was printed")

        let recovered = try await harness.ctl(["recover", "GPA.3312-0001-0001-00001"])
        #expect(recovered.status == 0 && recovered.output.contains("made order google:GPA.3312-0001-0001-00001"), "\(recovered.output)\(recovered.error)")
        #expect(await eventually(timeout: .seconds(30)) { (try? harness.store().order(id: "google:GPA.3312-0001-0001-00001")?.state) == .finished },
                "\(daemon.standardError.suffix(3000))")
        #expect(await eventually(timeout: .seconds(20)) { (try? harness.actionStates("google:GPA.3312-0001-0001-00001")) == ["play_acknowledge done"] })
        let again = try await harness.ctl(["recover", "GPA.3312-0001-0001-00001"])
        #expect(again.status == 0 && again.output.contains("holds it already"), "\(again.output)")
        let refusal = try await harness.ctl(["recover", "GPA.3312-0003-0003-00003", "--json"])
        #expect(refusal.status == 1)
        #expect(try Self.purchases(refusal.output)["google:GPA.3312-0003-0003-00003"]?["left"]?.stringValue == "refunded", "\(refusal.output)")
        let unknown = try await harness.ctl(["lookup", "GPA.9999-9999-9999-99999"])
        #expect(unknown.status == 1 && unknown.error.contains("Google knows no order"), "\(unknown.error)")
        let stats = try await harness.mockStats()
        #expect(stats.deliveries["google:GPA.3312-0001-0001-00001"] == 1 && stats.deliveredOrigins["google:GPA.3312-0001-0001-00001"] == "operator")
        #expect(try harness.store().order(id: "google:GPA.3312-0003-0003-00003") == nil)
        daemon.send(SIGTERM)
        #expect(await daemon.wait() == 0)
        #expect(!daemon.standardError.contains(lost), "a purchase token was written out")
    }
}
