import Foundation
import ReconcileSystem
import ReconcileCore
import ReconcileCrypto
import Testing
import TestSupport
@testable import ReconcileEngine
@testable import ReconcileStore
@testable import ReconcileSQLite
import ReconcileFoundation

/// The outbox in the scheduler with more than one sender (DESIGN §5a, issue 17): Google Play's
/// follow-ups in `[GooglePlay]`'s pool, revocation notices in `[Verifier]`'s, each admitted by its
/// own endpoint's circuit and bucket; a revocation notice without `[Revocation]` skipped.
@Suite("Scheduler: outbox senders")
struct SchedulerOutboxTests {
    static let playURL = "https://play.test"
    static let tokenURL = "https://oauth2.test/token"
    static let revocationURL = "https://backend.example/iap/revoke"
    static let package = "com.example.app"
    static let notice = #"{"event":"revoked","order_id":"P1","product_id":"gems","transaction_id":"GPA.P1","store":"google_play","quantity":1,"reason":"refunded","revoked_at":"2026-11-30T05:27:06Z","environment":"Production","user_id":null,"application_username":null}"#
    let directory = TemporaryDirectory(prefix: "scheduler-outbox")
    let owner = "test:1:x"

    static let json = [HTTPHeader("Content-Type", "application/json")]

