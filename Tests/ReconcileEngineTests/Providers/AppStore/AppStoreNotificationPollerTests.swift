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

/// Polling Get Notification History (DESIGN §5a) against a scripted transport and a real SQLite
/// store: paging with the same body and `paginationToken`, the checkpoint moved only after every
/// page was committed, a 500 mid-way leaving it, an invalid payload skipped and logged by its
/// check's name (never its contents).
@Suite("App Store notification poller: paging, checkpoint, failures")
struct AppStoreNotificationPollerTests {
    static let base = "https://api.example"
    static let url = base + "/inApps/v1/notifications/history"
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    /// Made once (openssl is slow).
    static let key = Mutex<ES256PrivateKey?>(nil)

    static func tokens() async throws -> AppStoreTokenCache {
        if key.withLock({ $0 }) == nil {
            let made = try ES256PrivateKey(pem: try await TestCertificateChain.newKeyPEM())
            key.withLock { $0 = $0 ?? made }
        }
        return AppStoreTokenCache(
            key: key.withLock { $0! }, keyID: "KEY1234567", issuerID: "57246542-96fe-1a63-e053-0824d011072a", bundleID: "com.example.app")
    }

    /// The test's "verification": `id:TYPE:transaction` is a valid notification, anything that
    /// starts with `forged` fails as a bad signature would.
    static let verify: @Sendable (String, Date) throws(OrderFileProblem) -> StoreNotification = { payload, _ throws(OrderFileProblem) in
        let parts = payload.split(separator: ":").map(String.init)
        guard parts.count == 3, !payload.hasPrefix("forged") else {
            throw OrderFileProblem(.badSignature, "the notification does not verify: the signature does not match")
        }
        return StoreNotification(source: .appStore, notificationID: parts[0], type: parts[1], transactionID: parts[2], via: .poll)
    }

