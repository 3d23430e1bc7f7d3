import Foundation
import ReconcileCore
import ReconcileCrypto
import ReconcileFoundation
import ReconcileSystem
import Synchronization

/// Pulls App Store Server Notifications with Get Notification History (DESIGN §5a;
/// `docs/protocols/app-store-notifications.md` §4), so that no public endpoint is needed and an outage
/// of the merchant's web handler leaves no gap.
///
/// Every `[Notifications] Poll=` (and once shortly after start), one poll at a time, per
/// environment: from the stored checkpoint minus ``Settings/overlap`` (the first time: the last
/// ``Settings/firstLookBack``; never further back than Apple keeps history) to now, page by page
/// while `hasMore`, with `paginationToken`. Each `signedPayload` is verified exactly as a
/// notification file is (``Settings/verify``, the spool's own function); one that does not is
/// counted and logged at `warning` with the check that failed, never with the JWS. Each page's
/// valid notifications are taken in by the store (once by `notificationUUID`, so one also dropped
/// as a file, or seen again through the overlap, changes nothing). The checkpoint advances only
/// after every page was committed: a 429, a 5xx, an open circuit or a store failure ends the
/// poll and the next one starts from the same checkpoint.
///
/// Requests take tokens from, and report every exchange to, the same ``EndpointGate`` as
/// `Kind=appstore`'s verifier (its rate limit and circuit). On a shared store (``Settings/sharedTurns``)
/// the nodes take turns: a node polls an environment only when it takes that environment's turn
/// (held for 90 % of `Poll=`) in the store, so one node polls per interval; should two ever
/// overlap, the notifications' unique id keeps it correct.
public final class AppStoreNotificationPoller: Service {
    public let name = "notification polling"

    /// One environment polled: its endpoint and checkpoint.
    public struct Environment: Sendable {
        public var endpoint: VerificationEndpoint
        /// The API's base URL (`https://api.storekit.apple.com`, or the mock's).
        public var settings: EndpointSettings
        /// The checkpoint's name in the store (`appstore.production`, `appstore.sandbox`).
        public var checkpoint: String
        /// How far back Apple keeps history: 180 days in production, 30 in the sandbox.
        public var history: Duration

        public init(endpoint: VerificationEndpoint, settings: EndpointSettings) {
            self.endpoint = endpoint
            self.settings = settings
            self.checkpoint = endpoint == .sandbox ? "appstore.sandbox" : "appstore.production"
            self.history = endpoint == .sandbox ? .seconds(30 * 86_400) : .seconds(180 * 86_400)
        }
    }

    /// What a poll needs; replaced as a whole by a reload.
    public struct Settings: Sendable {
        /// `Poll=`.
        public var interval: Duration
        public var environments: [Environment]
        /// Signs the bearer tokens (`Kind=appstore`'s key). Never logged.
        public var tokens: AppStoreTokenCache
        /// A `signedPayload` to the notification the store keeps, verified as a file's is.
        public var verify: @Sendable (String, Date) throws(OrderFileProblem) -> StoreNotification
        /// How far before the checkpoint each poll starts (Apple records a notification at its
        /// first send; one signed just before the last poll ended may appear late).
        public var overlap: Duration = .seconds(3600)
        /// The first poll's reach, with no checkpoint yet.
        public var firstLookBack: Duration = .seconds(86_400)
        /// The first poll comes this long after start (or after `Poll=`, if shorter).
        public var firstDelay: Duration = .seconds(10)
        /// A history longer than this is not read to the end (the checkpoint stays; a warning).
        public var maximumPages = 5_000
        public var maximumResponseSize = 1 << 20
        /// A store shared by several nodes: poll only after taking the environment's turn.
        public var sharedTurns = false
        /// How a `CONSUMPTION_REQUEST` is answered (`[Notifications] ConsumptionAnswer=`, …).
        public var consumption: ConsumptionPolicy = .off
        /// `[Discovery]`: what a `ONE_TIME_CHARGE`'s purchase does (DESIGN §5b).
        public var discovery = DiscoverySettings()

        public init(
            interval: Duration, environments: [Environment], tokens: AppStoreTokenCache,
            verify: @escaping @Sendable (String, Date) throws(OrderFileProblem) -> StoreNotification
        ) {
            self.interval = interval
            self.environments = environments
            self.tokens = tokens
            self.verify = verify
        }
    }

