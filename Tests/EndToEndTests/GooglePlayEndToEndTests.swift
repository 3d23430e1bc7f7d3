import Foundation
import Glibc
import ReconcileCore
import ReconcileFoundation
import ReconcileMock
import Testing
import TestSupport
@testable import ReconcileStore
@testable import ReconcileSQLite

/// Google Play against the mock (issue 16): the mock checks the daemon's JWT bearer grants with a
/// test service account key made by `openssl`, and plays `purchases.products.get`,
/// `:acknowledge` and `:consume` for purchases each test scripts.
@Suite("End to end: Google Play", .serialized)
struct GooglePlayEndToEndTests {
    @Test("purchased → finished, delivered as google_play with Google's orderId, acknowledged once; 410 rejected; a pending payment finished when it completes; account mismatch and a replayed token escalated; a test purchase refused; one acknowledged already is not acknowledged again")
    func verification() async throws {
        let harness = Harness("play")
        _ = try await harness.startPlayMock()
        let tokens = (1...7).map { playToken("T\($0)") }
        try await harness.registerPurchases([
            (tokens[0], "gems", "\"orderId\":\"GPA.1111-2222-3333-44444\",\"obfuscatedExternalAccountId\":\"user-7\""),
            (tokens[1], "gems", "\"status\":410"),
            (tokens[2], "gems", "\"states\":[2,2,0],\"orderId\":\"GPA.3333\""),
            (tokens[3], "gems", "\"orderId\":\"GPA.4444\",\"obfuscatedExternalAccountId\":\"someone-else\""),
            (tokens[4], "gems", "\"orderId\":\"GPA.5555\",\"purchaseType\":0"),
            (tokens[5], "gems", "\"orderId\":\"GPA.6666\",\"acknowledgementState\":1"),
        ])
        harness.configure("""
            \(harness.playSection())
            [Delivery]
            URL=\(harness.base)/deliver
            \(VerificationEndToEndTests.quickRetry)
            """)
        harness.dropPlayOrder("P1", token: tokens[0], extra: "\"user_id\":\"user-7\"")
        harness.dropPlayOrder("P2", token: tokens[1])
        harness.dropPlayOrder("P3", token: tokens[2])
        harness.dropPlayOrder("P4", token: tokens[3], extra: "\"application_username\":\"user-7\"")
        harness.dropPlayOrder("P6", token: tokens[4])
        harness.dropPlayOrder("P7", token: tokens[5])
        let daemon = try harness.startDaemon()
        #expect(await harness.waitFor(.finished, count: 3), "\(harness.counts())")
        // The same token on a second order, once the first has claimed its purchase.
        harness.dropPlayOrder("P5", token: tokens[0])
        #expect(await harness.waitFor(.escalated, count: 2), "\(harness.counts())")
        #expect(await harness.waitFor(.rejected, count: 2), "\(harness.counts())")
        #expect(await eventually(timeout: .seconds(20)) {
            (try? harness.store().outboxSummary().pending) == 0
        }, "acknowledgements still pending")
        let shown = try await harness.ctl(["show", "P1"])
        let shownJSON = try await harness.ctl(["show", "P1", "--json"])
        daemon.send(SIGTERM)
        #expect(await daemon.wait() == 0)

        let store = try harness.store()
        func order(_ id: String) throws -> StoredOrder { try #require(try store.order(id: id)) }
        #expect(try order("P1").state == .finished && order("P1").verifiedTransactionID == "GPA.1111-2222-3333-44444")
        #expect(try order("P1").finishedBy == .delivery)
        #expect(try order("P2").state == .rejected && order("P2").reason == "token_expired")
        #expect(try order("P3").state == .finished && order("P3").attempts == 3, "the pending payment took three reads")
        #expect(try order("P4").state == .escalated && order("P4").reason == "account_mismatch")
        #expect(try order("P5").state == .escalated && order("P5").reason == "duplicate_transaction")
        #expect(try order("P6").state == .rejected && order("P6").reason == "sandbox_not_allowed")
        #expect(try order("P7").state == .finished)
        #expect(try harness.scalar("SELECT count(*) FROM claims WHERE transaction_id = 'google:GPA.1111-2222-3333-44444'") == 1)

        let stats = try await harness.mockStats()
        #expect(stats.deliveredStores["P1"] == "google_play")
        #expect(stats.deliveredTransactions["P1"] == "GPA.1111-2222-3333-44444")
        #expect(stats.deliveries["P5"] == nil && stats.deliveries["P4"] == nil)
        let play = try await harness.playStats()
        for (index, expected) in [(0, 1), (2, 1)] {
            let key = MockStats.fingerprint(tokens[index])
            #expect(play.acknowledged[key] == expected, "T\(index + 1) acknowledged \(play.acknowledged[key] ?? 0) times")
            #expect(play.acknowledgeRequests[key] == 1)
        }
        #expect(play.acknowledgeRequests[MockStats.fingerprint(tokens[5])] == nil, "P7 was acknowledged by Google already")
        #expect(try harness.actionStates("P1") == ["play_acknowledge done"])
        #expect(try harness.actionStates("P7").isEmpty)
        #expect(try harness.actionStates("P2").isEmpty && harness.actionStates("P4").isEmpty)
        #expect(play.tokensIssued == 1, "one access token for every request: \(play.tokensIssued)")
        // The history shows Google's answer, never the token.
        #expect(shown.output.contains("purchaseState 0 (purchased)") && shown.output.contains("orderId GPA.1111-2222-3333-44444"), "\(shown.output)")
        #expect(shown.output.contains("play_acknowledge") && shown.output.contains("done"))
        #expect(shownJSON.output.contains("\"store\":\"google_play\""))
        for text in [shown.output, shownJSON.output, daemon.standardError] {
            for token in tokens { #expect(!text.contains(token.suffix(32)), "a purchase token was shown") }
        }
    }

    @Test("only PackageName='s packages (two, space-separated) are granted: a token bought in another app is quarantined foreign_package at ingest, one such order stored by an older version is escalated without asking Google; deliveries name the package; the voided purchases of exactly the configured packages are read (issue 23 items 2, 3)")
    func packages() async throws {
        let harness = Harness("play-packages")
        _ = try await harness.startPlayMock()
        let (game, lite, cheap, stored) = (playToken("G1"), playToken("L1"), playToken("C1"), playToken("S1"))
        try await harness.registerPurchases([(game, "gems", #""orderId":"GPA.1001""#)])
        try await harness.registerPurchases([(lite, "gems", #""orderId":"GPA.2001""#)], package: "com.example.lite")
        // The service account can read the cheap app too: the mock answers for it.
        try await harness.registerPurchases(
            [(cheap, "gems", #""orderId":"GPA.3001""#), (stored, "gems", #""orderId":"GPA.3002""#)], package: "com.example.cheap")
        // An order an older version took in, naming the cheap app (no package check then).
        try FileManager.default.createDirectory(atPath: harness.directory.file("state"), withIntermediateDirectories: true)
        do {
            let store = try SQLiteOrderStore(path: harness.directory.file("state/orders.db"), mode: .owner)
            defer { store.close() }
            let text = OrderFixtures.orderJSON("S1", product: "gems", receipt: nil, extra: "\"purchase_token\":\"\(stored)\",\"package_name\":\"com.example.cheap\"")
            let outcome = try store.ingest(
                [IngestCandidate(submission: try OrderFileParser().parse(Array(text.utf8)), raw: Array(text.utf8), contentHash: "S1", fileName: "S1.json")],
                verifiers: ConfiguredVerifiers(kind: nil, googlePlay: true), now: Date())
            #expect(outcome == [.accepted(.pending)])
        }
        harness.configure("""
            \(harness.playSection("PackageName=\(Harness.playPackage) com.example.lite"))
            [Notifications]
            Poll=1s
            [Delivery]
            URL=\(harness.base)/deliver
            \(VerificationEndToEndTests.quickRetry)
            """)
        harness.dropPlayOrder("G1", token: game)
        harness.dropPlayOrder("L1", token: lite, extra: "\"package_name\":\"com.example.lite\"")
        harness.dropPlayOrder("C1", token: cheap, extra: "\"package_name\":\"com.example.cheap\"")
        let daemon = try harness.startDaemon()
        #expect(await harness.waitFor(.finished, count: 2), "\(harness.counts())")
        #expect(await harness.waitFor(.escalated, count: 1), "\(harness.counts())")
        // Both configured packages' voided purchases are read.
        #expect(await eventually(timeout: .seconds(20)) { ((try? await harness.playStats().voidedListRequests) ?? 0) >= 4 })
        // Google voids the lite purchase: the next poll of com.example.lite revokes L1.
        try await harness.registerPurchases([(lite, "gems", #""orderId":"GPA.2001","# + PlayVoidedEndToEndTests.voided(source: 0, reason: 1))], package: "com.example.lite")
        #expect(await eventually(timeout: .seconds(20)) { (try? harness.store().order(id: "L1")?.state) == .revoked }, "\(daemon.standardError.suffix(2000))")
        daemon.send(SIGTERM)
        #expect(await daemon.wait() == 0)

        let store = try harness.store()
        #expect(try store.order(id: "G1")?.state == .finished && store.order(id: "G1")?.proof.packageName == Harness.playPackage)
        #expect(try store.order(id: "C1") == nil, "another app's order was stored")
        #expect(try store.order(id: "S1")?.state == .escalated && store.order(id: "S1")?.reason == "foreign_package")
        let rejected = harness.directory.list("spool/rejected").filter { !$0.hasSuffix(".reason") }
        #expect(rejected.count == 1, "\(rejected)")
        let reason = rejected.first.flatMap { harness.directory.read("spool/rejected/\($0).reason") } ?? ""
        #expect(reason.contains("foreign_package") && reason.contains("\"com.example.cheap\"") && reason.contains("com.example.game com.example.lite"), "\(reason)")
        let stats = try await harness.mockStats()
        #expect(stats.deliveredPackages["G1"] == Harness.playPackage && stats.deliveredPackages["L1"] == "com.example.lite", "\(stats.deliveredPackages)")
        #expect(stats.deliveries["C1"] == nil && stats.deliveries["S1"] == nil)
        let play = try await harness.playStats()
        #expect(play.reads[MockStats.fingerprint(cheap)] == nil && play.reads[MockStats.fingerprint(stored)] == nil, "Google was asked about the cheap app's purchases")
        for token in [game, lite, cheap, stored] { #expect(!daemon.standardError.contains(token.suffix(32)), "a purchase token was logged") }
    }

    @Test("Consume=yes consumes (once, no acknowledgement); a test purchase is refused, then accepted after a reload allows them and a retry")
    func consumeAndTestPurchases() async throws {
        let harness = Harness("play-consume")
        _ = try await harness.startPlayMock()
        let (consumable, test) = (playToken("C1"), playToken("T1"))
        try await harness.registerPurchases([
            (consumable, "coins_100", "\"orderId\":\"GPA.7777\",\"quantity\":2"), (test, "coins_100", "\"orderId\":\"GPA.8888\",\"purchaseType\":0"),
        ])
        harness.configure("\(harness.playSection("Consume=yes"))\n\(VerificationEndToEndTests.quickRetry)")
        harness.dropPlayOrder("C1", token: consumable, product: "coins_100")
        harness.dropPlayOrder("T1", token: test, product: "coins_100")
        let daemon = try await harness.startDaemonAndWait()
        #expect(await harness.waitFor(.finished, count: 1), "\(harness.counts())")
        #expect(await harness.waitFor(.rejected, count: 1), "\(harness.counts())")
        #expect(try harness.store().order(id: "T1")?.reason == "sandbox_not_allowed")
        harness.configure("\(harness.playSection("Consume=yes\nAllowTestPurchases=yes"))\n\(VerificationEndToEndTests.quickRetry)")
        #expect(try await harness.ctl(["reload", "--wait"]).status == 0)
        #expect(try await harness.ctl(["retry", "T1"]).status == 0)
        #expect(await harness.waitFor(.finished, count: 2), "\(harness.counts())")
        #expect(await eventually(timeout: .seconds(20)) { (try? harness.store().outboxSummary().pending) == 0 })
        daemon.send(SIGTERM)
        #expect(await daemon.wait() == 0)
        let play = try await harness.playStats()
        #expect(play.consumed[MockStats.fingerprint(consumable)] == 1)
        #expect(play.consumeRequests[MockStats.fingerprint(consumable)] == 1)
        #expect(play.acknowledgeRequests.isEmpty, "consuming acknowledges: nothing else is sent")
        #expect(try harness.actionStates("C1") == ["play_consume done"])
        #expect(try harness.store().order(id: "T1")?.environment == "Test")
    }

    @Test("routing: without [GooglePlay] a Play order waits naming the section, until a reload adds it; App Store and Play orders in one spool both finish; Kind=http without [GooglePlay] sends the token to the merchant")
    func routing() async throws {
        let harness = Harness("play-routing")
        _ = try await harness.startPlayMock(arguments: ["--shared-secret", "s3cret"])
        let token = playToken("R1")
        try await harness.registerPurchases([(token, "gems", "\"orderId\":\"GPA.9999\"")])
        let apple = VerificationEndToEndTests().appleConfiguration(harness, allowSandbox: false, delivery: true)
        harness.configure(apple)
        harness.dropOrder("A1", receipt: appleReceipt("6100001"))
        harness.dropPlayOrder("G1", token: token)
        let daemon = try await harness.startDaemonAndWait()
        #expect(await harness.waitFor(.finished, count: 1), "\(harness.counts())")
        #expect(await harness.waitFor(.waiting, count: 1), "\(harness.counts())")
        #expect(try harness.store().order(id: "G1")?.reason == "no_google_play_section")
        harness.configure(apple + "\n" + harness.playSection())
        #expect(try await harness.ctl(["reload", "--wait"]).status == 0)
        #expect(await harness.waitFor(.finished, count: 2), "\(harness.counts())")
        let listed = try await harness.ctl(["list", "--store", "google_play"])
        let listedApple = try await harness.ctl(["list", "--store", "app_store", "--json"])
        let shownApple = try await harness.ctl(["show", "A1", "--json"])
        let wrongStore = try await harness.ctl(["list", "--store", "amazon"])
        daemon.send(SIGTERM)
        #expect(await daemon.wait() == 0)
        #expect(listed.output.contains("G1") && !listed.output.contains("A1"), "\(listed.output)")
        #expect(listedApple.output.contains("\"A1\"") && !listedApple.output.contains("\"G1\""), "\(listedApple.output)")
        #expect(shownApple.output.contains("\"store\":\"app_store\""), "\(shownApple.output)")
        #expect(wrongStore.status == 64 && wrongStore.error.contains("use app_store or google_play"), "\(wrongStore.error)")
        let stats = try await harness.mockStats()
        #expect(stats.deliveredStores == ["A1": "app_store", "G1": "google_play"])
        #expect(try harness.store().history(orderID: "G1").contains { $0.reason == "verifier_changed" })

        // Kind=http alone: the merchant gets the Play order, token and package included.
        let merchant = Harness("play-merchant")
        try await merchant.startMock()
        merchant.configure(SystemdEndToEndTests.merchant(merchant))
        let merchantToken = playToken("M1")
        merchant.dropPlayOrder("M1", token: merchantToken, extra: "\"package_name\":\"com.example.other\"")
        let merchantDaemon = try merchant.startDaemon()
        #expect(await merchant.waitFor(.finished, count: 1), "\(merchant.counts())")
        merchantDaemon.send(SIGTERM)
        #expect(await merchantDaemon.wait() == 0)
        #expect(try await merchant.mockStats().merchantPurchaseTokens["M1"] == MockStats.fingerprint(merchantToken))
        #expect(try merchant.store().order(id: "M1")?.finishedBy == .merchant)

        // [GooglePlay] alone: an App Store order waits for [Verifier].
        let only = Harness("play-only")
        _ = try await only.startPlayMock()
        let onlyToken = playToken("O1")
        try await only.registerPurchases([(onlyToken, "gems", "\"orderId\":\"GPA.1010\"")])
        only.configure(only.playSection())
        only.dropPlayOrder("O1", token: onlyToken)
        only.dropOrder("OA", receipt: appleReceipt("6100002"))
        let onlyDaemon = try only.startDaemon()
        #expect(await only.waitFor(.finished, count: 1), "\(only.counts())")
        #expect(await only.waitFor(.waiting, count: 1), "\(only.counts())")
        onlyDaemon.send(SIGTERM)
        #expect(await onlyDaemon.wait() == 0)
        #expect(try only.store().order(id: "OA")?.reason == "no_verifier_section")
    }

    @Test("a wrong key: the grant is refused (invalid_grant), a configuration error of googleplay-token, its circuit opens, nothing is charged and no purchase is read")
    func wrongKey() async throws {
        let harness = Harness("play-wrong-key")
        _ = try await harness.startPlayMock(mockKeyIndex: 1, daemonKeyIndex: 0)
        let token = playToken("W1")
        try await harness.registerPurchases([(token, "gems", "\"orderId\":\"GPA.4040\"")])
        harness.configure(harness.playSection("CircuitCooldown=30s\nCircuitMaxCooldown=30s"))
        harness.dropPlayOrder("W1", token: token)
        let daemon = try harness.startDaemon()
        #expect(await eventually(timeout: .seconds(15)) { daemon.standardError.contains("invalid_grant") }, "\(daemon.standardError.suffix(800))")
        // Its circuit is open for 30 s (checked below): nothing more can be tried before the stop.
        let status = try await harness.ctl(["status", "--json"])
        daemon.send(SIGTERM)
        #expect(await daemon.wait() == 0)
        let circuits = try JSONParser().parse(status.output.trimmingCharacters(in: .newlines))["circuits"]?.arrayValue ?? []
        let tokenCircuit = circuits.first { $0["endpoint"]?.stringValue == "googleplay-token" }
        #expect(tokenCircuit?["state"]?.stringValue == "open", "\(status.output)")
        let order = try #require(try harness.store().order(id: "W1"))
        #expect(order.state == .pending && order.attempts == 0, "a configuration error charged the order: \(order.state) \(order.attempts)")
        let play = try await harness.playStats()
        #expect(play.grantsRefused >= 1 && play.tokensIssued == 0)
        #expect(play.reads.isEmpty, "a purchase was read without an access token")
        #expect(daemon.standardError.contains("googleplay-token"))
        #expect(play.tokenRequests == 1, "the open circuit let \(play.tokenRequests) grants through")
    }

    @Test("a crash between finished and the acknowledgement: acknowledged after the restart, once — whether the first try failed or its answer was lost")
    func crashBeforeAcknowledgement() async throws {
        let harness = Harness("play-crash")
        _ = try await harness.startPlayMock()
        let (first, second) = (playToken("K1"), playToken("K2"))
        try await harness.registerPurchases([(first, "gems", "\"orderId\":\"GPA.0001\""), (second, "gems", "\"orderId\":\"GPA.0002\"")])
        harness.configure("\(harness.playSection())\n\(VerificationEndToEndTests.quickRetry)\nInitialDelay=5s\nMaxDelay=5s")
        let path = "/googleplay/androidpublisher/v3/applications/\(Harness.playPackage)/purchases/products/gems/tokens/"

        // The acknowledgement fails (503); the daemon dies with it owed.
        try await harness.configureMock(#"{"status_rates":{"503":1},"path_prefix":"\#(path)\#(first):acknowledge"}"#)
        harness.dropPlayOrder("K1", token: first)
        var daemon = try harness.startDaemon()
        #expect(await eventually(timeout: .seconds(20)) {
            (try? harness.store().actions(orderID: "K1").first?.attempts ?? 0) ?? 0 >= 1
                && (try? harness.store().order(id: "K1")?.state) == .finished
        })
        daemon.send(SIGKILL)
        _ = await daemon.wait()
        try await harness.configureMock(#"{"reset":true}"#)
        #expect(try harness.actionStates("K1") == ["play_acknowledge pending"])
        daemon = try harness.startDaemon()
        #expect(await eventually(timeout: .seconds(20)) { (try? harness.actionStates("K1")) == ["play_acknowledge done"] })

        // The acknowledgement reaches Google, its answer is slow; the daemon dies before it
        // comes. After the restart Google says acknowledged: nothing is sent again.
        // 8 s, within the default Timeout=10s: the kill lands before the answer, however slow.
        try await harness.configureMock(#"{"latency_ms":8000,"path_prefix":"\#(path)\#(second):acknowledge"}"#)
        harness.dropPlayOrder("K2", token: second)
        #expect(await eventually(timeout: .seconds(20)) {
            ((try? await harness.playStats().acknowledgeRequests[MockStats.fingerprint(second)]) ?? 0) == 1
        })
        daemon.send(SIGKILL)
        _ = await daemon.wait()
        try await harness.configureMock(#"{"reset":true}"#)
        daemon = try harness.startDaemon()
        #expect(await eventually(timeout: .seconds(20)) { (try? harness.actionStates("K2")) == ["play_acknowledge skipped"] })
        daemon.send(SIGTERM)
        #expect(await daemon.wait() == 0)
        let play = try await harness.playStats()
        for token in [first, second] {
            #expect(play.acknowledged[MockStats.fingerprint(token)] == 1)
            #expect(play.acknowledgeRequests[MockStats.fingerprint(token)] == 1)
        }
        #expect(try harness.store().actions(orderID: "K2").first?.reason == .alreadyAcknowledged)
    }

    @Test("the access token expires early, mid-run: refreshed once for everyone, no order failed")
    func tokenExpiresMidRun() async throws {
        let harness = Harness("play-token")
        _ = try await harness.startPlayMock()
        let tokens = (0..<24).map { playToken("E\($0)") }
        try await harness.registerPurchases(tokens.enumerated().map { ($1, "gems", "\"orderId\":\"GPA.E\($0)\"") })
        harness.configure("\(harness.playSection("Acknowledge=no\nMaxInFlight=16"))\n\(VerificationEndToEndTests.quickRetry)")
        for index in 0..<4 { harness.dropPlayOrder("E\(index)", token: tokens[index]) }
        let daemon = try await harness.startDaemonAndWait()
        #expect(await harness.waitFor(.finished, count: 4), "\(harness.counts())")
        #expect(try await harness.playStats().tokensIssued == 1)
        // Google stops accepting the token long before the hour it announced.
        try await harness.postMock("/_mock/googleplay/revoke-tokens", "{}")
        for index in 4..<24 { harness.dropPlayOrder("E\(index)", token: tokens[index]) }
        #expect(await harness.waitFor(.finished, count: 24), "\(harness.counts())")
        daemon.send(SIGTERM)
        #expect(await daemon.wait() == 0)
        let play = try await harness.playStats()
        #expect(play.tokensIssued == 2, "\(play.tokensIssued) access tokens for one expiry")
        #expect(play.unauthorized >= 1, "nothing was refused: the test proves nothing")
        let counts = harness.counts()
        #expect(counts[.finished] == 24 && counts[.escalated] == nil && counts[.rejected] == nil)
        #expect(!daemon.standardError.contains("circuit for googleplay opened"))
    }

    @Test("the access token nears its announced expiry mid-run: replaced once, before Google refuses it (no 401), for every order in flight")
    func tokenExpiresOnTime() async throws {
        let harness = Harness("play-token-expiry")
        _ = try await harness.startPlayMock()
        // Google announces 303 s: the daemon keeps a token until five minutes before, so 3 s.
        try await harness.postMock("/_mock/googleplay/config", #"{"expires_in":303,"token_lifetime_ms":303000}"#)
        let tokens = (0..<24).map { playToken("X\($0)") }
        try await harness.registerPurchases(tokens.enumerated().map { ($1, "gems", "\"orderId\":\"GPA.X\($0)\"") })
        harness.configure("\(harness.playSection("Acknowledge=no\nMaxInFlight=16"))\n\(VerificationEndToEndTests.quickRetry)")
        for index in 0..<4 { harness.dropPlayOrder("X\(index)", token: tokens[index]) }
        let daemon = try await harness.startDaemonAndWait()
        #expect(await harness.waitFor(.finished, count: 4), "\(harness.counts())")
        #expect(try await harness.playStats().tokensIssued == 1)
        // real sleep: past the token's 3 s of life on the daemon's real clock
        try await Task.sleep(for: .seconds(4))
        for index in 4..<24 { harness.dropPlayOrder("X\(index)", token: tokens[index]) }
        #expect(await harness.waitFor(.finished, count: 24), "\(harness.counts())")
        daemon.send(SIGTERM)
        #expect(await daemon.wait() == 0)
        let play = try await harness.playStats()
        #expect(play.tokensIssued == 2, "\(play.tokensIssued) access tokens for one expiry")
        #expect(play.unauthorized == 0, "a token was used after the daemon should have replaced it")
        #expect(play.tokenRequests == 2)
    }

    @Test("an acknowledgement still failing 48 hours after the purchase: one err line with its MESSAGE_ID and one command; after MaxAttempts the action escalates (warning, command with RECONCILE_ACTION); the order stays finished; `retry` sends it again")
    func overdueAndEscalated() async throws {
        let harness = Harness("play-overdue")
        _ = try await harness.startPlayMock()
        let token = playToken("D1")
        let purchased = Int64(Date().timeIntervalSince1970 * 1000) - 49 * 3_600_000
        try await harness.registerPurchases([(token, "gems", "\"orderId\":\"GPA.4848\",\"purchaseTimeMillis\":\"\(purchased)\"")])
        let captured = harness.directory.file("escalation.env")
        let script = harness.directory.write("bin/page", "#!/bin/sh\nenv | grep RECONCILE_ | sort >> \(captured)\necho --- >> \(captured)\n")
        chmod(script, 0o755)
        harness.configure("""
            \(harness.playSection())
            \(VerificationEndToEndTests.quickRetry)
            MaxAttempts=3
            [Escalation]
            Command=bin/page
            CommandRate=100
            """)
        let path = "/googleplay/androidpublisher/v3/applications/\(Harness.playPackage)/purchases/products/gems/tokens/\(token):acknowledge"
        try await harness.configureMock(#"{"status_rates":{"503":1},"path_prefix":"\#(path)"}"#)
        harness.dropPlayOrder("D1", token: token)
        let daemon = try harness.startDaemon()
        #expect(await eventually(timeout: .seconds(20)) { (try? harness.actionStates("D1")) == ["play_acknowledge escalated"] })
        #expect(await eventually(timeout: .seconds(10)) { (harness.directory.read("escalation.env") ?? "").components(separatedBy: "---").count == 3 })
        let status = try await harness.ctl(["status"])
        let due = try await harness.ctl(["list", "--actions-due", "--json"])
        // Google is back; the operator sends the escalated acknowledgement again.
        try await harness.configureMock(#"{"reset":true}"#)
        let retried = try await harness.ctl(["retry", "D1", "--note", "Play is back"])
        #expect(retried.status == 0 && retried.output.contains("D1: finished; its escalated follow-ups are sent again"), "\(retried)")
        #expect(await eventually(timeout: .seconds(10)) { (try? harness.actionStates("D1")) == ["play_acknowledge done"] })
        let again = try await harness.ctl(["retry", "D1"])
        #expect(again.status == 1 && again.error.contains("no follow-up of it is escalated"), "\(again)")
        daemon.send(SIGTERM)
        #expect(await daemon.wait() == 0)
        let log = daemon.standardError
        #expect(log.components(separatedBy: "still fails 48 hours after the purchase").count == 2, "the deadline warning is given once")
        #expect(log.contains("play_acknowledge of order D1 escalated: max_attempts"), "\(log.suffix(600))")
        let environment = harness.directory.read("escalation.env") ?? ""
        #expect(environment.components(separatedBy: "RECONCILE_ACTION=play_acknowledge").count == 3, "\(environment)")
        #expect(environment.contains("RECONCILE_REASON=play_acknowledge_overdue") && environment.contains("RECONCILE_REASON=max_attempts"))
        #expect(environment.contains("RECONCILE_ORDER_ID=D1") && environment.contains("RECONCILE_STATE=finished"))
        #expect(try harness.store().order(id: "D1")?.state == .finished)
        let action = try #require(try harness.store().actions(orderID: "D1").first)
        #expect(action.state == .done && action.attempts == 1, "attempts count from the retry")
        #expect(status.output.contains("outbox") && status.output.contains("1 escalated"), "\(status.output)")
        #expect(due.output.contains("\"actions\":[]"), "an escalated action is owed no more: \(due.output)")
        let play = try await harness.playStats()
        #expect(play.acknowledged[MockStats.fingerprint(token)] == 1, "acknowledged once, after the retry")
        #expect(try harness.store().history(orderID: "D1").last?.reason == "retry_actions")
    }
}
