import Foundation
import ReconcileCore
import ReconcileCrypto
import Synchronization
import Testing
import TestSupport
@testable import ReconcileMock
import ReconcileFoundation

/// The mock's Cloud Pub/Sub pull (DESIGN §5b): messages a test publishes are pulled, each delivery
/// with a fresh `ackId`, outstanding until its ack deadline and then delivered again unless
/// acknowledged; the pubsub scope required of the token; faults and counters. The mock's pull
/// answers are read back with the daemon's own parser, ``PubSubPullAnswer``.
@Suite("Mock Cloud Pub/Sub pull")
struct MockPubSubTests {
    static let subscription = "projects/reconcile-test/subscriptions/play-rtdn"
    static let pullPath = "/pubsub/v1/projects/reconcile-test/subscriptions/play-rtdn:pull"
    static let acknowledgePath = "/pubsub/v1/projects/reconcile-test/subscriptions/play-rtdn:acknowledge"
    static let audience = "https://oauth2.googleapis.com/token"
    static let bothScopes = MockGooglePlay.androidPublisherScope + " " + MockGooglePlay.pubSubScope

    // MARK: - Helpers

    /// A throwaway RSA key (`openssl genpkey`, never a real account's), made once and off the
    /// cooperative pool.
    static func key() async throws -> RS256PrivateKey {
        if let pem = generatedKey.withLock({ $0 }) { return try RS256PrivateKey(pem: pem) }
        let pem: String = try await withCheckedThrowingContinuation { continuation in
            Thread { continuation.resume(with: Result { try Self.generateKey() }) }.start()
        }
        return try RS256PrivateKey(pem: generatedKey.withLock { $0 = $0 ?? pem; return $0! })
    }

    static let generatedKey = Mutex<String?>(nil)

    static func generateKey() throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = ["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let pem = String(decoding: data, as: UTF8.self)
        guard process.terminationStatus == 0, pem.contains("BEGIN PRIVATE KEY") else { throw MockServerError("openssl genpkey failed") }
        return pem
    }

    /// A mock with Google Play (and so Pub/Sub) for the test key.
    static func service(ackDeadline: TimeInterval = 10) async throws -> (MockService, RS256PrivateKey) {
        let key = try await key()
        var settings = MockService.Settings()
        settings.googlePlay = MockGooglePlay(settings: .init(key: key.publicKey, audience: audience, pubSubAckDeadline: ackDeadline))
        return (MockService(settings: settings), key)
    }

    /// An access token from the mock's token endpoint for a grant whose `scope` claim is `scope`.
    static func token(_ service: MockService, _ key: RS256PrivateKey, scope: String) throws -> String {
        let iat = Int64(Date().timeIntervalSince1970) - 10
        let header = JSONWriter.bytes(.object(JSONObject(["alg": .string("RS256"), "kid": .string("k1"), "typ": .string("JWT")])))
        let claims = JSONWriter.bytes(.object(JSONObject([
            "iss": .string("reconciled@reconcile-test.iam.gserviceaccount.com"), "scope": .string(scope), "aud": .string(audience),
            "iat": .integer(iat), "exp": .integer(iat + 3600),
        ])))
        let input = Base64URL.encode(header) + "." + Base64URL.encode(claims)
        let assertion = input + "." + Base64URL.encode(try key.sign(Array(input.utf8)))
        let reply = service.handle(ServerRequest(
            method: "POST", path: "/googleplay/token", query: "", headers: [HTTPHeader("content-type", "application/x-www-form-urlencoded")],
            body: Array("grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=\(assertion)".utf8)))
        guard reply.status == 200, let token = (try? JSONParser().parse(reply.body))?["access_token"]?.stringValue else {
            throw MockServerError("the token endpoint answered \(reply.status)")
        }
        return token
    }

    static func post(_ service: MockService, _ path: String, _ body: String, token: String? = nil) -> (status: Int, body: JSONValue?) {
        let headers = token.map { [HTTPHeader("authorization", "Bearer \($0)")] } ?? []
        let reply = service.handle(ServerRequest(method: "POST", path: path, query: "", headers: headers, body: Array(body.utf8)))
        return (reply.status, try? JSONParser().parse(reply.body))
    }

