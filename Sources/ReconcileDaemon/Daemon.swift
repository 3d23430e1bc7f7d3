import Foundation
import Glibc
import ReconcileCore
import ReconcileEngine
import ReconcileFoundation
import ReconcileHTTP
import ReconcileSpool
import ReconcileStore
import ReconcileSQLite
import ReconcilePostgreSQL
import ReconcileSystem
import Synchronization

/// The running daemon: wires configuration, lock, store, spool ingest, scheduler and signals
/// together. Everything it wires lives in the libraries; this type only decides the order of
/// start-up and shutdown. (Start-up, the services, the event loop and reload stay in this one
/// file: it is the one place where the parts meet, and they read best together.)
public final class Daemon {
    /// A start-up failure: the exit status and a one-line reason.
    public struct StartupFailure: Error, Sendable, CustomStringConvertible {
        public var status: Int32
        public var message: String
        public var errno: Int32?

        public var description: String { message }
    }

    /// What the main loop reacts to.
    enum Event: Sendable {
        case signal(Int32)
        /// One of the daemon's services ended or failed without being asked to: stop, exit 1.
        case serviceFailed(ServiceGroup.UnexpectedEnd)
        /// `reconcilectl reload`: reload, then report the new generation or why not.
        case reload(@Sendable (Result<Int, ReloadFailure>) -> Void)
        /// The store's file was replaced or changed underneath: stop, exit 1.
        case storeLost(String)
    }

    public private(set) var configuration: Configuration
    let configPath: String
    let environment: [String: String]
    let logger: Logger
    /// One daemon per spool (DESIGN §3).
    let spoolLock: LockFile
    /// The store, with what only its engine has (SQLite's lock, PostgreSQL's listener).
    let opened: OpenedStore
    let store: any OperableOrderStore

    let layout: SpoolLayout
    let ingestor: SpoolIngestor
    let transport: CurlTransport
    let escalations: EscalationRunner
    let scheduler: Scheduler
    let control: ControlHandler
    let notifier: SystemdNotifier
    /// Wall and monotonic time and timers, for every part that waits.
    let clock: any DaemonClock
    /// Refreshes `STATUS=` after orders moved, at most once a second.
    let statusTrigger: ThrottledTrigger
    /// `[Daemon] MetricsFile=`; does nothing when none is set.
    let metrics: MetricsPublisher
    /// Called after anything that the daemon's reports show changed: the scheduler moved orders
    /// or a circuit, the spool ingest handled files, an operator acted. `STATUS=` and the
    /// metrics file hear of it from here.
    let stateChanged: @Sendable () -> Void
    private var controlServer: ControlSocketServer?
    private var clockWatch: WallClockWatch?
    let spoolWatch: SpoolWatchService
    let pruning: PruneService
    /// `[Notifications] Poll=` with `Kind=appstore`; idle otherwise.
    let poller: AppStoreNotificationPoller
    /// Google Play's voided purchases: `Poll=`, and pushes' confirmations; idle without `[GooglePlay]`.
    let playPoller: PlayVoidedPurchasePoller
    /// `[GooglePlay] Subscription=`: Play's notifications pulled from Pub/Sub; idle without it.
    let pubSubPuller: PlayPubSubPuller
    /// Play push files of one-time purchases, confirmed with Google; idle without `[GooglePlay]`.
    let pushConfirmer: PlayPushConfirmer
    /// Set when the store was lost: the ingest's retries are pointless then.
    private let abandonIngest = Flag()

    /// A flag several tasks read.
    final class Flag: Sendable {
        private let value = Atomic<Bool>(false)
        func set() { value.store(true, ordering: .releasing) }
        var isSet: Bool { value.load(ordering: .acquiring) }
    }
    private let spoolEvents: AsyncStream<SpoolEvent>.Continuation
    private let spoolEventStream: AsyncStream<SpoolEvent>
    private let events: AsyncStream<Event>.Continuation
    private let eventStream: AsyncStream<Event>

