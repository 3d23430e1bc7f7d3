import Foundation
import Glibc
import ReconcileCore
import ReconcileCrypto
import ReconcileHTTP
import Testing
import TestSupport
@testable import ReconcileStore
@testable import ReconcileSQLite

/// `Kind=appstore` against the mock's App Store Server API (issue 8): a test chain made with
/// `openssl` signs the mock's answers, the daemon signs its tokens with a test In-App Purchase
/// key the mock checks.
@Suite("End to end: App Store Server API", .serialized)
struct AppStoreEndToEndTests {
    static let bundleID = "com.example.app"

    /// The keys and certificates of one setup, written into the harness's directory.
    struct Setup {
        var chain: TestCertificateChain
        var signer: JWSSigner
    }

    /// Makes the chain and the In-App Purchase key, starts the mock with them (the mock checks
    /// tokens with `tokenKeyPEM`, the daemon's key unless a test wants a wrong one).
    static func setUp(_ harness: Harness, wrongTokenKey: Bool = false, mockArguments: [String] = []) async throws -> Setup {
        let chain = try await TestCertificateChain.make()
        for (name, der) in [("root.der", chain.rootDER), ("intermediate.der", chain.intermediateDER), ("leaf.der", chain.leafDER)] {
            try Data(der).write(to: URL(fileURLWithPath: harness.directory.file(name)))
        }
        harness.directory.write("leaf.key", chain.leafKeyPEM)
        let daemonKey = try await TestCertificateChain.newKeyPEM()
        harness.directory.write("iap.p8", daemonKey)
        let checkedKey = wrongTokenKey ? try await TestCertificateChain.newKeyPEM() : daemonKey
        harness.directory.write("iap.pub", try ES256PrivateKey(pem: checkedKey).publicKey.pem)
        try await harness.startMock([
            "--appstore-key", harness.directory.file("leaf.key"),
            "--appstore-chain", ["leaf.der", "intermediate.der", "root.der"].map(harness.directory.file).joined(separator: ","),
            "--appstore-token-key", harness.directory.file("iap.pub"), "--bundle-id", bundleID,
        ] + mockArguments)
        let signer = JWSSigner(key: try ES256PrivateKey(pem: chain.leafKeyPEM), certificateChainDER: chain.x5c)
        return Setup(chain: chain, signer: signer)
    }

    /// `poll`: `[Notifications] Poll=`; off unless a test is about polling (a poll's requests
    /// would add to the counts and faults other tests check). It ends in quickRetry's [Retry].
    static func configuration(_ harness: Harness, allowSandbox: Bool = true, extra: String = "", poll: String = "off") -> String {
        """
        [Verifier]
        Kind=appstore
        URL=\(harness.base)/appstore/production
        SandboxURL=\(harness.base)/appstore/sandbox
        BundleID=\(bundleID)
        IssuerID=57246542-96fe-1a63-e053-0824d011072a
        KeyID=TESTKEY123
        PrivateKeyFile=iap.p8
        AppAppleID=1234567890
        RootCertificates=root.der
        AllowSandbox=\(allowSandbox ? "yes" : "no")
        MaxRate=infinity
        \(extra)
        [Notifications]
        Poll=\(poll)
        \(VerificationEndToEndTests.quickRetry)
        """
    }

    /// Registers transactions with the mock: `(transactionId, productId, extra JSON members)`.
    static func register(_ harness: Harness, environment: String, _ transactions: [(String, String, String)]) async throws {
        let list = transactions.map { id, product, extra in
            "{\"transactionId\":\"\(id)\",\"originalTransactionId\":\"\(id)\",\"productId\":\"\(product)\",\"purchaseDate\":\(Int64(Date().timeIntervalSince1970 * 1000)),\"type\":\"Consumable\"\(extra)}"
        }
        let body = "{\"environment\":\"\(environment)\",\"transactions\":[\(list.joined(separator: ","))]}"
        let result = await harness.transport.send(HTTPRequest(url: harness.base + "/_mock/appstore/transactions", body: Array(body.utf8), timeout: .seconds(5)))
        guard result.response?.status == 200 else { throw HarnessError("the mock refused the transactions: \(result.outcome)") }
    }

