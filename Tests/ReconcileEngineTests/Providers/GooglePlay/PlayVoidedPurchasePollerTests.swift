import Foundation
import ReconcileCore
import ReconcileCrypto
import ReconcileFoundation
import ReconcileStore
import ReconcileSQLite
import Synchronization
import Testing
import TestSupport
@testable import ReconcileEngine

/// Reading Google Play's voided purchases (DESIGN §5a) against a scripted transport and a real
/// SQLite store: paging by `nextPageToken`, the checkpoint moved only after every page was
/// committed, a failure mid-way leaving it, the permission a 403 needs named, and the packages a
/// push asks to confirm.
@Suite("Google Play voided purchase poller: paging, checkpoint, pushes")
struct PlayVoidedPurchasePollerTests {
    static let playURL = "https://play.example"
    static let tokenURL = "https://oauth2.example/token"
    static let package = "com.example.game"
    static let now = Date(timeIntervalSince1970: 1_800_000_000)
    static let json = [HTTPHeader("Content-Type", "application/json")]

    static func url(_ package: String = package, start: Date, token: String? = nil) -> String {
        "\(playURL)/androidpublisher/v3/applications/\(package)/purchases/voidedpurchases?startTime=\(Int64(start.timeIntervalSince1970 * 1000))&maxResults=1000"
            + (token.map { "&token=\($0)" } ?? "")
    }

