import Foundation
import ReconcileCore
import ReconcileFoundation
import ReconcileSystem
import Synchronization

/// Google Play one-time purchases a push file reported (a Pub/Sub push envelope dropped in the
/// spool, DESIGN §5b): the file is taken in as a record that changes nothing; this service then
/// asks Google about the purchase it names with `purchases.products.get`, as a pulled message is,
/// and keeps the purchase Google says is paid beside the notification taken in before. A
/// purchase not paid yet, or a Google that does not answer, is asked again later — in memory: a
/// restart forgets it, and the Pub/Sub subscription or `reconcilectl recover` still find it.
public final class PlayPushConfirmer: Service {
    public let name = "Play push confirmation"

    /// `[GooglePlay]`'s verifier and `[Discovery]`.
    public struct Settings: Sendable {
        public var verifier: GooglePlayVerifier
        public var discovery: DiscoverySettings
        /// When a purchase not yet paid, or not yet asked about, is asked again: after each
        /// delay in turn, then given up (logged).
        public var retryDelays: [Duration] = [.seconds(30), .seconds(120), .seconds(600), .seconds(1800), .seconds(3600), .seconds(4 * 3600)]

        public init(verifier: GooglePlayVerifier, discovery: DiscoverySettings) {
            self.verifier = verifier
            self.discovery = discovery
        }
    }

    /// A push waiting to be confirmed.
    struct Pending {
        var push: PlayNotification
        var tries = 0
        var due: ContinuousClock.Instant
    }

    let store: any OrderIngesting & SerializedStore
    let gate: any EndpointGate
    let logger: Logger
    let onCommitted: @Sendable () -> Void
    private let settings: Mutex<Settings?>
    private let pending = Mutex<[Pending]>([])
    private let clock: any DaemonClock
    private let wake: WakeSignal
    private let stopped = Atomic<Bool>(false)

    public init(
        settings: Settings?, store: any OrderIngesting & SerializedStore, gate: any EndpointGate, logger: Logger, clock: any DaemonClock,
        onCommitted: @escaping @Sendable () -> Void = {}
    ) {
        self.settings = Mutex(settings)
        self.store = store
        self.gate = gate
        self.logger = logger
        self.clock = clock
        self.wake = WakeSignal(clock: clock)
        self.onCommitted = onCommitted
    }

    public func apply(_ settings: Settings?) {
        self.settings.withLock { $0 = settings }
        wake.signal()
    }

    /// At most this many pushes wait; beyond it the ones waiting longest are given up (a flood
    /// of push files while Google does not answer must not grow the daemon without bound).
    public static let maximumWaiting = 10_000

    /// Pushes of one-time purchases just taken in: asked about now.
    public func confirm(_ pushes: [PlayNotification]) {
        let now = clock.instant()
        let dropped = pending.withLock { list -> Int in
            list += pushes.map { Pending(push: $0, due: now) }
            let excess = max(0, list.count - Self.maximumWaiting)
            if excess > 0 { list.removeFirst(excess) }
            return excess
        }
        if dropped > 0 {
            logger.warning(
                "\(Plural.count(dropped, "Play push")) of one-time purchases given up unconfirmed: more than \(Self.maximumWaiting) wait for Google (the Pub/Sub subscription or reconcilectl recover still find them)",
                [.endpoint: "googleplay", .reason: "push_unconfirmed", .count: String(dropped)])
        }
        wake.signal()
    }

    /// How many pushes wait to be confirmed.
    public var waiting: Int { pending.withLock { $0.count } }

    public func run() async throws {
        while !stopped.load(ordering: .acquiring) {
            let now = clock.instant()
            let (due, next) = pending.withLock { list -> ([Pending], ContinuousClock.Instant?) in
                let due = list.filter { $0.due <= now }
                list.removeAll { $0.due <= now }
                return (due, list.map(\.due).min())
            }
            guard let current = settings.withLock({ $0 }), !due.isEmpty else {
                await wake.wait(until: next)
                continue
            }
            for item in due where !stopped.load(ordering: .acquiring) {
                if let later = await confirmOne(item, settings: current) { pending.withLock { $0.append(later) } }
            }
        }
    }

    public func stop() async {
        stopped.store(true, ordering: .releasing)
        wake.signal()
    }

    /// Asks Google about one push's purchase and keeps it when paid; the push again, later,
    /// when it cannot be decided now.
    func confirmOne(_ item: Pending, settings: Settings) async -> Pending? {
        let push = item.push
        guard case .oneTimeProduct(let type, let token, let sku) = push.kind, type == 1 else { return nil }
        let what = "Play push \(push.messageID) (one-time purchase of \(PrintableText.excerpt(sku ?? "", maximumScalars: 80)))"
        let retry = { (why: String) -> Pending? in
            guard item.tries < settings.retryDelays.count else {
                self.logger.warning(
                    "\(what): \(why); given up after \(Plural.count(item.tries + 1, "attempt")) (the Pub/Sub subscription or reconcilectl recover still find it)",
                    [.endpoint: "googleplay", .reason: "push_unconfirmed"])
                return nil
            }
            let delay = settings.retryDelays[item.tries]
            self.logger.info("\(what): \(why); asked again in \(TimeSpan.format(delay))", [.endpoint: "googleplay"])
            return Pending(push: push, tries: item.tries + 1, due: self.clock.instant() + delay)
        }
        switch await settings.verifier.confirmOneTime(package: push.packageName, sku: sku, token: token, via: .file, gate: gate) {
        case .unavailable(let reason):
            return retry("Google could not be asked (\(reason))")
        case .unconfirmed(let reason):
            logger.warning("\(what): Google does not confirm the purchase it names (\(reason)); nothing kept", [.endpoint: "googleplay", .reason: reason.code.rawValue])
            return nil
        case .pending(let reason):
            return retry("not paid yet (\(reason))")
        case .notKept(let reason):
            logger.info("\(what): not kept: \(reason)", [.endpoint: "googleplay", .reason: reason.code.rawValue])
            return nil
        case .purchase(let discovered):
            var confirmed = StoreNotification.playPush(push)
            confirmed.discovered = discovered
            let notification = confirmed
            do {
                let outcomes = try await store.writing { [store, clock] in
                    try store.ingestNotifications([notification], consumption: .off, discovery: settings.discovery, now: clock.now())
                }
                for outcome in outcomes { NotificationJournal.report(outcome, of: notification, via: "push file, confirmed with Google", logger: logger) }
                onCommitted()
                return nil
            } catch {
                return retry("the store failed (\(error))")
            }
        }
    }
}
