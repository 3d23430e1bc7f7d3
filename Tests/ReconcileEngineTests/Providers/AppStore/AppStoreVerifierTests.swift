import Foundation
import Synchronization
import ReconcileCore
import ReconcileCrypto
import Testing
import TestSupport
@testable import ReconcileEngine
import ReconcileFoundation

@Suite("App Store verifier: requests, paging, bounces and distrust")
struct AppStoreVerifierTests {
    static let production = "https://api.example"
    static let sandbox = "https://sandbox-api.example"
    static let bundleID = "com.example.app"

    /// A test chain and an In-App Purchase key, made once (openssl is slow).
    struct Keys: Sendable {
        var signer: JWSSigner
        var rootDER: [UInt8]
        var key: ES256PrivateKey
        var stranger: JWSSigner
    }

    /// Made once for the suite (each chain is a dozen runs of openssl).
    static let made = Mutex<Keys?>(nil)

    static func keys() async throws -> Keys {
        if let keys = made.withLock({ $0 }) { return keys }
        let chain = try await TestCertificateChain.make()
        let other = try await TestCertificateChain.makeUnshared()
        let keys = Keys(
            signer: JWSSigner(key: try ES256PrivateKey(pem: chain.leafKeyPEM), certificateChainDER: chain.x5c), rootDER: chain.rootDER,
            key: try ES256PrivateKey(pem: try await TestCertificateChain.newKeyPEM()),
            stranger: JWSSigner(key: try ES256PrivateKey(pem: other.leafKeyPEM), certificateChainDER: other.x5c))
        made.withLock { $0 = $0 ?? keys }
        return made.withLock { $0! }
    }

    func verifier(_ transport: ScriptedTransport, allowSandbox: Bool = true) async throws -> AppStoreVerifier {
        let keys = try await Self.keys()
        return AppStoreVerifier(
            production: EndpointSettings(url: Self.production, timeout: .seconds(1)),
            sandbox: EndpointSettings(url: Self.sandbox, timeout: .seconds(1)), bundleID: Self.bundleID, appAppleID: "1234",
            allowSandbox: allowSandbox,
            tokens: AppStoreTokenCache(key: keys.key, keyID: "KEY1234567", issuerID: "57246542-96fe-1a63-e053-0824d011072a", bundleID: Self.bundleID),
            productionTransactions: try SignedDataVerifier(rootCertificates: [keys.rootDER], bundleID: Self.bundleID, environment: .production),
            sandboxTransactions: try SignedDataVerifier(rootCertificates: [keys.rootDER], bundleID: Self.bundleID, environment: .sandbox),
            transport: transport)
    }

    static func signed(_ id: String, environment: String = "Production", product: String = "gems", by signer: JWSSigner? = nil, extra: String = "") async throws -> String {
        var chosen = signer
        if chosen == nil { chosen = try await keys().signer }
        let signer = chosen!
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let payload = #"{"transactionId":"\#(id)","originalTransactionId":"\#(id)","productId":"\#(product)","bundleId":"\#(bundleID)","environment":"\#(environment)","purchaseDate":\#(now),"signedDate":\#(now)\#(extra)}"#
        return try signer.sign(payload: Array(payload.utf8))
    }

