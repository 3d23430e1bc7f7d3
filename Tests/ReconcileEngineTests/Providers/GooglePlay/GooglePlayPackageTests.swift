import Foundation
import ReconcileCore
import ReconcileCrypto
import Testing
import TestSupport
@testable import ReconcileEngine
import ReconcileFoundation

/// Which app's purchases `[GooglePlay]` accepts (issue 23 item 2): only `PackageName=`'s; an
/// order naming another (stored by an older version) is escalated without asking Google, and a
/// delivery says which package the purchase was made in.
@Suite("Google Play: only the configured packages")
struct GooglePlayPackageTests {
    static let playURL = "https://play.example"
    static let tokenURL = "https://oauth2.example/token"
    static let json = [HTTPHeader("Content-Type", "application/json")]

    static func purchaseURL(_ package: String, token: String) -> String {
        playURL + GooglePlayVerifier.purchasePath(package: package, product: "gems", token: token)
    }

    func verifier(_ transport: ScriptedTransport) async throws -> GooglePlayVerifier {
        let account = try GoogleServiceAccount(json: Array(try await TestServiceAccount.make().json.utf8))
        let tokens = PlayAccessTokenCache(account: account, endpoint: EndpointSettings(url: Self.tokenURL, timeout: .seconds(5)), transport: transport)
        return GooglePlayVerifier(
            api: EndpointSettings(url: Self.playURL, timeout: .seconds(5)), packageName: "com.example.app", otherPackageNames: ["com.example.lite"],
            allowTestPurchases: false, tokens: tokens, transport: transport)
    }

    func order(_ orderID: String, token: String, package: String?) -> ClaimedOrder {
        ClaimedOrder(
            reference: 1, orderID: orderID, productID: "gems", kind: .verify, proof: OrderProof(purchaseToken: token, packageName: package),
            receivedAt: Date(timeIntervalSince1970: 1_800_000_000), attempt: 1)
    }

    @Test("an order naming a package not in PackageName= is escalated foreign_package, naming both, and Google is not asked; a configured one, or none (the first), is asked for its own package")
    func onlyConfiguredPackages() async throws {
        let purchase = answer(200, #"{"purchaseState":0,"orderId":"GPA.1","acknowledgementState":0,"consumptionState":0}"#, headers: Self.json)
        let transport = ScriptedTransport([
            Self.tokenURL: [answer(200, #"{"access_token":"ya29.test","expires_in":3600,"token_type":"Bearer"}"#, headers: Self.json)],
            Self.purchaseURL("com.example.cheap", token: "t-cheap"): [purchase],
            Self.purchaseURL("com.example.lite", token: "t-lite"): [purchase],
            Self.purchaseURL("com.example.app", token: "t-none"): [purchase],
        ])
        let verifier = try await verifier(transport)
        let foreign = await verifier.verify(order("P1", token: "t-cheap", package: "com.example.cheap"), gate: RecordingGate())
        guard case .escalate(let reason) = foreign.verdict else {
            Issue.record("not escalated: \(foreign.verdict)")
            return
        }
        #expect(reason.code == .foreignPackage)
        #expect(reason.detail?.contains("\"com.example.cheap\"") == true && reason.detail?.contains("com.example.app com.example.lite") == true, "\(reason)")
        #expect(transport.requests.isEmpty, "Google was asked about another app's purchase")

        let lite = await verifier.verify(order("P2", token: "t-lite", package: "com.example.lite"), gate: RecordingGate())
        guard case .playPurchase(let match) = lite.verdict else {
            Issue.record("not matched: \(lite.verdict)")
            return
        }
        #expect(match.packageName == "com.example.lite")
        let none = await verifier.verify(order("P3", token: "t-none", package: nil), gate: RecordingGate())
        guard case .playPurchase(let defaulted) = none.verdict else {
            Issue.record("not matched: \(none.verdict)")
            return
        }
        #expect(defaulted.packageName == "com.example.app")
    }

    @Test("a Google Play delivery carries package_name")
    func deliveryBody() async throws {
        let url = "https://backend.example/deliver"
        let transport = ScriptedTransport([url: [answer(200, "")]])
        let client = DeliveryClient(endpoint: EndpointSettings(url: url, timeout: .seconds(1)), transport: transport)
        var claimed = order("P2", token: "t-lite", package: "com.example.lite")
        claimed.kind = .deliver
        claimed.grant = Grant(transactionID: "GPA.1", productID: "gems", quantity: 1)
        #expect(await client.verify(claimed, gate: RecordingGate()).verdict == .delivered)
        let body = try JSONParser().parse(try #require(transport.requests.first).body)
        #expect(body["store"] == .string("google_play") && body["package_name"] == .string("com.example.lite"), "\(body)")
    }

    @Test("a delivery says the origin of an order the phone never sent, and nothing of the phone's own (DESIGN §5b)")
    func deliveryOrigin() async throws {
        let url = "https://backend.example/deliver"
        let transport = ScriptedTransport([url: [answer(200, ""), answer(200, ""), answer(200, "")]])
        let client = DeliveryClient(endpoint: EndpointSettings(url: url, timeout: .seconds(1)), transport: transport)
        for origin in [nil, OrderOrigin.store, .operator] {
            var claimed = order("O-\(origin?.rawValue ?? "phone")", token: "t-\(origin?.rawValue ?? "phone")", package: "com.example.app")
            claimed.kind = .deliver
            claimed.grant = Grant(transactionID: "GPA.9", productID: "gems", quantity: 1)
            claimed.origin = origin
            #expect(await client.verify(claimed, gate: RecordingGate()).verdict == .delivered)
        }
        let bodies = try transport.requests.map { try JSONParser().parse($0.body) }
        #expect(bodies.map { $0["origin"] } == [nil, .string("store"), .string("operator")], "\(bodies)")
        #expect(bodies.map { $0["order_id"] } == [.string("O-phone"), .string("O-store"), .string("O-operator")])
    }

    @Test("a Google Play grant of a package not in PackageName= (verified by an older version) is escalated foreign_package, not delivered")
    func foreignDeliveryEscalated() async throws {
        let url = "https://backend.example/deliver"
        let transport = ScriptedTransport([url: [answer(200, "")]])
        var client = DeliveryClient(endpoint: EndpointSettings(url: url, timeout: .seconds(1)), transport: transport)
        client.playPackages = ["com.example.app", "com.example.lite"]
        var claimed = order("P1", token: "t-cheap", package: "com.example.cheap")
        claimed.kind = .deliver
        claimed.grant = Grant(transactionID: "GPA.3", productID: "gems", quantity: 1)
        let outcome = await client.verify(claimed, gate: RecordingGate())
        guard case .escalate(let reason) = outcome.verdict else {
            Issue.record("not escalated: \(outcome.verdict)")
            return
        }
        #expect(reason.code == .foreignPackage && transport.requests.isEmpty)
        claimed.proof.packageName = "com.example.lite"
        #expect(await client.verify(claimed, gate: RecordingGate()).verdict == .delivered)
    }
}
