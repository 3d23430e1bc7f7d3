import Foundation
import ReconcileCore
import ReconcileCrypto
import Testing
@testable import ReconcileMock
import ReconcileFoundation

/// The mock's Get Notification History (`docs/protocols/app-store-notifications.md` §4): registered
/// notifications signed with the mock's key, 20 a page in `[startDate, endDate)`, paged by
/// `paginationToken`, the bearer token checked, faults injected as on the other App Store paths.
@Suite("Mock App Store: notification history")
struct MockNotificationHistoryTests {
    static let bundleID = "com.example.app"

    func service() throws -> (MockService, AppStoreTokenCache) {
        let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("ReconcileCryptoTests/Fixtures/asapi-certs-testSigningKey.p8").path
        let key = try ES256PrivateKey(pem: try String(contentsOfFile: path, encoding: .utf8))
        var settings = MockService.Settings()
        settings.appStore = MockAppStore(settings: .init(signer: JWSSigner(key: key, certificateChainDER: []), tokenKey: key.publicKey, bundleID: Self.bundleID))
        return (MockService(settings: settings), AppStoreTokenCache(key: key, keyID: "KEY1234567", issuerID: "issuer", bundleID: Self.bundleID))
    }

    func history(_ service: MockService, _ tokens: AppStoreTokenCache, start: Int64, end: Int64, page: String? = nil) throws -> (Int, JSONValue?) {
        let reply = service.handle(ServerRequest(
            method: "POST", path: "/appstore/production/inApps/v1/notifications/history", query: page.map { "paginationToken=\($0)" } ?? "",
            headers: [HTTPHeader("authorization", "Bearer \(try tokens.token(now: Date()))")],
            body: Array(#"{"startDate":\#(start),"endDate":\#(end)}"#.utf8)))
        return (reply.status, try? JSONParser().parse(reply.body))
    }

    /// The decoded payloads of a page's signed payloads.
    func payloads(_ page: JSONValue?) throws -> [JSONValue] {
        try (page?["notificationHistory"]?.arrayValue ?? []).map { record in
            let jws = try #require(record["signedPayload"]?.stringValue)
            let parts = jws.split(separator: ".")
            #expect(parts.count == 3)
            return try JSONParser().parse(try Base64URL.decode(parts[1]))
        }
    }

    @Test("45 registered: pages of 20, 20, 5 by paginationToken; only those signed in [startDate, endDate); transactionInfo signed inside")
    func paging() throws {
        let (service, tokens) = try service()
        let list = (0..<50).map { index in
            #"{"notificationUUID":"n-\#(index)","notificationType":"TEST","signedDate":\#(1_000 + index),"data":{"transactionInfo":{"transactionId":"\#(index)"}}}"#
        }
        let reply = service.handle(ServerRequest(
            method: "POST", path: "/_mock/appstore/notifications", query: "", headers: [],
            body: Array(#"{"environment":"Production","notifications":[\#(list.joined(separator: ","))]}"#.utf8)))
        #expect(reply.status == 200)
        // signedDate 1002…1046: 45 of them.
        var ids: [String] = []
        var token: String?
        var sizes: [Int] = []
        repeat {
            let (status, page) = try history(service, tokens, start: 1_002, end: 1_047, page: token)
            #expect(status == 200)
            let decoded = try payloads(page)
            sizes.append(decoded.count)
            ids += decoded.compactMap { $0["notificationUUID"]?.stringValue }
            let signedTransaction = try #require(decoded.first?["data"]?["signedTransactionInfo"]?.stringValue)
            #expect(signedTransaction.split(separator: ".").count == 3)
            #expect(decoded.first?["data"]?["bundleId"]?.stringValue == Self.bundleID)
            #expect(decoded.first?["data"]?["environment"]?.stringValue == "Production")
            token = page?["hasMore"] == .bool(true) ? page?["paginationToken"]?.stringValue : nil
        } while token != nil
        #expect(sizes == [20, 20, 5])
        #expect(ids == (2..<47).map { "n-\($0)" })
        // The sandbox has none; a start after the end, a bad token, no bearer token are refused.
        let sandbox = service.handle(ServerRequest(
            method: "POST", path: "/appstore/sandbox/inApps/v1/notifications/history", query: "",
            headers: [HTTPHeader("authorization", "Bearer \(try tokens.token(now: Date()))")], body: Array(#"{"startDate":0,"endDate":5000}"#.utf8)))
        #expect(try payloads(try? JSONParser().parse(sandbox.body)).isEmpty)
        #expect(try history(service, tokens, start: 2_000, end: 1_000).1?["errorCode"] == .integer(4000013))
        #expect(try history(service, tokens, start: 0, end: 5_000, page: "bogus").1?["errorCode"] == .integer(4000014))
        let anonymous = service.handle(ServerRequest(
            method: "POST", path: "/appstore/production/inApps/v1/notifications/history", query: "", headers: [], body: Array("{}".utf8)))
        #expect(anonymous.status == 401)
    }

    @Test("faults apply: a 500 rate on /appstore/ answers the history with 500")
    func faults() throws {
        let (service, tokens) = try service()
        service.setFaults(try {
            var faults = MockFaults()
            try faults.apply(JSONObject(["status_rates": .object(JSONObject(["500": .number("1")])), "path_prefix": .string("/appstore/")]))
            return faults
        }())
        #expect(try history(service, tokens, start: 0, end: 5_000).0 == 500)
    }
}
