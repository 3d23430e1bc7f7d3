import Foundation
import ReconcileCore
import ReconcileFoundation
import ReconcileHTTP
import ReconcileMock
import TestSupport
@testable import ReconcileStore

/// Google Play around a ``Harness``: a test service account key for the daemon (and one for the
/// mock to check grants with), purchases scripted in the mock, and the `[GooglePlay]` section.
extension Harness {
    static let playPackage = "com.example.game"

    /// Writes the daemon's key file (`play-key.json`) and starts the mock checking grants with
    /// `mockKey` (the daemon's own key unless a test wants another).
    func startPlayMock(mockKeyIndex: Int = 0, daemonKeyIndex: Int = 0, arguments: [String] = []) async throws -> TestServiceAccount {
        let account = try await TestServiceAccount.make(index: daemonKeyIndex)
        directory.write("play-key.json", account.json)
        let checked = try await TestServiceAccount.make(index: mockKeyIndex)
        directory.write("mock-play-key.json", checked.json)
        try await startMock(["--googleplay-key", directory.file("mock-play-key.json")] + arguments)
        return account
    }

    /// `[GooglePlay]` against the mock.
    func playSection(_ extra: String = "") -> String {
        """
        [GooglePlay]
        PackageName=\(Self.playPackage)
        ServiceAccountFile=play-key.json
        URL=\(base)/googleplay
        TokenURL=\(base)/googleplay/token
        MaxRate=infinity
        \(extra)
        """
    }

    /// Registers purchases with the mock: each a JSON object's members after `token`, `package`
    /// (the default one unless given) and `product`.
    func registerPurchases(_ purchases: [(token: String, product: String, extra: String)], package: String = playPackage) async throws {
        let list = purchases.map { token, product, extra in
            "{\"token\":\"\(token)\",\"package\":\"\(package)\",\"product\":\"\(product)\"\(extra.isEmpty ? "" : "," + extra)}"
        }
        try await postMock("/_mock/googleplay/purchases", "{\"purchases\":[\(list.joined(separator: ","))]}")
    }

    func postMock(_ path: String, _ body: String) async throws {
        let result = await transport.send(HTTPRequest(url: base + path, body: Array(body.utf8), timeout: TestTime.scaled(.seconds(5))))
        guard result.response?.status == 200 else { throw HarnessError("the mock refused \(path): \(result.outcome)") }
    }

    /// The mock's Google Play counters (tokens by fingerprint: ``MockStats/fingerprint(_:)``).
    func playStats() async throws -> MockGooglePlay.Stats {
        let result = await transport.send(HTTPRequest(method: "GET", url: base + "/_mock/stats", timeout: TestTime.scaled(.seconds(5))))
        guard let response = result.response else { throw HarnessError("no stats: \(result.outcome)") }
        return MockGooglePlay.Stats(json: try JSONParser().parse(response.body)["googleplay"] ?? .null)
    }

    /// Drops a Google Play order file.
    func dropPlayOrder(_ orderID: String, token: String, product: String = "gems", extra: String = "") {
        var members = "\"purchase_token\":\"\(token)\""
        if !extra.isEmpty { members += "," + extra }
        drop("\(orderID).json", OrderFixtures.orderJSON(orderID, product: product, receipt: nil, extra: members))
    }

    /// The states of an order's outbox actions, as the store has them.
    func actionStates(_ orderID: String) throws -> [String] {
        try store().actions(orderID: orderID).map { "\($0.kind.rawValue) \($0.state.rawValue)" }
    }
}

/// A purchase token as Google's look: long, URL-safe, unique per call.
func playToken(_ name: String) -> String {
    "\(name).AO-J1Oz" + String(repeating: "x", count: 40) + UUID().uuidString.replacingOccurrences(of: "-", with: "")
}