    /// Starts everything short of the loops: configuration, secrets, the spool and its lock, the
    /// store's lock, the store (migrated), scheduler.
    public init(
        configPath: String, environment: [String: String], logger: Logger, notifier: SystemdNotifier, clock: any DaemonClock = SystemClock()
    ) throws(StartupFailure) {
        self.clock = clock
        statusTrigger = ThrottledTrigger(interval: .seconds(1), clock: clock)
        // Absolute, so that a reload reads the same file whatever the working directory is then.
        let configPath = ConfigurationLoader.absolute(configPath)
        self.configPath = configPath
        self.environment = environment
        self.logger = logger
        self.notifier = notifier
        let configuration: Configuration
        do {
            configuration = try ConfigurationLoader.load(path: configPath)
        } catch {
            for problem in error.problems {
                logger.error("configuration: \(problem)", id: .configurationError, [.path: problem.path, .reason: ReasonCode.configuration.rawValue])
            }
            throw StartupFailure(status: ExitStatus.configuration, message: "bad configuration in \(configPath) (\(Plural.count(error.problems.count, "problem")))")
        }
        self.configuration = configuration

        transport = CurlTransport(maximumConnections: max(64, configuration.verifier.maxInFlight * 2))
        let configured: VerificationFactory.Configured
        do {
            configured = try VerificationFactory.configured(for: configuration, environment: environment, transport: transport)
        } catch {
            for problem in error.problems {
                logger.error("configuration: \(problem)", id: .configurationError, [.path: problem.path, .reason: ReasonCode.configuration.rawValue])
            }
            let message = error.problems.count == 1
                ? error.description : "bad configuration in \(configPath) (\(Plural.count(error.problems.count, "problem")))"
            throw StartupFailure(status: ExitStatus.configuration, message: message)
        }

        // The spool's lock first: it needs only the spool's layout, and a daemon refused because
        // another one uses the spool must leave its own store alone — not create, lock or
        // migrate it (DESIGN §3).
        layout = SpoolLayout(root: configuration.spool.directory)
        do {
            let created = try layout.prepare()
            if !created.isEmpty { logger.notice("created spool directories \(created.joined(separator: ", "))") }
        } catch {
            throw StartupFailure(status: ExitStatus.failure, message: "cannot prepare the spool: \(error)", errno: error.errno)
        }
        do {
            spoolLock = try SpoolLock.acquire(layout)
        } catch {
            throw StartupFailure(status: ExitStatus.failure, message: error.description, errno: error.errno)
        }

        let storeName = StoreBackend(configuration, password: nil).displayName
        // A migration may copy a large store aside: keep the manager's start time-out away.
        let extender = Mutex<StartupTimeoutExtender?>(nil)
        defer { extender.withLock { $0?.finish() } }
        let willMigrate: @Sendable (String) -> Void = { [logger, notifier] step in
            logger.notice("store \(storeName): \(step)")
            extender.withLock { $0 = $0 ?? StartupTimeoutExtender(notifier: notifier) }
        }
        opened = try Self.openStore(configuration, configPath: configPath, environment: environment, logger: logger, willMigrate: willMigrate)
        store = opened.store

        let leftovers = Quarantine().removeLeftovers(in: layout)
        if !leftovers.isEmpty { logger.notice("removed \(leftovers.count) half-written reason files from \(layout.rejected)") }

        escalations = EscalationRunner(settings: configuration.escalation, logger: logger, clock: clock)
        let scheduler = Scheduler(
            store: store, settings: configured.settings, senders: configured.senders, logger: logger, escalations: escalations, clock: clock,
            coordinator: opened.coordinator(logger: logger, clock: clock))
        self.scheduler = scheduler
        let statusTrigger = statusTrigger
        (spoolEventStream, spoolEvents) = AsyncStream<SpoolEvent>.makeStream()
        (eventStream, events) = AsyncStream<Event>.makeStream()
        spoolWatch = SpoolWatchService(
            layout: layout, rescanInterval: configuration.spool.rescanInterval, logger: logger, spoolEvents: spoolEvents, clock: clock)
        pruning = PruneService(store: store, keepFinished: configuration.state.keepFinished, logger: logger, clock: clock)
        opened.connect(nudge: { scheduler.nudge() }, storeLost: { [events] why in events.yield(.storeLost(why)) })
        let metrics = MetricsPublisher(path: configuration.daemon.metricsFile, logger: logger, clock: clock)
        self.metrics = metrics
        let stateChanged: @Sendable () -> Void = {
            statusTrigger.changed()
            metrics.changed()
        }
        self.stateChanged = stateChanged
        let playPoller = PlayVoidedPurchasePoller(
            settings: configured.playPolling, store: store, gate: scheduler, logger: logger, clock: clock,
            onCommitted: {
                scheduler.nudge()
                stateChanged()
            })
        self.playPoller = playPoller
        pubSubPuller = PlayPubSubPuller(
            settings: configured.pubSubPulling, store: store, gate: scheduler, logger: logger, clock: clock,
            onCommitted: {
                scheduler.nudge()
                stateChanged()
            },
            onVoided: { playPoller.confirm() })
        let pushConfirmer = PlayPushConfirmer(
            settings: configured.pushConfirming, store: store, gate: scheduler, logger: logger, clock: clock,
            onCommitted: {
                scheduler.nudge()
                stateChanged()
            })
        self.pushConfirmer = pushConfirmer
        ingestor = SpoolIngestor(
            layout: layout, store: store, settings: Self.ingestSettings(configuration, configured.notifications), logger: logger, clock: clock,
            onCommitted: { summary in
                // A push of a voided purchase changes nothing until Google's list confirms it.
                if summary.playVoidedPushes > 0 { playPoller.confirm() }
                if !summary.playPurchasePushes.isEmpty { pushConfirmer.confirm(summary.playPurchasePushes) }
                scheduler.nudge()
                stateChanged()
            })
        poller = AppStoreNotificationPoller(
            settings: configured.polling, store: store, transport: transport, gate: scheduler, logger: logger, clock: clock,
            onCommitted: {
                scheduler.nudge()
                stateChanged()
            })
        control = ControlHandler(
            store: store, scheduler: scheduler, configPath: configPath, verifiers: configuration.verifiers, support: configured.support,
            logger: logger,
            liveWindow: ClusterTiming(leaseTime: configuration.state.leaseTime).liveWindow, ordersChanged: stateChanged
        ) { [events] in
            await withCheckedContinuation { continuation in
                let reply: @Sendable (Result<Int, ReloadFailure>) -> Void = { continuation.resume(returning: $0) }
                if case .terminated = events.yield(.reload(reply)) { reply(.failure(.stopping)) }
            }
        }
        do {
            let handler = control
            controlServer = try ControlSocketServer(path: configuration.control.socket, clock: clock) { line, peer in
                handler.handle(line, peer: peer)
            }
        } catch {
            throw StartupFailure(status: ExitStatus.failure, message: "cannot open the control socket: \(error)", errno: error.errno)
        }
    }