    /// What one environment's poll did.
    public struct Summary: Sendable, Hashable {
        public var endpoint: VerificationEndpoint
        public var pages = 0
        /// New notifications taken in.
        public var taken = 0
        /// Taken in before (by file, or by an earlier poll).
        public var duplicates = 0
        /// Payloads that did not verify, skipped; they hold the checkpoint.
        public var invalid = 0
        /// Payloads that did not verify and claim a type the daemon has no use for
        /// (``AppStoreNotification/typesInUse``): skipped, and they do not hold the checkpoint.
        public var ignored = 0
        /// Every page was read and committed, and the checkpoint moved to the poll's end.
        public var completed = false
        /// Why the poll ended early, in a few words (never a body or a secret).
        public var stoppedBecause: String?
    }

    /// The poll's store calls run on the store's own threads, never on the cooperative pool.
    let store: any OrderIngesting & CheckpointStore & SerializedStore
    let transport: any HTTPTransport
    let gate: any EndpointGate
    let logger: Logger
    /// Called after a page's notifications were committed (the scheduler sends the revocation
    /// notices they wrote).
    let onCommitted: @Sendable () -> Void
    private let settings: Mutex<Settings?>
    private let clock: any DaemonClock
    private let wake: WakeSignal
    private let stopped = Atomic<Bool>(false)

    /// `settings` `nil`: polling is off until a reload turns it on.
    public init(
        settings: Settings?, store: any OrderIngesting & CheckpointStore & SerializedStore, transport: any HTTPTransport, gate: any EndpointGate, logger: Logger,
        clock: any DaemonClock, onCommitted: @escaping @Sendable () -> Void = {}
    ) {
        self.clock = clock
        self.wake = WakeSignal(clock: clock)
        self.settings = Mutex(settings)
        self.store = store
        self.transport = transport
        self.gate = gate
        self.logger = logger
        self.onCommitted = onCommitted
    }

    /// A reload's settings (`nil`: off). The next poll is due `Poll=` after the last one.
    public func apply(_ settings: Settings?) {
        self.settings.withLock { $0 = settings }
        wake.signal()
    }

    public func run() async throws {
        let started = clock.instant()
        var last: ContinuousClock.Instant?
        while !stopped.load(ordering: .acquiring) {
            guard let current = settings.withLock({ $0 }) else {
                await wake.wait(until: nil)
                continue
            }
            let due = last.map { $0 + current.interval } ?? started + min(current.interval, current.firstDelay)
            if clock.instant() < due {
                await wake.wait(until: due)
                continue
            }
            _ = await poll(current, now: clock.now())
            last = clock.instant()
        }
    }

    public func stop() async {
        stopped.store(true, ordering: .releasing)
        wake.signal()
    }

    /// One poll of every environment, now (tests call it directly): at `now`, or the clock's.
    public func pollNow(now: Date? = nil) async -> [Summary] {
        guard let current = settings.withLock({ $0 }) else { return [] }
        return await poll(current, now: now ?? clock.now())
    }

    func poll(_ settings: Settings, now: Date) async -> [Summary] {
        var summaries: [Summary] = []
        for environment in settings.environments {
            summaries.append(await poll(environment, settings: settings, now: now))
        }
        return summaries
    }

    // MARK: - One environment