    static func page(_ tokens: [String], next: String? = nil) -> HTTPExchangeResult {
        let items = tokens.map { #"{"kind":"androidpublisher#voidedPurchase","purchaseToken":"\#($0)","orderId":"GPA.\#($0)","voidedTimeMillis":"1799999000000","voidedSource":"0","voidedReason":"1"}"# }
        let pagination = next.map { #","tokenPagination":{"nextPageToken":"\#($0)"}"# } ?? ""
        return answer(200, #"{"voidedPurchases":[\#(items.joined(separator: ","))]\#(pagination)}"#, headers: json)
    }

    struct Fixture {
        var directory: TemporaryDirectory
        var store: SQLiteOrderStore
        var transport: ScriptedTransport
        var log: CapturingLogHandler
        var gate: RecordingGate
        var poller: PlayVoidedPurchasePoller
    }

    func fixture(_ script: [String: [HTTPExchangeResult]], packages: [String] = [package]) async throws -> Fixture {
        let directory = TemporaryDirectory(prefix: "play-poller")
        let store = try SQLiteOrderStore(path: directory.file("orders.db"), mode: .owner)
        var answers = script
        answers[Self.tokenURL] = [answer(200, #"{"access_token":"ya29.test","expires_in":3600,"token_type":"Bearer"}"#, headers: Self.json)]
        let transport = ScriptedTransport(answers)
        let account = try GoogleServiceAccount(json: Array(try await TestServiceAccount.make().json.utf8))
        let tokens = PlayAccessTokenCache(account: account, endpoint: EndpointSettings(url: Self.tokenURL, timeout: .seconds(5)), transport: transport)
        let verifier = GooglePlayVerifier(
            api: EndpointSettings(url: Self.playURL, timeout: .seconds(5)), packageName: Self.package, allowTestPurchases: false, tokens: tokens,
            transport: transport)
        let log = CapturingLogHandler()
        let gate = RecordingGate()
        let poller = PlayVoidedPurchasePoller(
            settings: .init(interval: .seconds(3600), packageNames: packages, verifier: verifier), store: store, gate: gate,
            logger: Logger(handler: log, minimumLevel: .debug), clock: ManualClock())
        return Fixture(directory: directory, store: store, transport: transport, log: log, gate: gate, poller: poller)
    }

    func voidedRequests(_ f: Fixture) -> [String] {
        f.transport.requests.map(\.url).filter { $0.contains("voidedpurchases") }
    }

    @Test("pages by nextPageToken; every record kept once by token digest and voided time, never the token; checkpoint a minute before the poll; the next poll an hour before it")
    func paging() async throws {
        let start = Self.now - 86_400
        let f = try await fixture([
            Self.url(start: start): [Self.page(["t1", "t2"], next: "p/2")],
            Self.url(start: start, token: "p%2F2"): [Self.page(["t3"])],
        ])
        let summary = try #require(await f.poller.pollNow(now: Self.now).first)
        #expect(summary.completed && summary.pages == 2 && summary.taken == 3 && summary.package == Self.package)
        #expect(voidedRequests(f) == [Self.url(start: start), Self.url(start: start, token: "p%2F2")])
        #expect(f.transport.requests.filter { $0.url.contains("voided") }.allSatisfy { $0.headers.contains { $0.name == "Authorization" && $0.value == "Bearer ya29.test" } })
        let stored = try f.store.notifications(unmatchedOnly: false, limit: 10)
        #expect(stored.count == 3 && stored.allSatisfy { $0.outcome == "unmatched" && $0.notification.type == "VOIDED_PURCHASE" })
        #expect(stored.contains { $0.notification.notificationID == "voided:\(SHA256.hexDigest(Array("t1".utf8))):1799999000000" })
        #expect(try f.store.checkpoint("googleplay.\(Self.package)") == Self.now - 60)

        let later = Self.now + 3600
        f.transport.answers.withLock { $0[Self.url(start: Self.now - 60 - 3600)] = [Self.page(["t3", "t4"])] }
        let second = try #require(await f.poller.pollNow(now: later).first)
        #expect(second.completed && second.taken == 1 && second.duplicates == 1, "\(second)")
        #expect(try f.store.checkpoint("googleplay.\(Self.package)") == later - 60)
        for record in f.log.records {
            #expect(!record.message.contains("\"t1\"") && !record.fields.map(\.1).contains("t1"), "\(record.message)")
        }
    }

    @Test("a 500 on the second page keeps the first page's records and leaves the checkpoint; a 403 names the permission voided purchases need")
    func failures() async throws {
        let start = Self.now - 86_400
        let f = try await fixture([
            Self.url(start: start): [Self.page(["t1"], next: "p2"), answer(403, #"{"error":{"code":403,"message":"denied","errors":[{"reason":"permissionDenied"}]}}"#, headers: Self.json)],
            Self.url(start: start, token: "p2"): [answer(500, #"{"error":{"code":500,"message":"backend"}}"#, headers: Self.json)],
        ])
        let summary = try #require(await f.poller.pollNow(now: Self.now).first)
        #expect(!summary.completed && summary.pages == 1 && summary.taken == 1 && summary.stoppedBecause?.hasPrefix("play_http_500") == true, "\(summary)")
        #expect(try f.store.checkpoint("googleplay.\(Self.package)") == nil)
        let denied = try #require(await f.poller.pollNow(now: Self.now).first)
        #expect(!denied.completed && denied.stoppedBecause?.contains("View financial data") == true, "\(denied)")
        #expect(f.log.records.contains { $0.level == .warning && $0.message.contains("View financial data") })
    }

    @Test("the packages read are exactly PackageName='s, in its order: 16 stored orders naming junk packages (an older version stored them) crowd none out and are never read; a push's confirmation reads the same (issue 23 item 3)")
    func packages() async throws {
        let start = Self.now - 86_400
        let configured = [Self.package, "com.example.paid"]
        var script: [String: [HTTPExchangeResult]] = [:]
        for package in configured + (0..<16).map({ String(format: "a.junk%02d", $0) }) {
            script[Self.url(package, start: start)] = [Self.page([])]
            script[Self.url(package, start: Self.now - 60 - 3600)] = [Self.page([])]
        }
        let f = try await fixture(script, packages: configured)
        var candidates: [IngestCandidate] = []
        for index in 0..<16 {
            let text = OrderFixtures.orderJSON(
                "J\(index)", product: "gems", receipt: nil, extra: #""purchase_token":"tok-J\#(index)","package_name":"a.junk\#(String(format: "%02d", index))""#)
            let bytes = Array(text.utf8)
            candidates.append(IngestCandidate(submission: try OrderFileParser().parse(bytes), raw: bytes, contentHash: "J\(index)", fileName: "J\(index).json"))
        }
        // A real order of the second app, which an older version read only if the junk left room.
        let paid = Array(OrderFixtures.orderJSON("R1", product: "gems", receipt: nil, extra: #""purchase_token":"tok-R1","package_name":"com.example.paid""#).utf8)
        candidates.append(IngestCandidate(submission: try OrderFileParser().parse(paid), raw: paid, contentHash: "R1", fileName: "R1.json"))
        // As an older version stored them: no package check.
        _ = try f.store.ingest(candidates, verifiers: ConfiguredVerifiers(kind: nil, googlePlay: true), now: Self.now)
        let polled = await f.poller.pollNow(now: Self.now)
        #expect(polled.map(\.package) == configured && polled.allSatisfy(\.completed), "\(polled)")
        #expect(voidedRequests(f) == configured.map { Self.url($0, start: start) })
        f.poller.confirm()
        let confirmed = await f.poller.pollNow(now: Self.now, confirming: true)
        #expect(confirmed.map(\.package) == configured && confirmed.allSatisfy(\.completed), "\(confirmed)")
        #expect(!voidedRequests(f).contains { $0.contains("/applications/a.junk") }, "a package only an order names was read")
    }

    @Test("Google refusing the list (403, 404) never opens [GooglePlay]'s circuit: verifications go on")
    func refusalsAreNotTheEndpoints() async throws {
        let start = Self.now - 86_400
        let f = try await fixture([
            Self.url(start: start): [answer(404, #"{"error":{"code":404,"message":"No application was found for the given package name.","errors":[{"reason":"applicationNotFound"}]}}"#, headers: Self.json)],
        ])
        let summary = try #require(await f.poller.pollNow(now: Self.now).first)
        #expect(!summary.completed && summary.stoppedBecause?.hasPrefix("play_404") == true, "\(summary)")
        #expect(!f.gate.observations.isEmpty && f.gate.observations.allSatisfy { if case .healthy = $0 { true } else { false } }, "\(f.gate.observations)")
    }

    @Test("a checkpoint ahead of the clock counts as now; a page token named twice ends the read, the checkpoint left")
    func checkpointEdges() async throws {
        let ahead = Self.now + 7200
        let f = try await fixture([
            Self.url(start: Self.now - 3600): [Self.page(["t1"], next: "again")],
            Self.url(start: Self.now - 3600, token: "again"): [Self.page(["t2"], next: "again")],
        ])
        try f.store.advanceCheckpoint("googleplay.\(Self.package)", to: ahead, now: Self.now)
        let summary = try #require(await f.poller.pollNow(now: Self.now).first)
        #expect(voidedRequests(f).first == Self.url(start: Self.now - 3600), "\(voidedRequests(f))")
        #expect(!summary.completed && summary.stoppedBecause == "repeated_page_token" && summary.pages == 2 && summary.taken == 2, "\(summary)")
        #expect(try f.store.checkpoint("googleplay.\(Self.package)") == ahead)
    }
}