    static func ingestSettings(_ configuration: Configuration, _ notifications: NotificationFileReader) -> SpoolIngestor.Settings {
        var settings = SpoolIngestor.Settings(verifiers: configuration.verifiers, maxFileSize: configuration.spool.maxFileSize, notifications: notifications)
        settings.consumption = configuration.notifications.consumption
        settings.discovery = configuration.discovery
        return settings
    }

    /// `ConsumptionAnswer=on` with `CustomerConsented=no` is valid, but nothing is ever answered
    /// (DESIGN §5a): said once, at start and after a reload that sets it.
    func noteConsumptionWithoutConsent(_ configuration: Configuration) {
        let consumption = configuration.notifications.consumption
        guard consumption.answer && !consumption.customerConsented else { return }
        logger.notice(
            "[Notifications] ConsumptionAnswer=on but CustomerConsented=no: Apple accepts no consumption answer without the customer's consent, so CONSUMPTION_REQUEST notifications are recorded and not answered")
    }

    /// The daemon's long-running parts, in start order; they stop in reverse order: the control
    /// socket first (nothing new is asked), then the spool watch and pruning, the ingest (after
    /// the batch in hand), the scheduler (after the attempts in flight, up to `DrainTimeout=`),
    /// and last the metrics and `STATUS=` (their final numbers).
    func services() -> [any Service] {
        let (store, scheduler, ingestor, metrics, notifier, statusTrigger) = (store, scheduler, ingestor, metrics, notifier, statusTrigger)
        let (spoolEventStream, spoolEvents, abandonIngest) = (spoolEventStream, spoolEvents, abandonIngest)
        let drainTimeout = configuration.daemon.drainTimeout
        let controlServer = controlServer
        return [
            TaskService("status updates") {
                await statusTrigger.run { notifier.status(await Daemon.statusLine(store: store, scheduler: scheduler)) }
            },
            TaskService("metrics") {
                // Cancelled, it writes the final numbers.
                await metrics.run(MetricsPublisher.Sources(store: store, scheduler: scheduler, ingestor: ingestor))
            },
            ServiceClosure("scheduler", run: { await scheduler.run() }, stop: { await scheduler.stop(drainTimeout: drainTimeout) }),
            TaskService(
                "spool ingest",
                stop: { cancel in
                    ingestor.stop()
                    spoolEvents.finish()
                    // A store that is no longer the daemon's takes nothing in: the ingest would
                    // retry its commit for ever. The files stay in incoming/ for the next start.
                    if abandonIngest.isSet { cancel() }
                }
            ) {
                await ingestor.run(events: spoolEventStream)
            },
            pruning,
            poller,
            playPoller,
            pubSubPuller,
            pushConfirmer,
            spoolWatch,
            HeldService("control socket") { controlServer?.stop() },
        ]
    }

