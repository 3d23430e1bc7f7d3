import Foundation
import ReconcileCore
import ReconcileCrypto
import ReconcileFoundation
import ReconcileSystem
import Synchronization

/// Reads Google Play's voided purchases (`voidedpurchases.list`, DESIGN §5a;
/// `docs/protocols/google-play.md` §4) into store notifications: a refunded, charged-back or revoked
/// Play purchase revokes its order. Two reasons to read the list:
///
/// - **Polling** (`[Notifications] Poll=`): every interval (and once shortly after start), for
///   each package of `[GooglePlay] PackageName=` (exactly those: an order naming another is
///   never stored, DESIGN §5 "Google Play"), from the stored
///   checkpoint minus ``Settings/overlap`` (the first time: the last ``Settings/firstLookBack``;
///   never further back than the 30 days Google keeps) — so no public endpoint is needed.
/// - **Confirming a push**: a Pub/Sub push of a voided purchase, taken in from the spool, is
///   only a hint (anyone who can write a file could forge one): ``confirm()`` reads the lists
///   now — at most once per ``Settings/minimumSpacing``, however many pushes come (Google allows
///   30 queries per 30 seconds and 6,000 a day per package) — and once more
///   ``Settings/recheckDelay`` later, in case Google's list had not caught up with its push. Only
///   what the list says changes an order, and only the packages above are ever read: a package
///   named by a push alone is not (a forged name would be a request Google refuses). This works
///   with `Poll=off` too.
///
/// Each listed record becomes a ``StoreNotification`` keyed by the token's digest and the voided
/// time, so a record listed again (the overlap, another node) changes nothing. Pages follow
/// `nextPageToken`; the checkpoint moves only after every page was committed. Requests take
/// tokens from, and report to, `[GooglePlay]`'s gate (its bucket and circuit) with the
/// verifier's access tokens. On a shared store the regular polls take turns as the App Store's
/// do; a push's confirmation does not wait for a turn.
public final class PlayVoidedPurchasePoller: Service {
    public let name = "voided purchase polling"

    /// What a poll needs; replaced as a whole by a reload.
    public struct Settings: Sendable {
        /// `Poll=`; `nil`: only pushes are confirmed.
        public var interval: Duration?
        /// `[GooglePlay] PackageName=`: exactly the packages read.
        public var packageNames: [String]
        /// Sends the requests (its API URL, access tokens, transport).
        public var verifier: GooglePlayVerifier
        public var overlap: Duration = .seconds(3600)
        public var firstLookBack: Duration = .seconds(86_400)
        /// Google lists 30 days back; a start earlier than that is refused.
        public var history: Duration = .seconds(30 * 86_400)
        public var firstDelay: Duration = .seconds(10)
        /// Between two reads of the list for pushes.
        public var minimumSpacing: Duration = .seconds(15)
        /// After pushes were confirmed, the lists are read once more this long after.
        public var recheckDelay: Duration = .seconds(300)
        public var maximumPages = 1_000
        public var sharedTurns = false

        public init(interval: Duration?, packageNames: [String], verifier: GooglePlayVerifier) {
            self.interval = interval
            self.packageNames = packageNames
            self.verifier = verifier
        }
    }

    /// What one package's read did.
    public struct Summary: Sendable, Hashable {
        public var package: String
        public var pages = 0
        public var taken = 0
        public var duplicates = 0
        public var completed = false
        public var stoppedBecause: String?
    }

    /// The poll's store calls run on the store's own threads, never on the cooperative pool.
    let store: any OrderIngesting & CheckpointStore & SerializedStore
    let gate: any EndpointGate
    let logger: Logger
    let onCommitted: @Sendable () -> Void
    private let settings: Mutex<Settings?>
    /// A push asked for the lists to be read.
    private let confirmRequested = Atomic<Bool>(false)
    private let clock: any DaemonClock
    private let wake: WakeSignal
    private let stopped = Atomic<Bool>(false)

    public init(
        settings: Settings?, store: any OrderIngesting & CheckpointStore & SerializedStore, gate: any EndpointGate, logger: Logger,
        clock: any DaemonClock, onCommitted: @escaping @Sendable () -> Void = {}
    ) {
        self.clock = clock
        self.wake = WakeSignal(clock: clock)
        self.settings = Mutex(settings)
        self.store = store
        self.gate = gate
        self.logger = logger
        self.onCommitted = onCommitted
    }

