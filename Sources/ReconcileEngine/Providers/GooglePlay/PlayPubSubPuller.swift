import Foundation
import ReconcileCore
import ReconcileFoundation
import ReconcileSystem
import Synchronization

/// Pulls Google Play's real-time developer notifications from a Cloud Pub/Sub subscription
/// (`[GooglePlay] Subscription=`, DESIGN §5b; `docs/protocols/google-play.md` §6), so that no
/// public endpoint is needed: pull, take in, commit, and only then acknowledge.
///
/// Each message is taken in as a Pub/Sub push file is — once, by its `messageId`, whichever way it
/// came. A message is a hint, never proof:
/// - **One-time purchase** (`ONE_TIME_PRODUCT_PURCHASED`): Google is asked for the token
///   (`purchases.products.get`), and only a purchase it says is paid is kept, as a discovered
///   purchase committed with the message. Pending: left unacknowledged, Pub/Sub delivers it again.
///   Unconfirmed (a token Google does not know, a package not configured): recorded, nothing kept.
/// - **Voided purchase**: recorded, and the voided purchases list is read (``onVoided``), which
///   alone changes an order.
/// - Anything else: recorded.
///
/// A message the daemon cannot read is acknowledged and logged: delivered again it would be the
/// same. A message whose purchase Google cannot be asked about now stays unacknowledged and comes
/// back after its deadline; so does the whole batch when the store cannot commit it. A message redelivered after a crash between the commit and the
/// acknowledgement is a duplicate: it changes nothing more. Requests take `googleplay`'s rate
/// tokens; after a failed pull the next waits longer, up to ``Settings/maximumPause``.
public final class PlayPubSubPuller: Service {
    public let name = "Pub/Sub pulling"

    /// What pulling needs; replaced as a whole by a reload.
    public struct Settings: Sendable {
        /// `projects/P/subscriptions/S`.
        public var subscription: String
        /// Asks Pub/Sub and Google Play, with its access tokens (their scope includes Pub/Sub).
        public var verifier: GooglePlayVerifier
        /// `[Discovery]`: what a confirmed purchase does.
        public var discovery: DiscoverySettings
        public var maxMessages = 100
        /// Purchases Google is asked about at once.
        public var concurrentLookups = 16
        /// After a pull that found nothing.
        public var idlePause: Duration = .seconds(5)
        /// After a failed pull, doubled at each failure in a row up to ``maximumPause``.
        public var failurePause: Duration = .seconds(5)
        public var maximumPause: Duration = .seconds(300)

        public init(subscription: String, verifier: GooglePlayVerifier, discovery: DiscoverySettings) {
            self.subscription = subscription
            self.verifier = verifier
            self.discovery = discovery
        }
    }

    /// What one pull did.
    public struct Summary: Sendable, Hashable {
        public var pulled = 0
        /// Taken in: new messages, and those taken in before that carry a purchase (kept once).
        public var taken = 0
        /// Taken in before (a redelivery, or the push file came first), with no purchase.
        public var duplicates = 0
        /// Purchases kept (new discovered purchases).
        public var discovered = 0
        /// Messages left for Pub/Sub to deliver again.
        public var left = 0
        public var acknowledged = 0
        /// Why the pull or the batch stopped early, if it did.
        public var failure: GooglePlayVerifier.PubSubFailure?
    }

    let store: any OrderIngesting & SerializedStore
    let gate: any EndpointGate
    let logger: Logger
    let onCommitted: @Sendable () -> Void
    let onVoided: @Sendable () -> Void
    private let settings: Mutex<Settings?>
    private let clock: any DaemonClock
    private let wake: WakeSignal
    private let stopped = Atomic<Bool>(false)

    public init(
        settings: Settings?, store: any OrderIngesting & SerializedStore, gate: any EndpointGate, logger: Logger, clock: any DaemonClock,
        onCommitted: @escaping @Sendable () -> Void = {}, onVoided: @escaping @Sendable () -> Void = {}
    ) {
        self.settings = Mutex(settings)
        self.store = store
        self.gate = gate
        self.logger = logger
        self.clock = clock
        self.wake = WakeSignal(clock: clock)
        self.onCommitted = onCommitted
        self.onVoided = onVoided
    }

    public func apply(_ settings: Settings?) {
        self.settings.withLock { $0 = settings }
        wake.signal()
    }