    /// Runs until SIGTERM or SIGINT (exit status 0), or until the store is lost or a part of the
    /// daemon fails (1); returns the exit status.
    public func run(signals: SignalStream) async -> Int32 {
        await run(signals: signals, alongside: [])
    }

    /// `alongside`: more parts to run with the daemon's own (tests make one fail).
    func run(signals: SignalStream, alongside: [any Service]) async -> Int32 {
        let forwarder = Task { [events, stream = signals.signals] in
            for await number in stream { events.yield(.signal(number)) }
        }
        defer { forwarder.cancel() }

        // Watched before READY=1, as the control socket listens already.
        spoolWatch.start()
        do {
            clockWatch = try WallClockWatch { [scheduler] in Task { await scheduler.clockChanged() } }
        } catch {
            logger.warning("cannot watch for wall-clock steps (\(error)); a step is noticed at the next due time")
        }
        await scheduler.setChangeObserver(stateChanged)
        if let interval = notifier.watchdogInterval {
            // From the scheduling loop itself: a wedged loop stops the pings and systemd
            // restarts the daemon.
            await scheduler.setHeartbeat(every: interval) { [notifier] in notifier.watchdog() }
        }
        // Orders another Kind= left waiting (changed while the daemon was stopped) are due now
        // when this one can use their proof; a reload does the same.
        await promoteWaiting(usableBy: configuration.verifiers)
        opened.startListening()
        let group = ServiceGroup(services() + alongside, logger: logger)
        let supervising = Task { [events] in
            do throws(ServiceGroup.UnexpectedEnd) {
                try await group.run()
            } catch {
                events.yield(.serviceFailed(error))
            }
        }

        let held: String
        do {
            let counts = try await store.reading { [store] in try store.countsByState() }
            held = Plural.count(counts.values.reduce(0, +), "order")
        } catch {
            held = "orders it cannot count now (\(error))"
        }
        logger.notice(
            "reconciled \(ReconcileVersion.current) started: spool \(layout.root), store \(store.location) with \(held), \(Self.verifiersLine(configuration))",
            id: .started)
        noteConsumptionWithoutConsent(configuration)
        notifier.ready(status: await statusLine())

        // Until SIGTERM; then the events already queued are answered (a reload with "stopping")
        // and the stream ends.
        var stopping = false
        var status = ExitStatus.success
        func beginStopping(_ reason: String) {
            control.beginStopping()
            notifier.stopping(status: reason)
            stopping = true
            group.shutdown()
            events.finish()
        }
        for await event in eventStream {
            switch event {
            case .reload(let reply) where stopping:
                reply(.failure(.stopping))
            case _ where stopping:
                continue
            case .signal(let number) where number == SIGTERM || number == SIGINT:
                logger.notice("received \(SignalStream.name(of: number)); stopping", id: .stopping)
                beginStopping("stopping: finishing the attempts in flight (DrainTimeout=\(TimeSpan.format(configuration.daemon.drainTimeout)))")
            case .storeLost(let reason):
                // Nothing more is written to it; systemd restarts the daemon on what the path
                // names now (Restart=on-failure).
                logger.critical("stopping: \(reason)", id: .storeLost, [.path: store.location])
                status = ExitStatus.failure
                abandonIngest.set()
                beginStopping("stopping: \(store.location) was replaced or changed underneath")
            case .serviceFailed(let failure):
                // The group has stopped the other parts already (and said so at crit); systemd
                // restarts the daemon (Restart=on-failure) instead of it running on half-alive.
                status = ExitStatus.failure
                beginStopping("stopping: \(failure)")
            case .signal(let number) where number == SIGHUP:
                _ = await reloadReporting()
            case .reload(let reply):
                reply(await reloadReporting().map { _ in control.generation.load(ordering: .relaxed) })
            case .signal:
                continue
            }
        }

        await supervising.value
        clockWatch = nil
        opened.stopListening()
        // Closing checkpoints SQLite's log (an fsync): on the store's thread, after its writes
        // (it throws nothing).
        _ = try? await store.writing { [store] in store.close() }
        if status == ExitStatus.success { logger.notice("stopped cleanly") }
        return status
    }