    public func apply(_ settings: Settings?) {
        self.settings.withLock { $0 = settings }
        wake.signal()
    }

    /// Pushes of voided purchases were taken in: read the lists soon.
    public func confirm() {
        confirmRequested.store(true, ordering: .releasing)
        wake.signal()
    }

    public func run() async throws {
        let started = clock.instant()
        var lastPoll: ContinuousClock.Instant?
        var lastRead: ContinuousClock.Instant?
        // The second read after a confirmation (Google's list may lag its push).
        var recheck: ContinuousClock.Instant?
        while !stopped.load(ordering: .acquiring) {
            guard let current = settings.withLock({ $0 }) else {
                await wake.wait(until: nil)
                continue
            }
            let regularDue = current.interval.map { interval in lastPoll.map { $0 + interval } ?? started + min(interval, current.firstDelay) }
            let confirmDue = confirmRequested.load(ordering: .acquiring) ? (lastRead.map { $0 + current.minimumSpacing } ?? clock.instant()) : nil
            guard let due = [regularDue, confirmDue, recheck].compactMap({ $0 }).min() else {
                await wake.wait(until: nil)
                continue
            }
            if clock.instant() < due {
                await wake.wait(until: due)
                continue
            }
            let now = clock.now()
            if let regularDue, regularDue <= clock.instant() {
                _ = await poll(current, now: now, confirming: false)
                lastPoll = clock.instant()
            } else {
                let pushed = confirmDue.map { $0 <= clock.instant() } ?? false
                _ = await poll(current, now: now, confirming: true)
                recheck = pushed ? clock.instant() + current.recheckDelay : nil
            }
            lastRead = clock.instant()
        }
    }

    public func stop() async {
        stopped.store(true, ordering: .releasing)
        wake.signal()
    }

    /// One read of every package now (tests call it directly); `confirming`: for pushes,
    /// without taking a turn.
    public func pollNow(now: Date? = nil, confirming: Bool = false) async -> [Summary] {
        guard let current = settings.withLock({ $0 }) else { return [] }
        return await poll(current, now: now ?? clock.now(), confirming: confirming)
    }

    func poll(_ settings: Settings, now: Date, confirming: Bool) async -> [Summary] {
        // Cleared before the reads: a push arriving during them asks for another. A regular
        // poll on a shared store may lose a package's turn, so it leaves a push's request for
        // the confirmation (which takes no turn).
        if confirming || !settings.sharedTurns { confirmRequested.store(false, ordering: .releasing) }
        // Exactly the configured packages: what orders name cannot crowd one out (issue 23).
        var summaries: [Summary] = []
        for package in settings.packageNames {
            summaries.append(await poll(package: package, settings: settings, now: now, takeTurn: settings.sharedTurns && !confirming))
        }
        return summaries
    }

    // MARK: - One package