    public func run() async throws {
        var failures = 0
        var reportedConfiguration: Reason?
        while !stopped.load(ordering: .acquiring) {
            guard let current = settings.withLock({ $0 }) else {
                await wake.wait(until: nil)
                continue
            }
            let summary = await pullOnce(current)
            let pause: Duration
            if let failure = summary.failure {
                failures += 1
                let doubled = current.failurePause * (1 << min(failures - 1, 16))
                pause = max(min(doubled, current.maximumPause), failure.retryAfter ?? .zero)
                if failure.isConfiguration {
                    // Said once at error until it changes: every pull would say it again.
                    if reportedConfiguration != failure.reason {
                        logger.error(
                            "Pub/Sub pull of \(current.subscription) refused: \(failure.reason); tried again every \(TimeSpan.format(current.maximumPause)) at most",
                            [.endpoint: "pubsub", .reason: failure.reason.code.rawValue])
                        reportedConfiguration = failure.reason
                    }
                } else {
                    logger.warning(
                        "Pub/Sub pull of \(current.subscription) failed: \(failure.reason); next in \(TimeSpan.format(pause))",
                        [.endpoint: "pubsub", .reason: failure.reason.code.rawValue])
                }
            } else {
                failures = 0
                reportedConfiguration = nil
                // A full batch: more may wait.
                pause = summary.pulled >= current.maxMessages ? .zero : (summary.pulled == 0 ? current.idlePause : .zero)
            }
            if pause > .zero { await wake.wait(until: clock.instant() + pause) }
        }
    }

    public func stop() async {
        stopped.store(true, ordering: .releasing)
        wake.signal()
    }

    /// One pull, its messages taken in and acknowledged (tests call it directly).
    public func pullNow() async -> Summary {
        guard let current = settings.withLock({ $0 }) else { return Summary() }
        return await pullOnce(current)
    }

    func pullOnce(_ settings: Settings) async -> Summary {
        var summary = Summary()
        let answer: PubSubPullAnswer
        switch await settings.verifier.pull(subscription: settings.subscription, maxMessages: settings.maxMessages, gate: gate) {
        case .success(let pulled): answer = pulled
        case .failure(let failure):
            summary.failure = failure
            return summary
        }
        summary.pulled = answer.messages.count
        guard !answer.messages.isEmpty else { return summary }
        // A message taken in before (its acknowledgement was lost or late, or another node took
        // it in) is only acknowledged: asking Google about it again could take longer than its
        // ack deadline, and a batch that never beats its deadline would come back for ever.
        let ids = answer.messages.map { "pubsub:\($0.messageID)" }
        let known = (try? await store.reading { [store] in try store.takenInNotifications(ids, source: .googlePlay) }) ?? []
        var done: [String] = []  // ackIds of messages with nothing (more) to keep
        let fresh = answer.messages.filter { message in
            guard known.contains("pubsub:\(message.messageID)") else { return true }
            logger.debug(
                "Pub/Sub message \(message.messageID) was taken in before; acknowledged without asking Google again",
                [.endpoint: "pubsub", .reason: "duplicate"])
            done.append(message.ackID)
            summary.duplicates += 1
            return false
        }

        // What each message becomes. Google is asked about several purchases at once (each ask
        // takes its own rate token); a message Google could not be asked about is left for
        // Pub/Sub to deliver again.
        var ready: [(message: PubSubPullAnswer.Message, notification: StoreNotification, voided: Bool)] = []
        let decided = await withTaskGroup(of: (Int, Decision).self) { group in
            var results = [Decision?](repeating: nil, count: fresh.count)
            var next = 0
            func add() {
                guard next < fresh.count else { return }
                let (index, message) = (next, fresh[next])
                next += 1
                group.addTask { (index, await self.decide(message, settings: settings)) }
            }
            for _ in 0..<min(settings.concurrentLookups, fresh.count) { add() }
            while let (index, decision) = await group.next() {
                results[index] = decision
                add()
            }
            return results.map { $0! }
        }
        for (message, decision) in zip(fresh, decided) {
            switch decision {
            case .take(let notification, let voided):
                ready.append((message, notification, voided))
            case .acknowledge:
                done.append(message.ackID)
            case .leave(let failure):
                summary.left += 1
                if let failure { summary.failure = failure }
            }
        }

        if !ready.isEmpty {
            let (notifications, discovery) = (ready.map(\.notification), settings.discovery)
            let outcomes: [NotificationIngestOutcome]
            do {
                outcomes = try await store.writing { [store, clock] in
                    try store.ingestNotifications(notifications, consumption: .off, discovery: discovery, now: clock.now())
                }
            } catch {
                logger.error(
                    "cannot commit \(Plural.count(ready.count, "pulled Pub/Sub message")) to the store: \(error); left for Pub/Sub to deliver again",
                    [.endpoint: "pubsub", .reason: ReasonCode.storeFailure(StoreFailure.of(error)).rawValue])
                summary.left += ready.count
                summary.failure = GooglePlayVerifier.PubSubFailure(reason: Reason(.storeFailure(StoreFailure.of(error))), isConfiguration: false)
                ready = []
                outcomes = []
            }
            for (item, outcome) in zip(ready, outcomes) {
                NotificationJournal.report(outcome, of: item.notification, via: "pulled from Pub/Sub", logger: logger)
                switch outcome {
                case .duplicate: summary.duplicates += 1
                case .discovered(.recorded):
                    summary.taken += 1
                    summary.discovered += 1
                default: summary.taken += 1
                }
                done.append(item.message.ackID)
            }
            if !outcomes.isEmpty {
                onCommitted()
                if ready.contains(where: \.voided) { onVoided() }
            }
        }

        // Committed (or nothing to keep): acknowledged. Should this fail, Pub/Sub delivers them
        // again and each is a duplicate.
        switch await settings.verifier.acknowledge(subscription: settings.subscription, ackIDs: done, gate: gate) {
        case .success:
            summary.acknowledged = done.count
        case .failure(let failure):
            logger.info(
                "Pub/Sub acknowledgement of \(Plural.count(done.count, "message")) failed (\(failure.reason)); they come back and change nothing more",
                [.endpoint: "pubsub", .reason: failure.reason.code.rawValue])
        }
        return summary
    }