    /// Google answers: a token, the purchase not acknowledged yet, the acknowledgement taken.
    static func playAnswers(_ orderID: String) -> [String: [HTTPExchangeResult]] {
        let path = GooglePlayVerifier.purchasePath(package: package, product: "gems", token: "tok-\(orderID)")
        return [
            tokenURL: [answer(200, #"{"access_token":"ya29.test","expires_in":3600,"token_type":"Bearer"}"#, headers: json)],
            playURL + path: [answer(200, #"{"purchaseState":0,"acknowledgementState":0,"consumptionState":0,"orderId":"GPA.\#(orderID)"}"#, headers: json)],
            playURL + path + ":acknowledge": [answer(200, "{}", headers: json)],
        ]
    }

    func settings(threshold: Int = 10, cooldown: Duration = .seconds(60)) -> Scheduler.Settings {
        var retry = Configuration.RetrySettings()
        retry.initialDelay = .milliseconds(10)
        retry.maxDelay = .milliseconds(20)
        retry.jitter = .none
        var settings = Scheduler.Settings(
            resolver: AttemptResolver(policy: RetryPolicy(retry), deliveryConfigured: false), maxInFlight: 2,
            maxRate: nil, burst: 10, circuitThreshold: threshold, circuitCooldown: cooldown, circuitMaxCooldown: cooldown,
            requestTimeout: .seconds(5))
        settings.googlePlay = Scheduler.PoolLimits(
            maxInFlight: 3, maxRate: nil, burst: 10, circuitThreshold: 10, circuitCooldown: .seconds(1), circuitMaxCooldown: .seconds(5))
        return settings
    }

    func senders(_ transport: ScriptedTransport, revocation: Bool) async throws -> Scheduler.Senders {
        var senders = Scheduler.Senders(verifier: nil)
        let account = try GoogleServiceAccount(json: Array(try await TestServiceAccount.make().json.utf8))
        let tokens = PlayAccessTokenCache(account: account, endpoint: EndpointSettings(url: Self.tokenURL, timeout: .seconds(5)), transport: transport)
        senders.googlePlay = GooglePlayVerifier(
            api: EndpointSettings(url: Self.playURL, timeout: .seconds(5)), packageName: Self.package, allowTestPurchases: false,
            tokens: tokens, transport: transport)
        if revocation {
            senders.revocation = RevocationSender(
                endpoint: EndpointSettings(url: Self.revocationURL, timeout: .seconds(5), bearerToken: "t0ken"), transport: transport)
        }
        return senders
    }

    /// A finished Google Play order that owes Google its acknowledgement, and a revocation notice
    /// recorded for it since (written the way the recording rule's plan is: a row in `outbox`).
    func store() throws -> SQLiteOrderStore {
        let store = try SQLiteOrderStore(path: directory.file("orders.db"), mode: .owner)
        let now = Date()
        let text = OrderFixtures.orderJSON(
            "P1", product: "gems", receipt: nil, extra: #""purchase_token":"tok-P1","package_name":"\#(Self.package)""#)
        let bytes = Array(text.utf8)
        _ = try store.ingest(
            [IngestCandidate(submission: try OrderFileParser().parse(bytes), raw: bytes, contentHash: "P1", fileName: "P1.json")],
            verifiers: ConfiguredVerifiers(kind: nil, googlePlay: true), now: now)
        let claimed = try #require(try store.claimDue(.verifyPlay, now: now, limit: 1, owner: owner, leaseUntil: now + 120, charge: true).first)
        let grant = Grant(
            transactionID: "GPA.P1", productID: "gems", quantity: 1, purchaseDateMilliseconds: Int64(now.timeIntervalSince1970 * 1000),
            environment: "Production", acknowledgementState: 0, consumptionState: 0)
        _ = try store.complete(
            [AttemptCompletion(
                order: claimed, records: [], resolution: .verified(grant, finishes: true, finishedBy: .verifier), charged: true,
                playFollowUp: PlayFollowUp(acknowledge: true, consume: false, packageName: Self.package))],
            owner: owner, now: now)
        try store.withConnection { connection in
            guard let reference = try connection.scalar("SELECT id FROM orders WHERE order_id = 'P1'") else { throw StoreTestError() }
            let action = OutboxAction(
                orderID: "P1", kind: .revocationNotice, endpoint: .revocation, idempotencyKey: "P1:revoked:1", payload: Self.notice,
                nextAttemptAt: now, createdAt: now, updatedAt: now, reason: .queued)
            let columns = OutboxColumns.insert
            try connection.run(
                "INSERT INTO outbox (\(columns.joined(separator: ", "))) VALUES (\(columns.map { _ in "?" }.joined(separator: ", ")))",
                OutboxColumns.insertValues(action, orderReference: reference).map(SQLiteValue.init))
        }
        #expect(try store.actions(orderID: "P1").map(\.kind) == [.playAcknowledge, .revocationNotice])
        return store
    }

    struct StoreTestError: Error {}

    func states(_ store: SQLiteOrderStore) -> [OutboxKind: OutboxAction] {
        Dictionary(uniqueKeysWithValues: ((try? store.actions(orderID: "P1")) ?? []).map { ($0.kind, $0) })
    }

    func run(_ scheduler: Scheduler, until condition: @escaping @Sendable () -> Bool) async -> Bool {
        let running = Task { await scheduler.run() }
        let reached = await eventually(timeout: .seconds(30), condition)
        await scheduler.stop(drainTimeout: .seconds(1))
        await running.value
        return reached
    }

    @Test("a turn plans both senders' actions, each in its own pool and admitted by its own endpoint; both are sent and done")
    func bothSenders() async throws {
        let store = try store()
        defer { store.close() }
        var answers = Self.playAnswers("P1")
        answers[Self.revocationURL] = [answer(200, "{}")]
        let transport = ScriptedTransport(answers)
        let scheduler = Scheduler(store: store, settings: settings(), senders: try await senders(transport, revocation: true), logger: .discarding, clock: SystemClock())

        let planned = try await scheduler.plannedActionClaims()
        #expect(planned.map(\.endpoint) == [.googlePlay, .revocation])
        #expect(planned.map(\.pool) == ["googlePlay", "main"])
        #expect(planned.allSatisfy { !$0.probe && $0.limit >= 1 && $0.hasSender })
        // Each took its share of its own pool only: MaxInFlight 3 (+ leased ahead) for Play, 2 for [Verifier].
        #expect(planned[0].limit <= 3 + 1 && planned[1].limit <= 2 + 1)

        let done = await run(scheduler) { [self] in states(store).values.allSatisfy { $0.state == .done } }
        #expect(done, "\(states(store).mapValues(\.state))")
        let revocations = transport.requests.filter { $0.url == Self.revocationURL }
        #expect(revocations.count == 1)
        #expect(revocations.first?.body == Array(Self.notice.utf8))
        #expect(revocations.first?.headers.first { $0.name == "Idempotency-Key" }?.value == "P1:revoked:1")
        #expect(transport.requests.contains { $0.url.hasSuffix(":acknowledge") })
        let notice = try #require(states(store)[.revocationNotice])
        #expect(notice.reason == .notified && notice.attempts == 1)
        let counters = await scheduler.counters
        #expect(counters.actions["done"] == 2)
    }

    @Test("an open revocation circuit holds back revocation notices only: Google's acknowledgement is sent meanwhile")
    func openRevocationCircuit() async throws {
        let store = try store()
        defer { store.close() }
        var answers = Self.playAnswers("P1")
        answers[Self.revocationURL] = [answer(200, "{}")]
        let transport = ScriptedTransport(answers)
        // One failure opens a [Verifier]-limited circuit for an hour (a minute ran out under
        // ThreadSanitizer on a loaded machine, and the notice went); Google Play's has its own.
        let scheduler = Scheduler(
            store: store, settings: settings(threshold: 1, cooldown: .seconds(3600)), senders: try await senders(transport, revocation: true),
            logger: .discarding, clock: SystemClock())
        await scheduler.report(.revocation, .failure(reason: Reason(.http(503))), retryAfter: nil, rateLimited: false)
        #expect(await eventually(timeout: .seconds(5)) {
            await scheduler.status().endpoints.first { $0.endpoint == .revocation }?.circuit == "open"
        })
        let planned = try await scheduler.plannedActionClaims()
        #expect(planned.map(\.endpoint) == [.googlePlay])

        let acknowledged = await run(scheduler) { [self] in states(store)[.playAcknowledge]?.state == .done }
        #expect(acknowledged)
        #expect(!transport.requests.contains { $0.url == Self.revocationURL }, "nothing went to an open circuit")
        let notice = try #require(states(store)[.revocationNotice])
        #expect(notice.state == .pending && notice.attempts == 0 && notice.lease == nil)
    }

    @Test("without [Revocation] the notice is skipped (no_revocation_url), not charged, nothing sent; Play's follow-up still goes")
    func withoutRevocationURL() async throws {
        let store = try store()
        defer { store.close() }
        let transport = ScriptedTransport(Self.playAnswers("P1"))
        let scheduler = Scheduler(store: store, settings: settings(), senders: try await senders(transport, revocation: false), logger: .discarding, clock: SystemClock())
        let planned = try await scheduler.plannedActionClaims()
        #expect(planned.map(\.endpoint) == [.googlePlay, .revocation] && planned.map(\.hasSender) == [true, false])

        let settled = await run(scheduler) { [self] in
            states(store)[.revocationNotice]?.state == .skipped && states(store)[.playAcknowledge]?.state == .done
        }
        #expect(settled, "\(states(store).mapValues(\.state))")
        let notice = try #require(states(store)[.revocationNotice])
        #expect(notice.reason == .noRevocationURL && notice.attempts == 0)
        #expect(!transport.requests.contains { $0.url == Self.revocationURL })
    }
}

extension Scheduler {
    /// What the outbox would lease now, for tests: endpoint, pool, limit, probe, whether a sender
    /// sends it.
    struct PlannedActionClaim: Sendable {
        var endpoint: VerificationEndpoint
        var pool: String
        var limit: Int
        var probe: Bool
        var hasSender: Bool
    }

    func plannedActionClaims() throws -> [PlannedActionClaim] {
        var slots: [Pool: Int] = [.main: freeSlots(.main), .googlePlay: freeSlots(.googlePlay)]
        var wakeTimes: [ContinuousClock.Instant] = []
        return try planActionClaims(slots: &slots, now: storeNow(), mono: clock.instant(), wakeTimes: &wakeTimes).map {
            PlannedActionClaim(endpoint: $0.endpoint, pool: "\($0.pool)", limit: $0.limit, probe: $0.probe, hasSender: $0.sender != nil)
        }
    }
}
