import Foundation
import ReconcileCore
import ReconcileCrypto
import Testing
@testable import ReconcileMock
import ReconcileFoundation

/// The mock's Send Consumption Information v2 (`docs/protocols/app-store-notifications.md` §6): the
/// body checked as Apple documents it, the bearer token required, each accepted answer recorded
/// (and listed under `GET /_mock/stats`), 202.
@Suite("Mock App Store: consumption answers")
struct MockConsumptionTests {
    static let bundleID = "com.example.app"

    func service() throws -> (MockService, AppStoreTokenCache) {
        let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("ReconcileCryptoTests/Fixtures/asapi-certs-testSigningKey.p8").path
        let key = try ES256PrivateKey(pem: try String(contentsOfFile: path, encoding: .utf8))
        var settings = MockService.Settings()
        settings.appStore = MockAppStore(settings: .init(signer: JWSSigner(key: key, certificateChainDER: []), tokenKey: key.publicKey, bundleID: Self.bundleID))
        return (MockService(settings: settings), AppStoreTokenCache(key: key, keyID: "KEY1234567", issuerID: "issuer", bundleID: Self.bundleID))
    }

    func put(_ service: MockService, _ tokens: AppStoreTokenCache?, _ body: String, environment: String = "production") throws -> (Int, Int?) {
        var headers: [HTTPHeader] = []
        if let tokens { headers.append(HTTPHeader("authorization", "Bearer \(try tokens.token(now: Date()))")) }
        let reply = service.handle(ServerRequest(
            method: "PUT", path: "/appstore/\(environment)/inApps/v2/transactions/consumption/2000000123", query: "", headers: headers,
            body: Array(body.utf8)))
        let code = (try? JSONParser().parse(reply.body))?["errorCode"]?.int64Value.map(Int.init)
        return (reply.status, code)
    }

    @Test("Apple's fixture body is accepted (202) and recorded with its transaction, status and preference; stats list it")
    func accepted() throws {
        let (service, tokens) = try service()
        let fixture = try String(
            contentsOfFile: URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .appendingPathComponent("Fixtures/app-store-notifications/send-consumption-information.request.json").path, encoding: .utf8)
        #expect(try put(service, tokens, fixture) == (202, nil))
        #expect(try put(service, tokens, #"{"customerConsented":true,"sampleContentProvided":true,"deliveryStatus":"UNDELIVERED_OTHER"}"#, environment: "sandbox") == (202, nil))
        let answers = try #require(service.settings.appStore?.consumptionAnswers)
        #expect(answers == [
            .init(environment: "Production", transactionID: "2000000123", deliveryStatus: "DELIVERED", refundPreference: "GRANT_FULL", sampleContentProvided: false),
            .init(environment: "Sandbox", transactionID: "2000000123", deliveryStatus: "UNDELIVERED_OTHER", refundPreference: nil, sampleContentProvided: true),
        ])
        let stats = try JSONParser().parse(service.handle(ServerRequest(method: "GET", path: "/_mock/stats", query: "", headers: [], body: [])).body)
        #expect(stats["appstore"]?["consumption_answers"]?.arrayValue?.count == 2)
    }

    @Test("refused as Apple does: no consent 4000035, a bad delivery status 4000036, no sample flag 4000041, a bad preference 400; no token 401; nothing recorded")
    func refused() throws {
        let (service, tokens) = try service()
        let cases: [(String, Int, Int?)] = [
            (#"{"customerConsented":false,"sampleContentProvided":false,"deliveryStatus":"DELIVERED"}"#, 400, 4000035),
            (#"{"sampleContentProvided":false,"deliveryStatus":"DELIVERED"}"#, 400, 4000035),
            (#"{"customerConsented":true,"sampleContentProvided":false,"deliveryStatus":"LOST"}"#, 400, 4000036),
            (#"{"customerConsented":true,"sampleContentProvided":false,"deliveryStatus":0}"#, 400, 4000036),
            (#"{"customerConsented":true,"deliveryStatus":"DELIVERED"}"#, 400, 4000041),
            (#"{"customerConsented":true,"sampleContentProvided":"no","deliveryStatus":"DELIVERED"}"#, 400, 4000041),
            (#"{"customerConsented":true,"sampleContentProvided":false,"deliveryStatus":"DELIVERED","refundPreference":"MAYBE"}"#, 400, 4000000),
            ("[]", 400, 4000000),
        ]
        for (body, status, code) in cases {
            let (got, gotCode) = try put(service, tokens, body)
            #expect(got == status && gotCode == code, "\(body)")
        }
        #expect(try put(service, nil, #"{"customerConsented":true,"sampleContentProvided":false,"deliveryStatus":"DELIVERED"}"#).0 == 401)
        #expect(service.settings.appStore?.consumptionAnswers.isEmpty == true)
    }
}