    /// `Kind=apple https://…` and `[GooglePlay] com.example.app`, for the start-up line.
    static func verifiersLine(_ configuration: Configuration) -> String {
        var parts: [String] = []
        if configuration.hasVerifier { parts.append("Kind=\(configuration.verifier.kind.rawValue) \(configuration.verifier.url.absoluteString)") }
        if configuration.hasGooglePlay { parts.append("[GooglePlay] \(configuration.googlePlay.packageNames.isEmpty ? "?" : configuration.googlePlay.packageNames.joined(separator: " "))") }
        return parts.joined(separator: ", ")
    }

    // MARK: - Status


    /// The `STATUS=` line: the counts an operator watches and the circuits.
    func statusLine() async -> String {
        await Self.statusLine(store: store, scheduler: scheduler)
    }

    static func statusLine(store: any OperableOrderStore, scheduler: Scheduler) async -> String {
        // On the store's reader queue: the store may be busy for seconds (another process
        // holding its lock), and the cooperative pool's few threads must stay free for the
        // scheduler.
        let read: Result<[OrderState: Int], any Error>
        do {
            read = .success(try await store.reading { try store.countsByState(in: ServiceStatusLine.countedStates) })
        } catch {
            read = .failure(error)
        }
        let live = await scheduler.status()
        let circuits = live.endpoints.map {
            ServiceStatusLine.Circuit(endpoint: $0.endpoint.rawValue, state: $0.circuit)
        }
        let counts: [OrderState: Int]
        switch read {
        case .success(let value): counts = value
        case .failure(let error):
            if StoreFailure.of(error) == .unavailable || live.storeUnreachableSince != nil {
                // Nothing is lost: spool files wait in incoming/, outcomes in memory, and the
                // scheduler retries with backoff.
                let since = live.storeUnreachableSince.map { " since \(RFC3339.format($0))" } ?? ""
                return "store unreachable\(since), retrying; " + ServiceStatusLine(counts: [:], circuits: circuits).description
            }
            return "cannot read the store: \(error)"
        }
        var line = ServiceStatusLine(counts: counts, circuits: circuits).description
        if let cluster = live.cluster { line += " nodes=\(cluster.liveNodes)" }
        if live.storeUnreachableSince != nil { line = "store unreachable, retrying; " + line }
        return line
    }