    static func fixtureText(_ name: String) throws -> String {
        let path = Fixtures.repositoryRoot + "/Tests/ReconcileCryptoTests/Fixtures/" + name
        return try String(contentsOfFile: path, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test("each kind of proof is finished; a revoked transaction is rejected refunded; a replay escalates as duplicate; 4040010 bounces to the sandbox")
    func proofs() async throws {
        let harness = Harness("appstore")
        let setup = try await Self.setUp(harness)
        try await Self.register(harness, environment: "Production", [
            ("1001", "gems", ""), ("1002", "gems", ",\"revocationDate\":\(Int64(Date().timeIntervalSince1970 * 1000))"),
            ("1003", "gems", ""), ("0", "gems", ""),
        ])
        try await Self.register(harness, environment: "Sandbox", [("2001", "gems", "")])
        harness.configure(Self.configuration(harness))
        let signed = try setup.signer.sign(payload: Array("""
            {"transactionId":"1003","originalTransactionId":"1003","productId":"gems","bundleId":"\(Self.bundleID)",\
            "environment":"Production","purchaseDate":\(Int64(Date().timeIntervalSince1970 * 1000)),"signedDate":\(Int64(Date().timeIntervalSince1970 * 1000))}
            """.utf8))
        harness.drop("by-id.json", OrderFixtures.orderJSON("BY-ID", product: "gems", receipt: nil, transactionID: "1001"))
        harness.drop("refunded.json", OrderFixtures.orderJSON("REFUNDED", product: "gems", receipt: nil, transactionID: "1002"))
        harness.drop("signed.json", OrderFixtures.orderJSON("SIGNED", product: "gems", receipt: nil, extra: "\"signed_transaction\":\"\(signed)\""))
        harness.drop("sandbox.json", OrderFixtures.orderJSON("SANDBOX", product: "gems", receipt: nil, transactionID: "2001"))
        harness.drop("receipt.json", OrderFixtures.orderJSON("RECEIPT", product: "gems", receipt: try Self.fixtureText("asapi-xcode-xcode-app-receipt-with-transaction")))
        let daemon = try harness.startDaemon()
        #expect(await harness.waitFor(.finished, count: 4), "\(harness.counts())")
        #expect(await harness.waitFor(.rejected, count: 1), "\(harness.counts())")
        harness.drop("replay.json", OrderFixtures.orderJSON("REPLAY", product: "gems", receipt: nil, transactionID: "1003"))
        #expect(await harness.waitFor(.escalated, count: 1), "\(harness.counts())")
        daemon.send(SIGTERM)
        #expect(await daemon.wait() == 0)

        let store = try harness.store()
        for id in ["BY-ID", "SIGNED", "SANDBOX", "RECEIPT"] {
            let order = try store.order(id: id)
            #expect(order?.state == .finished, "\(id): \(String(describing: order?.state)) \(order?.reason ?? "")")
        }
        #expect(try store.order(id: "REFUNDED")?.reason == "refunded")
        #expect(try store.order(id: "REPLAY")?.reason == "duplicate_transaction")
        #expect(try harness.scalar("SELECT count(*) FROM claims") == 4)
        // The sandbox order went to production first, then once to the sandbox.
        let sandboxAttempts = try store.withConnection {
            try $0.query("SELECT a.endpoint, coalesce(a.detail, '') FROM attempts a JOIN orders o ON o.id = a.order_ref WHERE o.order_id = 'SANDBOX' ORDER BY a.id") {
                "\($0.string(0)) \($0.string(1))"
            }
        }
        #expect(sandboxAttempts == ["production appstore_4040010", "sandbox "], "\(sandboxAttempts)")
        // Nothing secret in what the daemon wrote: not the app's signed transaction, no bearer
        // token, nothing of the In-App Purchase key, in its log or in the attempts it recorded.
        let key = try #require(harness.directory.read("iap.p8"))
        let keyBody = key.split(separator: "\n").filter { !$0.hasPrefix("-----") }.joined()
        let details = try store.withConnection { try $0.query("SELECT coalesce(detail, '') FROM attempts") { $0.string(0) } }.joined(separator: "\n")
        for written in [daemon.standardError, details] {
            #expect(!written.contains(signed))
            #expect(!written.contains("Bearer") && !written.contains("eyJ"), "a JWT or JWS was written out")
            #expect(!written.contains(keyBody.prefix(24)) && !written.contains("PRIVATE KEY"))
        }
    }

    @Test("moving from Kind=apple: an order waiting with only a transaction id is verified after the restart")
    func migration() async throws {
        let harness = Harness("appstore-migration")
        _ = try await Self.setUp(harness, mockArguments: ["--shared-secret", "s3cret"])
        try await Self.register(harness, environment: "Production", [("5001", "gems", "")])
        harness.configure(VerificationEndToEndTests().appleConfiguration(harness, allowSandbox: false))
        harness.drop("waiting.json", OrderFixtures.orderJSON("WAITING", product: "gems", receipt: nil, transactionID: "5001"))
        var daemon = try harness.startDaemon()
        #expect(await harness.waitFor(.waiting, count: 1))
        daemon.send(SIGTERM)
        #expect(await daemon.wait() == 0)
        harness.configure(Self.configuration(harness))
        daemon = try harness.startDaemon()
        #expect(await harness.waitFor(.finished, count: 1), "\(harness.counts())")
        daemon.send(SIGTERM)
        #expect(await daemon.wait() == 0)
        #expect(try harness.store().history(orderID: "WAITING").contains { $0.reason == "verifier_changed" })
    }

    @Test("a 429 with Retry-After in epoch milliseconds: nothing is sent before that moment, then the order finishes")
    func rateLimited() async throws {
        let harness = Harness("appstore-429")
        _ = try await Self.setUp(harness)
        try await Self.register(harness, environment: "Production", [("3001", "gems", "")])
        harness.configure(Self.configuration(harness))
        let retryAt = Int64((Date().timeIntervalSince1970 + 10) * 1000)  // far enough for a sanitized daemon to start first
        try await harness.configureMock(#"{"status_rates":{"429":1},"retry_after":"\#(retryAt)","path_prefix":"/appstore/"}"#)
        harness.drop("limited.json", OrderFixtures.orderJSON("LIMITED", product: "gems", receipt: nil, transactionID: "3001"))
        let daemon = try harness.startDaemon()
        #expect(await eventually(timeout: .seconds(10)) { ((try? harness.scalar("SELECT count(*) FROM attempts")) ?? 0) >= 1 })
        try await harness.configureMock(#"{"status_rates":{}}"#)
        #expect(await harness.waitFor(.finished, count: 1, timeout: .seconds(30)))
        daemon.send(SIGTERM)
        #expect(await daemon.wait() == 0)
        let attempts = try harness.store().withConnection {
            try $0.query("SELECT started_at, coalesce(detail, '') FROM attempts ORDER BY id") { ($0.int64(0), $0.string(1)) }
        }
        try #require(attempts.count == 2, "\(attempts)")
        #expect(attempts[0].1 == "appstore_429")
        #expect(attempts[0].0 < retryAt, "the first request came after the Retry-After moment: the test proves nothing")
        // Started-at is wall-clock milliseconds; the pause runs on the monotonic clock.
        #expect(attempts[1].0 >= retryAt - 50, "the second request left \(retryAt - attempts[1].0) ms before Retry-After")
    }

    @Test("a token signed with the wrong key: 401, a configuration error, the circuit opens and no order is charged")
    func wrongKey() async throws {
        let harness = Harness("appstore-401")
        _ = try await Self.setUp(harness, wrongTokenKey: true)
        try await Self.register(harness, environment: "Production", [("4001", "gems", "")])
        harness.configure(Self.configuration(harness, extra: "CircuitThreshold=1\nCircuitCooldown=30s\nCircuitMaxCooldown=30s"))
        harness.drop("unauthorized.json", OrderFixtures.orderJSON("UNAUTHORIZED", product: "gems", receipt: nil, transactionID: "4001"))
        let daemon = try harness.startDaemon()
        #expect(await eventually(timeout: .seconds(10)) { daemon.standardError.contains("appstore_401") })
        let status = try await harness.ctl(["status", "--json"])
        #expect(status.output.contains("open"), "\(status.output)")
        daemon.send(SIGTERM)
        #expect(await daemon.wait() == 0)
        let order = try #require(try harness.store().order(id: "UNAUTHORIZED"))
        #expect(order.state == .pending)
        #expect(order.attempts == 0, "a configuration error charged the order")
        #expect(daemon.standardError.contains("no release"))
    }
}
