import Foundation
import ReconcileCore
import ReconcileEngine
import ReconcileFoundation
import ReconcileSpool
import ReconcileStore
import ReconcileSystem

/// Keeps `[Daemon] MetricsFile=` up to date (DESIGN §8): after something changed (the scheduler
/// moved orders or a circuit, the spool ingest handled files, an operator acted, a reload), at
/// most once per `interval` (5 s), it collects a ``MetricsSnapshot`` from the store, the scheduler and the ingest,
/// and writes it atomically, unless the text is unchanged. With no change for a `heartbeat` (a
/// minute) it is rewritten all the same, so that its modification time (node_exporter's
/// `node_textfile_mtime_seconds`) tells a live daemon from a dead one (the "no fresh metrics
/// file" alert) and the oldest pending order's age stays current. With no file, no timer.
///
/// A failure to read the store or write the file is a warning (once per run of failures, and a
/// notice when it works again); it never stops verification. `MetricsFile=` may change on
/// reload (``retarget(_:)``); with none set the publisher does nothing.
///
/// An actor on its own dispatch queue: the store read and the write with `fsync` block.
actor MetricsPublisher {
    /// Where the numbers come from.
    struct Sources: Sendable {
        var store: any OperableOrderStore
        var scheduler: Scheduler
        var ingestor: SpoolIngestor
    }

    /// How often the file is written at most.
    static let defaultInterval: Duration = .seconds(5)
    /// How often the file is written at least.
    static let defaultHeartbeat: Duration = .seconds(60)

    private let executor = DispatchQueueExecutor(label: "reconcile.metrics")
    nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

    private let trigger: ThrottledTrigger
    private let heartbeat: Duration
    /// When the file was last written: a heartbeat later it is rewritten even if unchanged.
    private var lastWritten: ContinuousClock.Instant?
    private let logger: Logger
    private let startedAt: Date
    private let clock: any DaemonClock
    private var writer: MetricsFileWriter?
    /// What the last failure reported was about (the step and errno, not the message, which
    /// names a temporary file of its own each time), so that a failure repeated at every change
    /// is logged once.
    private var failure: String?
    /// How many times the numbers were collected (and written, unless unchanged or failing):
    /// lets tests tell a quiet publisher from a busy one.
    private(set) var publications = 0

    /// - Parameter path: `MetricsFile=`, or `nil` (off).
    init(
        path: String?, logger: Logger, clock: any DaemonClock, interval: Duration = MetricsPublisher.defaultInterval,
        heartbeat: Duration = MetricsPublisher.defaultHeartbeat
    ) {
        self.writer = path.map(MetricsFileWriter.init(path:))
        self.logger = logger
        self.clock = clock
        self.startedAt = clock.now()
        self.heartbeat = heartbeat
        // With no file to write, nothing wakes the daemon but changes.
        self.trigger = ThrottledTrigger(interval: interval, atLeastEvery: path == nil ? nil : heartbeat, clock: clock)
    }

    /// Something the metrics show changed: the file is written soon (at once, or when the
    /// pause after the last write ends). Cheap; call it from anywhere.
    nonisolated func changed() {
        trigger.changed()
    }

    /// After a reload: writes to `path` from now on (`nil`: stops writing), and soon (the reload
    /// may have changed endpoints and circuits). A file given up is removed, so that
    /// node_exporter does not go on exporting numbers nobody updates.
    func retarget(_ path: String?) {
        defer { changed() }
        guard path != writer?.path else { return }
        if var old = writer, old.removeWritten() {
            logger.notice("removed the metrics file \(old.path) (MetricsFile= changed)", [.path: old.path])
        }
        writer = path.map(MetricsFileWriter.init(path:))
        lastWritten = nil
        trigger.runAtLeastEvery(path == nil ? nil : heartbeat)
        failure = nil
    }

    /// Writes the file at start and after changes until the task is cancelled; cancelling
    /// writes it a last time, so call it after the scheduler has stopped to leave the final
    /// numbers behind.
    func run(_ sources: Sources) async {
        changed()
        await trigger.run { await self.publish(sources) }
    }

    /// Collects and writes once (unless the text is unchanged).
    func publish(_ sources: Sources) async {
        guard writer != nil else { return }
        defer { publications += 1 }
        let status = await sources.scheduler.status()
        let summary: StoreSummary
        do {
            summary = try sources.store.summary()
        } catch {
            report("cannot read the store for the metrics file: \(error); the file keeps its previous numbers", kind: "store \(error)")
            return
        }
        let snapshot = Self.snapshot(
            summary: summary, status: status, ingest: sources.ingestor.total, startedAt: startedAt, takenAt: clock.now(),
            discoveredEvents: DiscoveryCounters.process.snapshot)
        write(PrometheusExposition.render(snapshot.families))
    }

    /// Writes `text` (if a file is configured), reporting failures and recovery.
    func write(_ text: String) {
        guard var current = writer else { return }
        let now = clock.instant()
        do {
            let quiet = lastWritten.map { now - $0 >= heartbeat } ?? true
            if try current.write(text, evenIfUnchanged: quiet) { lastWritten = now }
            writer = current
            if failure != nil {
                logger.notice("the metrics file \(current.path) is written again", [.path: current.path])
                failure = nil
            }
        } catch {
            writer = current
            report(
                "\(error); verification goes on, the file is tried again at the next change",
                kind: "\(error.underlying.operation) \(error.underlying.errno)")
        }
    }

    private func report(_ message: String, kind: String) {
        guard kind != failure else { return }
        failure = kind
        logger.warning(message, [.path: writer?.path])
    }

    // MARK: - Collecting

    /// The snapshot the daemon's parts make together.
    static func snapshot(
        summary: StoreSummary, status: SchedulerStatus, ingest: SpoolIngestor.Summary, startedAt: Date, takenAt: Date,
        discoveredEvents: [DiscoveryCounters.Key: Int] = [:]
    ) -> MetricsSnapshot {
        let counters = status.counters
        var snapshot = MetricsSnapshot(
            version: ReconcileVersion.current, startedAt: startedAt, takenAt: takenAt, ordersByState: summary.counts,
            oldestPendingReceivedAt: summary.oldestPendingReceivedAt, attemptsInFlight: status.inFlight,
            attemptsStarted: counters.attemptsStarted, outcomes: counters.outcomes,
            transitions: [
                .finished: counters.finished, .rejected: counters.rejected, .escalated: counters.escalated, .expired: counters.expired,
                .pending: counters.retried,
            ],
            circuits: status.endpoints.map { endpoint in
                MetricsSnapshot.Circuit(
                    endpoint: endpoint.endpoint, state: MetricsSnapshot.CircuitState(rawValue: endpoint.circuit) ?? .open,
                    openings: endpoint.openings, pausedUntil: endpoint.pausedUntil)
            },
            requestDurations: status.requestDurations,
            spoolFiles: [
                .accepted: ingest.accepted, .unchanged: ingest.unchanged, .proofReplaced: ingest.proofReplaced,
                .duplicate: ingest.duplicates, .rejected: ingest.rejected,
            ])
        snapshot.outbox = summary.outbox
        snapshot.unmatchedNotifications = summary.unmatchedNotifications
        snapshot.discovered = summary.discovered
        snapshot.discoveredEvents = discoveredEvents
        return snapshot
    }
}