    func poll(package: String, settings: Settings, now: Date, takeTurn: Bool) async -> Summary {
        var summary = Summary(package: package)
        let checkpointName = "googleplay.\(package)"
        if takeTurn {
            let taken: Bool
            do {
                let until = now.addingTimeInterval((settings.interval ?? .seconds(3600)).inSeconds * 0.9)
                taken = try await store.writing { [store] in try store.takeTurn(checkpointName + ".turn", until: until, now: now) }
            } catch {
                return stop(&summary, "store_unavailable", "cannot take the \(package) voided purchases turn: \(error)", reason: .storeFailure(StoreFailure.of(error)))
            }
            guard taken else {
                summary.stoppedBecause = "another_node_polls"
                return summary
            }
        }
        let checkpoint: Date?
        do {
            checkpoint = try await store.writing { [store] in try store.checkpoint(checkpointName) }
        } catch {
            return stop(&summary, "store_unavailable", "cannot read the \(package) voided purchases checkpoint: \(error)", reason: .storeFailure(StoreFailure.of(error)))
        }
        // Google refuses a start older than 30 days: an hour inside that edge. The end is left
        // to Google (its "now"; ours may run ahead), and the checkpoint a minute behind ours.
        let earliest = now.addingTimeInterval(-settings.history.inSeconds + 3600)
        // A checkpoint from a clock ahead of ours counts as now: the start is never later than
        // an overlap before now (Google refuses a start in the future).
        let from = checkpoint.map { min($0, now) }.map { $0.addingTimeInterval(-settings.overlap.inSeconds) }
            ?? now.addingTimeInterval(-settings.firstLookBack.inSeconds)
        if from < earliest, let checkpoint {
            logger.warning(
                "\(package) voided purchases were last read up to \(RFC3339.format(checkpoint)); Google lists 30 days back, so purchases voided and listed before \(RFC3339.format(earliest)) can no longer be read",
                [.endpoint: VerificationEndpoint.googlePlay.rawValue, .reason: ReasonCode.voidedGap.rawValue])
        }
        let start = max(earliest, from)
        let end = now.addingTimeInterval(-60)
        var pageToken: String?
        var tokensSeen: Set<String> = []
        repeat {
            guard summary.pages < settings.maximumPages else {
                return stop(
                    &summary, "too_many_pages",
                    "\(package) voided purchases: more than \(settings.maximumPages) pages since \(RFC3339.format(start)); the checkpoint stays",
                    reason: .tooManyPages)
            }
            guard await gate.acquire(.googlePlay) else {
                return stop(&summary, "googleplay_circuit_open", "\(package) voided purchases not read: Google Play's circuit is open", reason: .circuitOpen)
            }
            let page: PlayVoidedPurchase.Page
            switch await settings.verifier.voidedPage(
                package: package, startTime: start.epochMilliseconds, pageToken: pageToken, gate: gate)
            {
            case .failure(let failure):
                return stop(&summary, failure.reason.description, "\(package) voided purchases: \(failure.reason); read again later", reason: failure.reason.code)
            case .success(let fetched):
                page = fetched
            }
            summary.pages += 1
            if !page.purchases.isEmpty {
                // Oldest first, as Google lists them: a purchase voided twice keeps its order.
                let notifications = page.purchases.sorted { $0.voidedTimeMilliseconds < $1.voidedTimeMilliseconds }
                    .map { StoreNotification.playVoided($0, tokenDigest: SHA256.hexDigest(Array($0.purchaseToken.utf8)), via: .poll) }
                let outcomes: [NotificationIngestOutcome]
                do {
                    outcomes = try await store.writing { [store, clock] in try store.ingestNotifications(notifications, now: clock.now()) }
                } catch {
                    return stop(
                        &summary, "store_unavailable",
                        "cannot commit \(Plural.count(notifications.count, "voided purchase")) of \(package): \(error); read again later",
                        reason: .storeFailure(StoreFailure.of(error)))
                }
                for (notification, outcome) in zip(notifications, outcomes) {
                    if case .duplicate = outcome { summary.duplicates += 1 } else { summary.taken += 1 }
                    NotificationJournal.report(outcome, of: notification, via: "listed by Google Play", logger: logger)
                }
                onCommitted()
            }
            pageToken = page.nextPageToken
            if let token = pageToken, !tokensSeen.insert(token).inserted {
                return stop(&summary, "repeated_page_token", "\(package) voided purchases: Google named the same next page twice; the checkpoint stays", reason: .repeatedPageToken)
            }
        } while pageToken != nil
        do {
            try await store.writing { [store, clock] in try store.advanceCheckpoint(checkpointName, to: max(end, checkpoint ?? end), now: clock.now()) }
        } catch {
            return stop(&summary, "store_unavailable", "cannot store the \(package) voided purchases checkpoint: \(error)", reason: .storeFailure(StoreFailure.of(error)))
        }
        summary.completed = true
        if summary.taken > 0 {
            logger.info(
                "\(package) voided purchases since \(RFC3339.format(start)): \(Plural.count(summary.taken, "new one")), \(summary.duplicates) seen before",
                [.endpoint: VerificationEndpoint.googlePlay.rawValue, .count: String(summary.taken)])
        }
        return summary
    }

    private func stop(_ summary: inout Summary, _ code: String, _ message: String, reason: ReasonCode) -> Summary {
        summary.stoppedBecause = code
        logger.warning(message, [.endpoint: VerificationEndpoint.googlePlay.rawValue, .reason: reason.rawValue])
        return summary
    }
}