    static func page(_ payloads: [String], token: String? = nil) -> HTTPExchangeResult {
        let items = payloads.map { #"{"signedPayload":"\#($0)","sendAttempts":[]}"# }.joined(separator: ",")
        let more = token.map { #","hasMore":true,"paginationToken":"\#($0)""# } ?? #","hasMore":false"#
        return answer(200, #"{"notificationHistory":[\#(items)]\#(more)}"#, headers: [HTTPHeader("Content-Type", "application/json")])
    }

    struct Fixture {
        var directory: TemporaryDirectory
        var store: SQLiteOrderStore
        var transport: ScriptedTransport
        var gate: RecordingGate
        var log: CapturingLogHandler
        var poller: AppStoreNotificationPoller
    }

    func fixture(_ script: [String: [HTTPExchangeResult]], gateOpen: Bool = true) async throws -> Fixture {
        let directory = TemporaryDirectory(prefix: "poller")
        let store = try SQLiteOrderStore(path: directory.file("orders.db"), mode: .owner)
        let transport = ScriptedTransport(script)
        let gate = RecordingGate(open: gateOpen)
        let log = CapturingLogHandler()
        let settings = AppStoreNotificationPoller.Settings(
            interval: .seconds(3600), environments: [.init(endpoint: .production, settings: EndpointSettings(url: Self.base, timeout: .seconds(1)))],
            tokens: try await Self.tokens(), verify: Self.verify)
        let poller = AppStoreNotificationPoller(
            settings: settings, store: store, transport: transport, gate: gate, logger: Logger(handler: log, minimumLevel: .debug), clock: ManualClock())
        return Fixture(directory: directory, store: store, transport: transport, gate: gate, log: log, poller: poller)
    }

    @Test("pages while hasMore with paginationToken and the same body; every valid one taken in by the store via poll; checkpoint = the poll's end")
    func paging() async throws {
        let f = try await fixture([
            Self.url: [Self.page(["n-1:TEST:1", "n-2:TEST:2"], token: "tok/1")],
            Self.url + "?paginationToken=tok%2F1": [Self.page(["n-3:TEST:3"])],
        ])
        let summary = try #require(await f.poller.pollNow(now: Self.now).first)
        #expect(summary.completed && summary.pages == 2 && summary.taken == 3 && summary.invalid == 0)
        let requests = f.transport.requests
        #expect(requests.map(\.url) == [Self.url, Self.url + "?paginationToken=tok%2F1"])
        #expect(requests.allSatisfy { $0.method == "POST" && $0.headers.contains { $0.name == "Authorization" && $0.value.hasPrefix("Bearer ") } })
        // First poll: the last 24 hours, to now; the same body on every page.
        let body = String(decoding: requests[0].body, as: UTF8.self)
        #expect(body.contains(#""startDate":\#(Int64(Self.now.timeIntervalSince1970 * 1000) - 86_400_000)"#), "\(body)")
        #expect(body.contains(#""endDate":\#(Int64(Self.now.timeIntervalSince1970 * 1000))"#), "\(body)")
        #expect(requests[1].body == requests[0].body)
        let stored = try f.store.notifications(unmatchedOnly: false, limit: 10)
        #expect(Set(stored.map(\.notification.notificationID)) == ["n-1", "n-2", "n-3"])
        #expect(stored.allSatisfy { $0.notification.via == .poll })
        #expect(try f.store.checkpoint("appstore.production") == Self.now)
        #expect(f.gate.observations.count == 2, "every exchange reported to the gate")

        // The next poll starts an hour (the overlap) before the checkpoint; what it sees again is a duplicate.
        let later = Self.now + 3600
        f.transport.answers.withLock { $0 = [Self.url: [Self.page(["n-3:TEST:3", "n-4:TEST:4"])]] }
        let second = try #require(await f.poller.pollNow(now: later).first)
        #expect(second.completed && second.taken == 1 && second.duplicates == 1)
        let secondBody = String(decoding: f.transport.requests[2].body, as: UTF8.self)
        #expect(secondBody.contains(#""startDate":\#(Int64(Self.now.timeIntervalSince1970 * 1000) - 3_600_000)"#), "\(secondBody)")
        #expect(try f.store.checkpoint("appstore.production") == later)
    }

    @Test("a 500 on the second page: the first page's notifications are kept, the checkpoint is not moved; the next poll redoes the range")
    func failureMidway() async throws {
        let f = try await fixture([
            Self.url: [Self.page(["n-1:TEST:1"], token: "p2")],
            Self.url + "?paginationToken=p2": [answer(500, #"{"errorCode":5000001,"errorMessage":"retry"}"#, headers: [HTTPHeader("Content-Type", "application/json")])],
        ])
        let summary = try #require(await f.poller.pollNow(now: Self.now).first)
        #expect(!summary.completed && summary.pages == 1 && summary.taken == 1 && summary.stoppedBecause != nil)
        #expect(try f.store.checkpoint("appstore.production") == nil)
        #expect(try f.store.notifications(unmatchedOnly: false, limit: 10).map(\.notification.notificationID) == ["n-1"])
        #expect(f.gate.observations.contains { if case .failure = $0 { true } else { false } }, "the 5xx reported as the endpoint's failure")
        #expect(f.log.records.contains { $0.level == .warning && $0.message.contains("retried at the next poll") })

        // Retried: from the same start (no checkpoint: the last 24 hours), to the end.
        f.transport.answers.withLock { $0 = [Self.url: [Self.page(["n-1:TEST:1", "n-2:TEST:2"])]] }
        let retried = try #require(await f.poller.pollNow(now: Self.now + 60).first)
        #expect(retried.completed && retried.taken == 1 && retried.duplicates == 1)
        #expect(try f.store.checkpoint("appstore.production") == Self.now + 60)
    }

    @Test("a 429 or an open circuit ends the poll without moving the checkpoint")
    func rateLimitedAndCircuit() async throws {
        let limited = try await fixture([Self.url: [answer(429, #"{"errorCode":4290000,"errorMessage":"Rate limit exceeded."}"#, headers: [HTTPHeader("Content-Type", "application/json")])]])
        let summary = try #require(await limited.poller.pollNow(now: Self.now).first)
        #expect(!summary.completed && summary.pages == 0)
        #expect(try limited.store.checkpoint("appstore.production") == nil)

        let closed = try await fixture([Self.url: [Self.page(["n-1:TEST:1"])]], gateOpen: false)
        let refused = try #require(await closed.poller.pollNow(now: Self.now).first)
        #expect(!refused.completed && refused.stoppedBecause == "production_circuit_open")
        #expect(closed.transport.requests.isEmpty)
        #expect(try closed.store.checkpoint("appstore.production") == nil)
    }

    @Test("an invalid payload is skipped, counted and logged at warning with its check's name, never its contents; the rest is taken in; the checkpoint stays (it is read again)")
    func invalidPayload() async throws {
        let forged = "forged.eyJzZWNyZXQiOiJ4In0.c2ln"
        let f = try await fixture([Self.url: [Self.page(["n-1:TEST:1", forged, "n-2:TEST:2"])]])
        let summary = try #require(await f.poller.pollNow(now: Self.now).first)
        #expect(!summary.completed && summary.taken == 2 && summary.invalid == 1 && summary.stoppedBecause == "invalid_notifications")
        let warnings = f.log.records.filter { $0.level == .warning }
        #expect(warnings.count == 2 && warnings.last?.message.contains("the checkpoint stays") == true)
        #expect(warnings.first?.message.contains("bad_signature") == true)
        #expect(warnings.first?.fields.contains { $0.0 == .reason && $0.1 == "bad_signature" } == true)
        #expect(!f.log.records.contains { $0.message.contains(forged) || $0.fields.contains { $0.1.contains(forged) } }, "no JWS in any log line")
        #expect(!f.log.records.contains { $0.message.contains("Bearer") }, "no token in any log line")
        #expect(try f.store.checkpoint("appstore.production") == nil, "the checkpoint moved past a notification that did not verify")
    }

    @Test("a payload that does not verify and claims a type the daemon has no use for (a RENEWAL_EXTENSION summary) is skipped without holding the checkpoint; one claiming REFUND still holds it (issue 23 item 11)")
    func unusedTypeDoesNotHoldTheCheckpoint() async throws {
        func claimed(_ type: String) -> String {
            "eyJhbGciOiJFUzI1NiJ9." + Base64URL.encode(Array(#"{"notificationType":"\#(type)","subtype":"SUMMARY","summary":{}}"#.utf8)) + ".c2ln"
        }
        let f = try await fixture([Self.url: [Self.page(["n-1:REFUND:1", claimed("RENEWAL_EXTENSION"), claimed("EXTERNAL_PURCHASE_TOKEN")])]])
        let summary = try #require(await f.poller.pollNow(now: Self.now).first)
        #expect(summary.completed && summary.taken == 1 && summary.invalid == 0 && summary.ignored == 2, "\(summary)")
        #expect(try f.store.checkpoint("appstore.production") == Self.now, "the checkpoint was held for a type the daemon has no use for")
        #expect(f.log.records.contains { $0.level == .warning && $0.message.contains("a RENEWAL_EXTENSION notification does not verify") })

        let later = Self.now + 3600
        f.transport.answers.withLock { $0 = [Self.url: [Self.page([claimed("REFUND"), claimed("renewal extension")])]] }
        let second = try #require(await f.poller.pollNow(now: later).first)
        #expect(!second.completed && second.invalid == 2 && second.ignored == 0 && second.stoppedBecause == "invalid_notifications", "\(second)")
        #expect(try f.store.checkpoint("appstore.production") == Self.now)
    }

    @Test("a store that cannot commit a page: the poll ends, the checkpoint stays")
    func storeFailure() async throws {
        let f = try await fixture([Self.url: [Self.page(["n-1:TEST:1"])]])
        let failing = FailingIngest(store: f.store)
        let settings = AppStoreNotificationPoller.Settings(
            interval: .seconds(3600), environments: [.init(endpoint: .production, settings: EndpointSettings(url: Self.base, timeout: .seconds(1)))],
            tokens: try await Self.tokens(), verify: Self.verify)
        let poller = AppStoreNotificationPoller(settings: settings, store: failing, transport: f.transport, gate: f.gate, logger: Logger(handler: f.log), clock: ManualClock())
        let summary = try #require(await poller.pollNow(now: Self.now).first)
        #expect(!summary.completed && summary.stoppedBecause == "store_unavailable")
        #expect(try f.store.checkpoint("appstore.production") == nil)
    }
}

extension AppStoreNotificationPollerTests {
    @Test("nodes sharing a store take turns: the second node skips while the first's turn lasts (90 % of Poll=), then polls")
    func sharedTurns() async throws {
        let f = try await fixture([Self.url: [Self.page(["n-1:TEST:1"])]])
        var settings = AppStoreNotificationPoller.Settings(
            interval: .seconds(100), environments: [.init(endpoint: .production, settings: EndpointSettings(url: Self.base, timeout: .seconds(1)))],
            tokens: try await Self.tokens(), verify: Self.verify)
        settings.sharedTurns = true
        let nodeA = AppStoreNotificationPoller(settings: settings, store: f.store, transport: f.transport, gate: f.gate, logger: Logger(handler: f.log), clock: ManualClock())
        let nodeB = AppStoreNotificationPoller(settings: settings, store: f.store, transport: f.transport, gate: f.gate, logger: Logger(handler: f.log), clock: ManualClock())
        #expect(try #require(await nodeA.pollNow(now: Self.now).first).completed)
        let skipped = try #require(await nodeB.pollNow(now: Self.now + 50).first)
        #expect(!skipped.completed && skipped.stoppedBecause == "another_node_polls")
        #expect(f.transport.requests.count == 1, "the second node sent nothing")
        #expect(try #require(await nodeB.pollNow(now: Self.now + 90).first).completed, "the turn ended at 90 s")
        #expect(f.transport.requests.count == 2)
        #expect(try f.store.checkpoint("appstore.production") == Self.now + 90)
    }
}

/// A store whose notification commits fail (disk full); checkpoints go to the real one.
final class FailingIngest: OrderIngesting, CheckpointStore, SerializedStore {
    struct Full: Error, CustomStringConvertible {
        var description: String { "database or disk is full" }
    }

    let store: SQLiteOrderStore

    init(store: SQLiteOrderStore) {
        self.store = store
    }

    func ingest(_ candidates: [IngestCandidate], verifiers: ConfiguredVerifiers, now: Date) throws -> [IngestOutcome] { throw Full() }
    func ingestNotifications(
        _ notifications: [StoreNotification], consumption: ConsumptionPolicy, discovery: DiscoverySettings, now: Date
    ) throws -> [NotificationIngestOutcome] { throw Full() }
    func checkpoint(_ name: String) throws -> Date? { try store.checkpoint(name) }
    func advanceCheckpoint(_ name: String, to value: Date, now: Date) throws { try store.advanceCheckpoint(name, to: value, now: now) }
    func takeTurn(_ name: String, until: Date, now: Date) throws -> Bool { try store.takeTurn(name, until: until, now: now) }
    var executor: UnownedSerialExecutor { store.executor }
    func writing<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T { try await store.writing(body) }
    func reading<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T { try await store.reading(body) }
}