    // MARK: - Reload

    /// Makes `waiting` orders whose proof `verifiers` can use due now (at start, and after a
    /// reload changed them); a store error is logged, and the orders wait for the next chance.
    ///
    /// - Returns: how many orders became due.
    @discardableResult
    private func promoteWaiting(usableBy verifiers: ConfiguredVerifiers) async -> Int {
        do {
            let now = clock.now()
            let promoted = try await store.writing { [store] in try store.promoteWaiting(usableBy: verifiers, now: now) }
            if promoted > 0 { logger.notice("\(verifiers) can verify \(Plural.count(promoted, "waiting order")); they are due now") }
            return promoted
        } catch {
            logger.error(
                "cannot make the waiting orders \(verifiers) can verify due: \(error); they stay waiting until the next reload or start",
                [.reason: ReasonCode.storeFailure(StoreFailure.of(error)).rawValue])
            return 0
        }
    }

    /// A reload as the service manager sees it: `RELOADING=1` first, `READY=1` after, whether
    /// the new configuration was taken or kept out (the reason is logged).
    func reloadReporting() async -> Result<Configuration, ReloadFailure> {
        notifier.reloading()
        let result = await reload()
        noteConsumptionWithoutConsent(configuration)
        notifier.ready(status: await statusLine())
        return result
    }

    /// The parts a reload hands the new configuration to, in this order: the transport's trust
    /// anchors before anything that sends, the scheduler before the parts that feed it.
    var reloadables: [any Reloadable] {
        [transport, scheduler, escalations, ingestor, poller, playPoller, pubSubPuller, pushConfirmer, metrics, spoolWatch, pruning, control]
    }

    /// Re-reads the configuration and its secrets (SIGHUP, `reconcilectl reload`). A bad file, an
    /// unreadable secret, or a change to a key that needs a restart keeps the running
    /// configuration and says why.
    func reload() async -> Result<Configuration, ReloadFailure> {
        let next: Configuration
        do {
            next = try ConfigurationLoader.load(path: configPath)
        } catch {
            for problem in error.problems {
                logger.error("reload refused: \(problem)", id: .configurationError, [.path: problem.path])
            }
            return .failure(.invalid(error.description))
        }
        let changed = RestartOnlyKeys.changed(from: configuration, to: next)
        guard changed.isEmpty else {
            let names = changed.joined(separator: ", ")
            logger.error("reload refused: \(names) changed; these need a restart (systemctl restart reconciled)", id: .configurationError)
            return .failure(.needsRestart(changed))
        }
        let configured: VerificationFactory.Configured
        do {
            configured = try VerificationFactory.configured(for: next, environment: environment, transport: transport)
        } catch {
            for problem in error.problems {
                logger.error("reload refused: \(problem)", id: .configurationError, [.path: problem.path])
            }
            return .failure(.invalid(error.description))
        }
        let change = ConfigurationChange(previous: configuration, next: next, configured: configured)
        if next.notifications.consumption != configuration.notifications.consumption { noteConsumptionWithoutConsent(next) }
        configuration = next
        for part in reloadables { await part.reload(change) }
        // Orders another Kind= left waiting are due now when the new one can use their proof.
        if next.verifiers != change.previous.verifiers, await promoteWaiting(usableBy: next.verifiers) > 0 { scheduler.nudge() }
        let generation = control.generation.add(1, ordering: .relaxed).newValue
        logger.notice("reloaded the configuration from \(configPath) (generation \(generation))", id: .reloaded)
        return .success(next)
    }
}

/// Why a reload kept the old configuration.
public enum ReloadFailure: Error, Sendable, CustomStringConvertible {
    case invalid(String)
    case needsRestart([String])
    /// SIGTERM came first.
    case stopping

    public var description: String {
        switch self {
        case .invalid(let reason): "the new configuration is invalid:\n\(reason)"
        case .needsRestart(let keys): "\(keys.joined(separator: ", ")) changed; restart the daemon to apply"
        case .stopping: "reconciled is stopping; the configuration is read afresh when it starts again"
        }
    }
}