    static func info(_ jws: String) -> HTTPExchangeResult {
        answer(200, #"{"signedTransactionInfo":"\#(jws)"}"#, headers: [HTTPHeader("Content-Type", "application/json")])
    }

    static func order(transactionID: String? = nil, signed: String? = nil, receipt: String? = nil) -> ClaimedOrder {
        var order = claimed(receipt: receipt)
        order.proof = OrderProof(receipt: receipt, transactionID: transactionID, signedTransaction: signed)
        return order
    }

    @Test("a transaction id: one GET with a bearer token the key verifies; the verified transaction is matched; no token recorded")
    func transactionID() async throws {
        let url = Self.production + "/inApps/v1/transactions/1001"
        let transport = ScriptedTransport([url: [Self.info(try await Self.signed("1001"))]])
        let outcome = try await verifier(transport).verify(Self.order(transactionID: "1001"), gate: RecordingGate())
        guard case .match(let items, let environment) = outcome.verdict else {
            Issue.record("not a match: \(outcome.verdict)")
            return
        }
        #expect(items.map(\.transactionID) == ["1001"] && environment == "Production")
        let request = try #require(transport.requests.first)
        #expect(request.method == "GET" && request.url == url)
        let bearer = try #require(request.headers.first { $0.name == "Authorization" }?.value)
        #expect(bearer.hasPrefix("Bearer "))
        let claims = try AppStoreJWT.verify(String(bearer.dropFirst(7)), with: try await Self.keys().key.publicKey, now: Date())
        #expect(claims.bundleID == Self.bundleID && claims.keyID == "KEY1234567")
        #expect(!"\(outcome.records)".contains(String(bearer.dropFirst(7))))
    }

    @Test("4040010 from production: once to the sandbox when allowed; escalated transaction_not_found when not")
    func sandboxBounce() async throws {
        let productionURL = Self.production + "/inApps/v1/transactions/2001"
        let notFound = answer(404, #"{"errorCode":4040010,"errorMessage":"Transaction id not found."}"#)
        let transport = ScriptedTransport([productionURL: [notFound], Self.sandbox + "/inApps/v1/transactions/2001": [Self.info(try await Self.signed("2001", environment: "Sandbox"))]])
        let outcome = try await verifier(transport).verify(Self.order(transactionID: "2001"), gate: RecordingGate())
        guard case .match(let items, "Sandbox") = outcome.verdict else {
            Issue.record("not a sandbox match: \(outcome.verdict)")
            return
        }
        #expect(items.map(\.transactionID) == ["2001"])
        #expect(transport.requests.map(\.url) == [productionURL, Self.sandbox + "/inApps/v1/transactions/2001"])
        #expect(outcome.records.map(\.endpoint) == [.production, .sandbox])

        let strict = ScriptedTransport([productionURL: [notFound]])
        let refused = try await verifier(strict, allowSandbox: false).verify(Self.order(transactionID: "2001"), gate: RecordingGate())
        guard case .escalate(let reason) = refused.verdict else {
            Issue.record("\(refused.verdict)")
            return
        }
        #expect(reason.code == .transactionNotFound)
        #expect(strict.requests.count == 1)
    }

    @Test("a receipt: its transaction id's history, page after page by revision, all matched together")
    func historyPaging() async throws {
        let receipt = try String(contentsOfFile: Fixtures.repositoryRoot + "/Tests/ReconcileCryptoTests/Fixtures/asapi-xcode-xcode-app-receipt-with-transaction", encoding: .utf8)
        let first = Self.production + "/inApps/v2/history/0"
        let page1 = #"{"revision":"r2","hasMore":true,"bundleId":"\#(Self.bundleID)","appAppleId":1234,"environment":"Production","signedTransactions":["\#(try await Self.signed("0"))","\#(try await Self.signed("7", product: "coins"))"]}"#
        let page2 = #"{"revision":"r3","hasMore":false,"bundleId":"\#(Self.bundleID)","appAppleId":1234,"environment":"Production","signedTransactions":["\#(try await Self.signed("8"))"]}"#
        let transport = ScriptedTransport([first: [answer(200, page1)], first + "?revision=r2": [answer(200, page2)]])
        let outcome = try await verifier(transport).verify(Self.order(receipt: receipt), gate: RecordingGate())
        guard case .match(let items, _) = outcome.verdict else {
            Issue.record("not a match: \(outcome.verdict)")
            return
        }
        #expect(items.map(\.transactionID) == ["0", "7", "8"])
        #expect(transport.requests.map(\.url) == [first, first + "?revision=r2"])
    }

    @Test("an answer signed by a chain we do not trust is believed in nothing: a configuration error")
    func untrustedAnswer() async throws {
        let url = Self.production + "/inApps/v1/transactions/1001"
        let transport = ScriptedTransport([url: [Self.info(try await Self.signed("1001", by: try await Self.keys().stranger))]])
        let outcome = try await verifier(transport).verify(Self.order(transactionID: "1001"), gate: RecordingGate())
        guard case .configuration(let reason) = outcome.verdict else {
            Issue.record("\(outcome.verdict)")
            return
        }
        #expect(reason.description.hasPrefix("appstore_unverifiable_answer: invalid_chain"))
    }

    @Test("the order's own signed transaction: tampered → rejected; a sandbox one without AllowSandbox → rejected; a good one is confirmed with Apple")
    func signedTransaction() async throws {
        let good = try await Self.signed("1003")
        let parts = good.split(separator: ".").map(String.init)
        let forged = parts[0] + "." + Base64URL.encode(Array(#"{"transactionId":"1003","productId":"gems","bundleId":"com.example.app","environment":"Production"}"#.utf8)) + "." + parts[2]
        let none = ScriptedTransport([:])
        let tampered = try await verifier(none).verify(Self.order(signed: forged), gate: RecordingGate())
        #expect({ if case .reject(let reason) = tampered.verdict, reason.code == .invalidSignedTransaction { true } else { false } }(), "\(tampered.verdict)")
        let sandbox = try await verifier(none, allowSandbox: false).verify(Self.order(signed: try await Self.signed("1004", environment: "Sandbox")), gate: RecordingGate())
        #expect({ if case .reject(let reason) = sandbox.verdict, reason.code == .sandboxNotAllowed { true } else { false } }(), "\(sandbox.verdict)")
        #expect(none.requests.isEmpty, "a refused proof was sent to Apple")

        let url = Self.production + "/inApps/v1/transactions/1003"
        let revoked = try await Self.signed("1003", extra: #","revocationDate":1700000000000"#)
        let transport = ScriptedTransport([url: [Self.info(revoked)]])
        let outcome = try await verifier(transport).verify(Self.order(signed: good), gate: RecordingGate())
        guard case .match(let items, _) = outcome.verdict else {
            Issue.record("\(outcome.verdict)")
            return
        }
        #expect(items.first?.isCancelled == true, "Apple's fresh copy (revoked since) must win over the app's")
    }

    @Test("errors: 5000000 is internalError, 429 pauses with Retry-After, 401 is a configuration error naming the missing release")
    func errors() async throws {
        let url = Self.production + "/inApps/v1/transactions/9"
        let cases: [(HTTPExchangeResult, (VerifierOutcome.Verdict) -> Bool)] = [
            (answer(500, #"{"errorCode":5000000,"errorMessage":"x"}"#), { $0 == .internalError }),
            (answer(429, #"{"errorCode":4290000}"#, headers: [HTTPHeader("Retry-After", "30")]), { $0 == .transient(Reason(.appStore(429)), retryAfter: .seconds(30)) }),
            (answer(401, "Unauthenticated"), { if case .configuration(let reason) = $0 { reason.description.contains("no release") } else { false } }),
            (answer(400, #"{"errorCode":4000006}"#), { if case .reject(let reason) = $0, reason.code == .invalidTransactionID { true } else { false } }),
            (failure(.timeout), { $0 == .transient(Reason(.timeout)) }),
        ]
        for (result, check) in cases {
            let transport = ScriptedTransport([url: [result]])
            let outcome = try await verifier(transport).verify(Self.order(transactionID: "9"), gate: RecordingGate())
            #expect(check(outcome.verdict), "\(outcome.verdict)")
        }
    }
}

extension AppStoreVerifierTests {
    @Test("ids in a path: unreserved ASCII kept, every other byte of their UTF-8 escaped")
    func pathComponent() {
        #expect(AppStoreVerifier.pathComponent("2000000123456789") == "2000000123456789")
        #expect(AppStoreVerifier.pathComponent("é+ /") == "%C3%A9%2B%20%2F")
        #expect(AppStoreVerifier.pathComponent("") == "")
    }

    @Test("a proof of dots only is escaped: a dot segment would be normalised away (issue 23, item 1)")
    func dotSegments() {
        #expect(AppStoreVerifier.pathComponent(".") == "%2E")
        #expect(AppStoreVerifier.pathComponent("..") == "%2E%2E")
        #expect(AppStoreVerifier.pathComponent("a.b") == "a.b")
        #expect(GooglePlayVerifier.purchasePath(package: "com.example.app", product: "gems", token: ".").hasSuffix("/tokens/%2E"))
    }
}