    /// Pulls and reads the answer with the daemon's parser.
    static func pull(_ service: MockService, token: String, max: Int) throws -> PubSubPullAnswer {
        let reply = service.handle(ServerRequest(
            method: "POST", path: pullPath, query: "", headers: [HTTPHeader("authorization", "Bearer \(token)")],
            body: PubSubPullAnswer.pullBody(maxMessages: max)))
        guard reply.status == 200 else { throw MockServerError("pull answered \(reply.status)") }
        return try PubSubPullAnswer.parse(reply.body)
    }

    static func acknowledge(_ service: MockService, token: String, _ ackIDs: [String]) -> (status: Int, body: JSONValue?) {
        post(service, acknowledgePath, String(decoding: PubSubPullAnswer.acknowledgeBody(ackIDs), as: UTF8.self), token: token)
    }

    static func publish(_ service: MockService, _ messages: String, subscription: String = subscription) -> (status: Int, body: JSONValue?) {
        post(service, "/_mock/pubsub/publish", #"{"subscription":"\#(subscription)","messages":[\#(messages)]}"#)
    }

    static let notification = #"{"version":"1.0","packageName":"com.example.app","eventTimeMillis":"1796023566000","oneTimeProductNotification":{"version":"1.0","notificationType":1,"purchaseToken":"token-1","sku":"coins_100"}}"#

    // MARK: - Tests

    @Test("two published: maxMessages 1 gives the first, 5 the second only (the first is outstanding); one acknowledged, the other delivered again after the 2 s deadline with a new ackId and deliveryAttempt 2")
    func pullAcknowledgeRedeliver() async throws {
        // 2 s, not 1: everything up to the acknowledgement must happen within it, even on a
        // busy machine.
        let (service, key) = try await Self.service(ackDeadline: 2)
        let token = try Self.token(service, key, scope: Self.bothScopes)
        let published = Self.publish(service, #"{"json":\#(Self.notification),"messageId":"m-1"},{"data":"eyJ0ZXN0Tm90aWZpY2F0aW9uIjp7fX0=","attributes":{"k":"v"}}"#)
        #expect(published.status == 200)
        let ids = (published.body?["messageIds"]?.arrayValue ?? []).compactMap(\.stringValue)
        #expect(ids.count == 2 && ids[0] == "m-1" && !ids[1].isEmpty)

        let first = try Self.pull(service, token: token, max: 1)
        #expect(first.messages.map(\.messageID) == ["m-1"])
        #expect(first.messages.first?.data == Array(Self.notification.utf8), "the json form arrives base64-encoded, decoded whole")
        #expect(first.messages.first?.deliveryAttempt == 1)
        #expect(first.messages.first?.publishTime.map { abs($0.timeIntervalSinceNow) < 60 } == true)
        let pulledAt = Date()
        let second = try Self.pull(service, token: token, max: 5)
        #expect(second.messages.map(\.messageID) == [ids[1]], "the first is outstanding: not delivered again")
        #expect(second.messages.first?.data == Array(#"{"testNotification":{}}"#.utf8))
        let secondAck = try #require(second.messages.first?.ackID)
        #expect(secondAck != first.messages.first?.ackID)
        // The attributes are passed on as published.
        let raw = try JSONParser().parse(service.handle(ServerRequest(
            method: "POST", path: Self.pullPath, query: "", headers: [HTTPHeader("authorization", "Bearer \(token)")],
            body: Array(#"{"maxMessages":5}"#.utf8))).body)
        if Date().timeIntervalSince(pulledAt) < 2 { #expect(raw == .object(JSONObject()), "nothing waits: {}") }

        let acknowledged = Self.acknowledge(service, token: token, [try #require(first.messages.first?.ackID)])
        #expect(acknowledged.status == 200 && acknowledged.body == .object(JSONObject()))
        #expect(service.stats.pubsubAcknowledged == ["m-1": 1])

        var redelivered: PubSubPullAnswer.Message?
        let came = try await eventually(timeout: .seconds(20)) {
            redelivered = try Self.pull(service, token: token, max: 5).messages.first
            return redelivered != nil
        }
        #expect(came, "the unacknowledged message comes back after its deadline")
        #expect(Date().timeIntervalSince(pulledAt) >= 2, "not before its deadline")
        #expect(redelivered?.messageID == ids[1], "only the unacknowledged one: m-1 never again")
        #expect(redelivered?.deliveryAttempt == 2)
        let newAck = try #require(redelivered?.ackID)
        #expect(newAck != secondAck)

        // The earlier delivery's ackId is ignored (no error); the latest one counts; once is enough.
        #expect(Self.acknowledge(service, token: token, [secondAck]).status == 200)
        #expect(service.stats.pubsubAcknowledged == ["m-1": 1])
        #expect(Self.acknowledge(service, token: token, [newAck, newAck, "never-issued"]).status == 200)
        #expect(service.stats.pubsubAcknowledged == ["m-1": 1, ids[1]: 1])
        #expect(try Self.pull(service, token: token, max: 5).messages.isEmpty)
        #expect(service.stats.pubsubDelivered == ["m-1": 1, ids[1]: 2])
    }

    @Test("an ackId whose deadline passed is ignored even before the message is delivered again; then the message comes back")
    func expiredAckID() async throws {
        let (service, key) = try await Self.service()
        let token = try Self.token(service, key, scope: Self.bothScopes)
        #expect(Self.publish(service, #"{"data":"e30=","messageId":"late"}"#).status == 200)
        let delivery = try #require(try Self.pull(service, token: token, max: 10).messages.first)
        // Past its deadline (rather than waiting 10 s for it).
        service.settings.googlePlay?.pubSub.state.withLock { $0.subscriptions[Self.subscription]?.messages[0].outstandingUntil = Date(timeIntervalSinceNow: -1) }
        #expect(Self.acknowledge(service, token: token, [delivery.ackID]).status == 200)
        #expect(service.stats.pubsubAcknowledged.isEmpty)
        let again = try Self.pull(service, token: token, max: 10).messages
        #expect(again.map(\.messageID) == ["late"] && again.first?.deliveryAttempt == 2 && again.first?.ackID != delivery.ackID)
    }

    @Test("scopes: a token granted androidpublisher only gets 403 PERMISSION_DENIED from Pub/Sub and still reads Play; no token or an unknown one 401; both scopes pass")
    func scopes() async throws {
        let (service, key) = try await Self.service()
        #expect(Self.publish(service, "").status == 200, "an empty publish creates the subscription")
        let playOnly = try Self.token(service, key, scope: MockGooglePlay.androidPublisherScope)
        let denied = Self.post(service, Self.pullPath, #"{"maxMessages":1}"#, token: playOnly)
        #expect(denied.status == 403)
        #expect(denied.body == (try JSONParser().parse(
            #"{"error":{"code":403,"message":"Request had insufficient authentication scopes.","status":"PERMISSION_DENIED"}}"#)))
        #expect(Self.post(service, Self.acknowledgePath, #"{"ackIds":["a"]}"#, token: playOnly).status == 403)
        // The Developer API still takes it (a 404 for an unknown purchase is past authorization).
        let play = service.handle(ServerRequest(
            method: "GET", path: "/googleplay/androidpublisher/v3/applications/com.example.app/purchases/products/p/tokens/t", query: "",
            headers: [HTTPHeader("authorization", "Bearer \(playOnly)")], body: []))
        #expect(play.status == 404 && String(decoding: play.body, as: UTF8.self).contains("purchaseTokenNotFound"))

        let anonymous = Self.post(service, Self.pullPath, #"{"maxMessages":1}"#)
        #expect(anonymous.status == 401 && anonymous.body?["error"]?["status"] == .string("UNAUTHENTICATED"))
        #expect(Self.post(service, Self.pullPath, #"{"maxMessages":1}"#, token: "ya29.not-issued").status == 401)

        let both = try Self.token(service, key, scope: Self.bothScopes)
        let granted = Self.post(service, Self.pullPath, #"{"maxMessages":1}"#, token: both)
        #expect(granted.status == 200 && granted.body == .object(JSONObject()))
        let bothPlay = service.handle(ServerRequest(
            method: "GET", path: "/googleplay/androidpublisher/v3/applications/com.example.app/purchases/products/p/tokens/t", query: "",
            headers: [HTTPHeader("authorization", "Bearer \(both)")], body: []))
        #expect(bothPlay.status == 404)
        // Revoked tokens are refused here too.
        _ = Self.post(service, "/_mock/googleplay/revoke-tokens", "")
        #expect(Self.post(service, Self.pullPath, #"{"maxMessages":1}"#, token: both).status == 401)
        let stats = try #require(service.settings.googlePlay?.stats)
        #expect(stats.insufficientScope == 2 && stats.unauthorized == 3)
        #expect(MockGooglePlay.Stats(json: stats.json) == stats)
    }

    @Test("fail_acknowledge: :acknowledge answers 503 UNAVAILABLE and acknowledges nothing, so the message comes back after its deadline; switched off, acknowledging works")
    func failAcknowledge() async throws {
        let (service, key) = try await Self.service(ackDeadline: 2)
        let token = try Self.token(service, key, scope: Self.bothScopes)
        #expect(Self.publish(service, #"{"data":"e30=","messageId":"flaky"}"#).status == 200)
        #expect(Self.post(service, "/_mock/pubsub/config", #"{"fail_acknowledge":true}"#).status == 200)
        let delivery = try #require(try Self.pull(service, token: token, max: 1).messages.first)
        let failed = Self.acknowledge(service, token: token, [delivery.ackID])
        #expect(failed.status == 503 && failed.body?["error"]?["status"] == .string("UNAVAILABLE"))
        #expect(service.stats.pubsubAcknowledged.isEmpty)
        var again: PubSubPullAnswer.Message?
        #expect(try await eventually(timeout: .seconds(20)) {
            again = try Self.pull(service, token: token, max: 1).messages.first
            return again != nil
        })
        #expect(again?.messageID == "flaky" && again?.deliveryAttempt == 2)
        #expect(Self.post(service, "/_mock/pubsub/config", #"{"fail_acknowledge":false}"#).status == 200)
        #expect(Self.acknowledge(service, token: token, [try #require(again?.ackID)]).status == 200)
        #expect(service.stats.pubsubAcknowledged == ["flaky": 1])
    }

    @Test("fail_pull_status: :pull answers that status (counted as a pull, nothing delivered) until set to null; bad settings are refused")
    func failPull() async throws {
        let (service, key) = try await Self.service()
        let token = try Self.token(service, key, scope: Self.bothScopes)
        #expect(Self.publish(service, #"{"data":"e30=","messageId":"held"}"#).status == 200)
        #expect(Self.post(service, "/_mock/pubsub/config", #"{"fail_pull_status":503}"#).status == 200)
        let failed = Self.post(service, Self.pullPath, #"{"maxMessages":1}"#, token: token)
        #expect(failed.status == 503 && failed.body?["error"]?["code"] == .integer(503))
        #expect(service.stats.pubsubDelivered.isEmpty && service.stats.pubsubPulls == 1)
        #expect(Self.post(service, "/_mock/pubsub/config", #"{"fail_pull_status":null}"#).status == 200)
        #expect(try Self.pull(service, token: token, max: 1).messages.map(\.messageID) == ["held"])
        #expect(Self.post(service, "/_mock/pubsub/config", #"{"fail_pull_status":200}"#).status == 400)
        #expect(Self.post(service, "/_mock/pubsub/config", #"{"fail_acknowledge":"yes"}"#).status == 400)
        #expect(Self.post(service, "/_mock/pubsub/config", #"{"ack_deadline":5}"#).status == 400)
        #expect(Self.post(service, "/_mock/pubsub/config", "[]").status == 400)
    }

    @Test("an unknown subscription is 404 NOT_FOUND for :pull and :acknowledge; a path that is no method is Google's HTML 404")
    func unknownSubscription() async throws {
        let (service, key) = try await Self.service()
        let token = try Self.token(service, key, scope: Self.bothScopes)
        let pulled = Self.post(service, "/pubsub/v1/projects/reconcile-test/subscriptions/nope:pull", #"{"maxMessages":1}"#, token: token)
        #expect(pulled.status == 404 && pulled.body?["error"]?["status"] == .string("NOT_FOUND"))
        #expect(Self.post(service, "/pubsub/v1/projects/reconcile-test/subscriptions/nope:acknowledge", #"{"ackIds":["a"]}"#, token: token).status == 404)
        // Same name, other project.
        #expect(Self.publish(service, "").status == 200)
        #expect(Self.post(service, "/pubsub/v1/projects/other/subscriptions/play-rtdn:pull", #"{"maxMessages":1}"#, token: token).status == 404)
        for path in ["/pubsub/v1/projects/reconcile-test/subscriptions/play-rtdn:seek", "/pubsub/v1/projects/reconcile-test/subscriptions/play-rtdn",
                     "/pubsub/v1/projects/reconcile-test/topics/t:publish"] {
            let reply = service.handle(ServerRequest(method: "POST", path: path, query: "", headers: [HTTPHeader("authorization", "Bearer \(token)")], body: []))
            #expect(reply.status == 404 && reply.headers.contains { $0.value.hasPrefix("text/html") }, "\(path)")
        }
        // Without Google Play there is no Pub/Sub.
        let bare = MockService()
        #expect(Self.post(bare, Self.pullPath, #"{"maxMessages":1}"#).status == 404)
        #expect(Self.post(bare, "/_mock/pubsub/publish", #"{"subscription":"\#(Self.subscription)","messages":[]}"#).status == 404)
    }

    @Test("maxMessages outside 1…1000, missing, not a number, or a body that is not JSON: 400 INVALID_ARGUMENT, nothing delivered; 1000 and \"2\" are taken")
    func badMaxMessages() async throws {
        let (service, key) = try await Self.service()
        let token = try Self.token(service, key, scope: Self.bothScopes)
        #expect(Self.publish(service, #"{"data":"e30="},{"data":"e30="},{"data":"e30="}"#).status == 200)
        for body in [#"{"maxMessages":0}"#, #"{"maxMessages":1001}"#, #"{"maxMessages":-1}"#, #"{"maxMessages":1.5}"#, #"{"maxMessages":"many"}"#, "{}", "not json"] {
            let answer = Self.post(service, Self.pullPath, body, token: token)
            #expect(answer.status == 400 && answer.body?["error"]?["status"] == .string("INVALID_ARGUMENT"), "\(body)")
        }
        #expect(service.stats.pubsubDelivered.isEmpty)
        #expect(Self.post(service, Self.pullPath, #"{"maxMessages":"2"}"#, token: token).body?["receivedMessages"]?.arrayValue?.count == 2)
        #expect(try Self.pull(service, token: token, max: 1000).messages.count == 1)
        // :acknowledge wants a non-empty list of strings.
        for body in ["{}", #"{"ackIds":[]}"#, #"{"ackIds":[5]}"#, "not json"] {
            #expect(Self.post(service, Self.acknowledgePath, body, token: token).status == 400, "\(body)")
        }
    }

    @Test("publish: generated messageIds unique, given ones kept; json base64-encoded for the caller; bad requests refused")
    func publish() async throws {
        let (service, key) = try await Self.service()
        let token = try Self.token(service, key, scope: Self.bothScopes)
        let generated = (0..<3).compactMap { _ in Self.publish(service, #"{"data":"e30="},{"data":"e30="}"#).body?["messageIds"]?.arrayValue }.flatMap { $0 }
        #expect(generated.count == 6 && Set(generated).count == 6)
        let answer = try Self.pull(service, token: token, max: 10)
        #expect(answer.messages.map { JSONValue.string($0.messageID) } == generated)
        #expect(Set(answer.messages.map(\.ackID)).count == 6)
        // Data is passed on as given, even when it is not base64 (for the daemon's refusal).
        #expect(Self.publish(service, #"{"data":"not base64!"}"#).status == 200)
        let raw = Self.post(service, Self.pullPath, #"{"maxMessages":1}"#, token: token)
        #expect(raw.body?["receivedMessages"]?.arrayValue?.first?["message"]?["data"] == .string("not base64!"))
        for (messages, subscription) in [
            (#"{"data":"e30=","json":{}}"#, Self.subscription), ("{}", Self.subscription), (#"{"json":[1]}"#, Self.subscription),
            (#"{"data":"e30=","messageId":7}"#, Self.subscription), (#"{"data":"e30=","attributes":[]}"#, Self.subscription),
            (#"{"data":"e30="}"#, "play-rtdn"), (#"{"data":"e30="}"#, "projects//subscriptions/s"),
        ] {
            #expect(Self.publish(service, messages, subscription: subscription).status == 400, "\(messages) to \(subscription)")
        }
    }

    @Test("stats: pulls, deliveries and acknowledgements per messageId, under the pubsub endpoint; in /_mock/stats, read back, and reset")
    func stats() async throws {
        let (service, key) = try await Self.service()
        let token = try Self.token(service, key, scope: Self.bothScopes)
        #expect(Self.publish(service, #"{"data":"e30=","messageId":"a"},{"data":"e30=","messageId":"b"}"#).status == 200)
        let answer = try Self.pull(service, token: token, max: 10)
        _ = try Self.pull(service, token: token, max: 10)
        #expect(Self.acknowledge(service, token: token, [try #require(answer.messages.first?.ackID)]).status == 200)
        let stats = service.stats
        #expect(stats.pubsubPulls == 2)
        #expect(stats.pubsubDelivered == ["a": 1, "b": 1])
        #expect(stats.pubsubAcknowledged == ["a": 1])
        #expect(stats.byEndpoint["pubsub"] == 3 && stats.byEndpoint["googleplay-token"] == 1)
        #expect(MockStats(json: stats.json) == stats)
        let served = try JSONParser().parse(service.handle(ServerRequest(method: "GET", path: "/_mock/stats", query: "", headers: [], body: [])).body)
        #expect(served["pubsub_pulls"] == .integer(2))
        #expect(served["pubsub_delivered"] == .object(JSONObject(["a": .integer(1), "b": .integer(1)])))
        #expect(served["pubsub_acknowledged"] == .object(JSONObject(["a": .integer(1)])))
        #expect(MockStats(json: served) == stats)
        _ = Self.post(service, "/_mock/reset-stats", "")
        #expect(service.stats.pubsubPulls == 0 && service.stats.pubsubDelivered.isEmpty && service.stats.pubsubAcknowledged.isEmpty)
    }

    @Test("the mock's faults apply to the pubsub endpoint (here a 500 rate on /pubsub/), never to /_mock/pubsub/")
    func faults() async throws {
        let (service, key) = try await Self.service()
        let token = try Self.token(service, key, scope: Self.bothScopes)
        var faults = MockFaults()
        try faults.apply(JSONObject(["status_rates": .object(JSONObject(["500": .number("1")])), "path_prefix": .string("/pubsub/")]))
        service.setFaults(faults)
        #expect(Self.publish(service, #"{"data":"e30="}"#).status == 200)
        #expect(Self.post(service, Self.pullPath, #"{"maxMessages":1}"#, token: token).status == 500)
        #expect(service.stats.pubsubPulls == 0 && service.stats.byEndpoint["pubsub"] == 1)
        service.setFaults(MockFaults())
        #expect(try Self.pull(service, token: token, max: 1).messages.count == 1)
    }

    @Test("--pubsub-ack-deadline: needs --googleplay-key and a number of seconds; a key file loads with the deadline given (10 s by default)")
    func commandLine() async throws {
        #expect(MockMain.run(["--pubsub-ack-deadline", "1"]) == 64)
        #expect(MockMain.run(["--pubsub-ack-deadline", "soon"]) == 64)
        #expect(MockMain.run(["--pubsub-ack-deadline", "0"]) == 64)
        #expect(MockMain.run(["--googleplay-key", "/nonexistent/key.json", "--pubsub-ack-deadline", "1"]) == 64)
        _ = try await Self.key()
        let pem = try #require(Self.generatedKey.withLock { $0 })
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("mock-pubsub-key-\(UUID().uuidString.prefix(8)).json").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let file = JSONWriter.bytes(.object(JSONObject([
            "type": .string("service_account"), "client_email": .string("reconciled@reconcile-test.iam.gserviceaccount.com"),
            "private_key": .string(pem), "token_uri": .string(Self.audience),
        ])))
        #expect(FileManager.default.createFile(atPath: path, contents: Data(file)))
        #expect(try MockGooglePlay.load(keyFile: path, pubSubAckDeadline: 1.5).pubSub.ackDeadline == 1.5)
        #expect(try MockGooglePlay.load(keyFile: path).pubSub.ackDeadline == 10)
    }
}