    /// What one pulled message becomes.
    enum Decision: Sendable {
        /// Taken in (with the purchase Google confirmed, if any), then acknowledged.
        case take(StoreNotification, voided: Bool)
        /// Nothing to take in: acknowledged.
        case acknowledge
        /// Left for Pub/Sub to deliver again (`failure`: Google could not be asked).
        case leave(GooglePlayVerifier.PubSubFailure?)
    }

    func decide(_ message: PubSubPullAnswer.Message, settings: Settings) async -> Decision {
        let push: PlayNotification
        do {
            push = try PlayNotification.parse(data: message.data, messageID: message.messageID)
        } catch {
            logger.warning(
                "Pub/Sub message \(message.messageID) of \(settings.subscription) is not a Play notification (\(error)); acknowledged, nothing taken in",
                [.endpoint: "pubsub", .reason: ReasonCode.unparseableAnswer.rawValue])
            return .acknowledge
        }
        var notification = StoreNotification.playPush(push)
        notification.via = .poll
        guard case .oneTimeProduct(let type, let token, let sku) = push.kind, type == 1 else { return .take(notification, voided: push.isVoided) }
        let shown = PrintableText.excerpt(sku ?? "", maximumScalars: 80)
        switch await settings.verifier.confirmOneTime(package: push.packageName, sku: sku, token: token, via: .pubsub, gate: gate) {
        case .purchase(let discovered):
            notification.discovered = discovered
        case .pending(let reason):
            logger.info(
                "Pub/Sub message \(message.messageID): Google Play purchase of \(shown) not paid yet (\(reason)); left for Pub/Sub to deliver again",
                [.endpoint: "pubsub", .reason: reason.code.rawValue])
            return .leave(nil)
        case .notKept(let reason):
            logger.info(
                "Pub/Sub message \(message.messageID): Google Play purchase of \(shown) not kept: \(reason)",
                [.endpoint: "pubsub", .reason: reason.code.rawValue])
        case .unconfirmed(let reason):
            logger.warning(
                "Pub/Sub message \(message.messageID): Google does not confirm the one-time purchase it names (\(reason)); recorded, nothing kept",
                [.endpoint: "pubsub", .reason: reason.code.rawValue])
        case .unavailable(let reason):
            return .leave(GooglePlayVerifier.PubSubFailure(reason: reason, isConfiguration: false))
        }
        return .take(notification, voided: false)
    }
}