    func poll(_ environment: Environment, settings: Settings, now: Date) async -> Summary {
        var summary = Summary(endpoint: environment.endpoint)
        let name = environment.endpoint.rawValue
        if settings.sharedTurns {
            let taken: Bool
            do {
                taken = try await store.writing { [store] in try store.takeTurn(environment.checkpoint + ".turn", until: now.addingTimeInterval(settings.interval.inSeconds * 0.9), now: now) }
            } catch {
                return stop(&summary, "store_unavailable", "cannot take the \(name) polling turn: \(error)", reason: .storeFailure(StoreFailure.of(error)))
            }
            guard taken else {
                summary.stoppedBecause = "another_node_polls"
                logger.debug("\(name) notification history: another node polled it less than Poll= ago; skipped", [.endpoint: name])
                return summary
            }
        }
        let checkpoint: Date?
        do {
            checkpoint = try await store.writing { [store] in try store.checkpoint(environment.checkpoint) }
        } catch {
            return stop(&summary, "store_unavailable", "cannot read the \(name) notification checkpoint: \(error)", reason: .storeFailure(StoreFailure.of(error)))
        }
        // Apple refuses a start further back than it keeps history: a minute inside that edge.
        let earliest = now.addingTimeInterval(-environment.history.inSeconds + 60)
        let start = max(earliest, checkpoint.map { $0.addingTimeInterval(-settings.overlap.inSeconds) } ?? now.addingTimeInterval(-settings.firstLookBack.inSeconds))
        let body = JSONWriter.bytes(.object(JSONObject([
            "startDate": .number(String(start.epochMilliseconds)), "endDate": .number(String(now.epochMilliseconds)),
        ])))
        var paginationToken: String?
        repeat {
            guard summary.pages < settings.maximumPages else {
                return stop(
                    &summary, "too_many_pages",
                    "\(name) notification history holds more than \(settings.maximumPages) pages since \(RFC3339.format(start)); the checkpoint stays",
                    reason: .tooManyPages)
            }
            guard await gate.acquire(environment.endpoint) else {
                return stop(&summary, "\(name)_circuit_open", "\(name) notification history not asked: the endpoint's circuit is open", reason: .circuitOpen)
            }
            let page: Page
            switch await fetch(environment, settings: settings, body: body, paginationToken: paginationToken) {
            case .failure(let failure):
                return stop(&summary, failure.reason.description, "\(name) notification history: \(failure.reason); retried at the next poll", reason: failure.reason.code)
            case .success(let fetched):
                page = fetched
            }
            summary.pages += 1
            var valid: [StoreNotification] = []
            for payload in page.signedPayloads {
                do throws(OrderFileProblem) {
                    valid.append(try settings.verify(payload, now))
                } catch {
                    if let type = Self.claimedType(payload), !AppStoreNotification.typesInUse.contains(type) {
                        // Nothing the daemon does rests on it: holding the checkpoint for it would
                        // only make every later poll read a longer window again.
                        summary.ignored += 1
                        logger.warning(
                            "\(name) notification history: a \(type) notification does not verify (\(error.code.rawValue)); skipped, and the checkpoint is not held for it (the daemon has no use for \(type)): \(error.detail)",
                            [.endpoint: name, .reason: error.code.rawValue])
                        continue
                    }
                    summary.invalid += 1
                    logger.warning(
                        "\(name) notification history: a notification does not verify (\(error.code.rawValue)); skipped: \(error.detail)",
                        [.endpoint: name, .reason: error.code.rawValue])
                }
            }
            if !valid.isEmpty {
                // In the order the store signed them: a refund before its reversal.
                valid = valid.enumerated().sorted { ($0.element.signedAt ?? .distantPast, $0.offset) < ($1.element.signedAt ?? .distantPast, $1.offset) }
                    .map(\.element)
                let outcomes: [NotificationIngestOutcome]
                do {
                    outcomes = try await store.writing { [store, valid, clock] in 
                        try store.ingestNotifications(valid, consumption: settings.consumption, discovery: settings.discovery, now: clock.now())
                    }
                } catch {
                    return stop(
                        &summary, "store_unavailable", "cannot commit \(Plural.count(valid.count, "polled notification")): \(error); retried at the next poll",
                        reason: .storeFailure(StoreFailure.of(error)))
                }
                for (notification, outcome) in zip(valid, outcomes) {
                    if case .duplicate = outcome { summary.duplicates += 1 } else { summary.taken += 1 }
                    NotificationJournal.report(outcome, of: notification, via: "polled", logger: logger)
                }
                onCommitted()
            }
            paginationToken = page.hasMore ? page.paginationToken : nil
        } while paginationToken != nil
        // A notification that did not verify is read again at every poll until the cause is
        // fixed (RootCertificates=, BundleID=, the clock): past the checkpoint it would be lost.
        guard summary.invalid == 0 else {
            return stop(
                &summary, "invalid_notifications",
                "\(name) notification history: \(Plural.count(summary.invalid, "notification")) did not verify; the checkpoint stays at \(checkpoint.map(RFC3339.format) ?? "none"), so they are read again at the next poll",
                reason: .invalidNotifications)
        }
        do {
            try await store.writing { [store, clock] in try store.advanceCheckpoint(environment.checkpoint, to: now, now: clock.now()) }
        } catch {
            return stop(&summary, "store_unavailable", "cannot store the \(name) notification checkpoint: \(error)", reason: .storeFailure(StoreFailure.of(error)))
        }
        summary.completed = true
        if summary.taken > 0 || summary.invalid > 0 {
            logger.info(
                "\(name) notification history since \(RFC3339.format(start)): \(Plural.count(summary.taken, "new notification")), \(summary.duplicates) seen before, \(summary.invalid) invalid",
                [.endpoint: name, .count: String(summary.taken)])
        }
        return summary
    }

    /// Ends a poll early: logged at `warning`, the checkpoint left where it was.
    private func stop(_ summary: inout Summary, _ code: String, _ message: String, reason: ReasonCode) -> Summary {
        summary.stoppedBecause = code
        logger.warning(message, [.endpoint: summary.endpoint.rawValue, .reason: reason.rawValue])
        return summary
    }

    /// The `notificationType` a signed payload claims, read without verifying it — only to tell
    /// whether a payload that failed verification could matter; `nil` unless it is a plausible
    /// type name (upper-case letters and `_`, at most 64).
    static func claimedType(_ jws: String) -> String? {
        let parts = jws.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let json = try? Base64URL.decode(parts[1]),
            case .object(let object)? = try? JSONParser(maximumDepth: 8).parse(json),
            let type = object["notificationType"]?.stringValue,
            !type.isEmpty, type.utf8.count <= 64, type.utf8.allSatisfy({ ($0 >= 65 && $0 <= 90) || $0 == 95 })
        else { return nil }
        return type
    }

    /// One page of `NotificationHistoryResponse`.
    struct Page {
        var signedPayloads: [String]
        var hasMore: Bool
        var paginationToken: String?
    }

    struct FetchFailure: Error {
        var reason: Reason
    }

    /// One POST to Get Notification History, judged as `Kind=appstore` judges answers, reported
    /// to the gate.
    func fetch(_ environment: Environment, settings: Settings, body: [UInt8], paginationToken: String?) async -> Result<Page, FetchFailure> {
        let token: String
        do {
            token = try settings.tokens.token(now: clock.now())
        } catch {
            await gate.report(environment.endpoint, .configuration(reason: Reason(.appStoreKey)), retryAfter: nil, rateLimited: false)
            return .failure(FetchFailure(reason: Reason(.appStoreKey, detail: "cannot sign the token (\(error))")))
        }
        var endpoint = environment.settings
        endpoint.bearerToken = token
        var url = AppStoreVerifier.join(environment.settings.url, "/inApps/v1/notifications/history")
        if let paginationToken { url += "?paginationToken=" + AppStoreVerifier.pathComponent(paginationToken) }
        let request = endpoint.request(
            method: "POST", url: url, headers: endpoint.headers([]), body: body, maximumResponseSize: settings.maximumResponseSize)
        let exchange = EndpointExchange(transport: transport, gate: gate)
        let (_, meaning) = await exchange.send(request, to: environment.endpoint) { result, now in
            .of(HTTPAnswerClassifier.classify(result, handled: Set(100...599), now: now)) { AppStoreVerifier.judge($0, now: now) }
        }
        switch meaning {
        case .verdict(let verdict):
            return .failure(FetchFailure(reason: Self.reason(verdict)))
        case .answer(.notFound):
            return .failure(FetchFailure(reason: Reason(.appStore(4040010))))
        case .answer(.body(let bytes)):
            guard let page = Self.parse(bytes) else { return .failure(FetchFailure(reason: Reason(.unparseableAnswer))) }
            return .success(page)
        }
    }

    /// A verdict's reason code, for the log.
    static func reason(_ verdict: VerifierOutcome.Verdict) -> Reason {
        switch verdict {
        case .transient(let reason, _), .limitedTransient(let reason, _), .configuration(let reason), .reject(let reason), .escalate(let reason), .notSent(let reason):
            Reason(reason.code)
        case .internalError:
            Reason(.appStore(5000000))
        default:
            Reason(.unexpectedAnswer)
        }
    }

    /// `{"notificationHistory": [{"signedPayload": …}…], "hasMore": …, "paginationToken": …}`;
    /// `nil` when it is not that.
    static func parse(_ bytes: [UInt8]) -> Page? {
        guard case .object(let object)? = try? JSONParser(maximumDepth: 8).parse(bytes) else { return nil }
        var payloads: [String] = []
        if let history = object["notificationHistory"] {
            guard case .array(let items) = history else { return nil }
            for item in items {
                guard case .object(let record) = item, let payload = record["signedPayload"]?.stringValue else { return nil }
                payloads.append(payload)
            }
        }
        let hasMore: Bool
        if case .bool(let value)? = object["hasMore"] { hasMore = value } else { hasMore = false }
        let token = object["paginationToken"]?.stringValue.flatMap { $0.isEmpty ? nil : $0 }
        // More pages without a token to ask for them: a broken answer, not the end.
        if hasMore && token == nil { return nil }
        return Page(signedPayloads: payloads, hasMore: hasMore, paginationToken: token)
    }
}
