import CLinux
import Foundation
import Glibc
import ReconcileCore
import ReconcileCrypto
import ReconcileFoundation
import ReconcileSystem
import Synchronization

/// Takes spool files into the store: reads them safely, validates them, commits them in
/// batches (group commit: one transaction for many files), and only then deletes them; files it
/// cannot accept go to `rejected/` with their reason (DESIGN §3).
///
/// An actor on its own dispatch queue: reading and unlinking files block, and must not hold the
/// cooperative threads. Each batch goes through three stages: files are read, validated and
/// hashed on all cores; the batch is committed in one transaction, on the store's writer
/// thread, awaited; committed files are unlinked by a pool of threads while the next batch is
/// read (on filesystems mounted with `discard`, an unlink waits for the device). One caller at
/// a time: the loop of ``run(events:)`` (or a test, or the benchmark, without the loop).
///
/// (Longer than most files: the loop, the three stages and the directory checks share the
/// actor's state, and the order of read, commit, unlink and quarantine is easiest to review
/// top to bottom in one place.)
public actor SpoolIngestor {
    /// What the ingestor needs from the configuration; reloadable.
    public struct Settings: Sendable {
        /// Decide which new orders can be verified now (`pending`) and which wait.
        public var verifiers: ConfiguredVerifiers
        public var maxFileSize: Int
        /// Files per transaction.
        public var batchSize: Int
        /// Verifies store notification files (DESIGN §5a).
        public var notifications: NotificationFileReader
        /// How a `CONSUMPTION_REQUEST` is answered (`[Notifications] ConsumptionAnswer=`, …).
        public var consumption: ConsumptionPolicy = .off
        /// `[Discovery]`: what a purchase a notification reports on its own does (DESIGN §5b).
        public var discovery = DiscoverySettings()
        /// The `info` summary ("accepted N new orders …") comes at once after a quiet spell,
        /// then at most once per this interval however many inotify batches a drop makes.
        public var summaryInterval: Duration = .seconds(10)

        public init(
            verifiers: ConfiguredVerifiers, maxFileSize: Int, batchSize: Int = 512,
            notifications: NotificationFileReader = NotificationFileReader(appStore: nil)
        ) {
            self.verifiers = verifiers
            self.maxFileSize = maxFileSize
            self.batchSize = batchSize
            self.notifications = notifications
        }

        /// With `[Verifier] Kind=kind` only.
        public init(verifierKind: VerifierKind, maxFileSize: Int, batchSize: Int = 512) {
            self.init(verifiers: ConfiguredVerifiers(kind: verifierKind), maxFileSize: maxFileSize, batchSize: batchSize)
        }
    }

    /// Counts of what happened to spool files.
    public struct Summary: Sendable, Hashable {
        public var accepted = 0
        public var unchanged = 0
        public var proofReplaced = 0
        public var duplicates = 0
        /// Store notifications taken in (a repeated one counts in ``duplicates``).
        public var notifications = 0
        public var rejected = 0
        /// Files left in `incoming/` because the store or the disk failed; retried later.
        public var deferred = 0
        /// New Pub/Sub pushes of voided purchases taken in: Google Play's voided purchases list
        /// is to be read now to confirm them (DESIGN §5a).
        public var playVoidedPushes = 0
        /// New Pub/Sub pushes of one-time purchases taken in (with `[Discovery]` on): Google is
        /// to be asked about each purchase (DESIGN §5b).
        public var playPurchasePushes: [PlayNotification] = []

        public init() {}

        public var filesHandled: Int { accepted + unchanged + proofReplaced + duplicates + notifications + rejected }

        /// The counts alone, without ``playPurchasePushes``: what the running totals keep.
        public var counts: Summary {
            var counts = self
            counts.playPurchasePushes = []
            return counts
        }

        public static func += (lhs: inout Summary, rhs: Summary) {
            lhs.accepted += rhs.accepted
            lhs.unchanged += rhs.unchanged
            lhs.proofReplaced += rhs.proofReplaced
            lhs.duplicates += rhs.duplicates
            lhs.notifications += rhs.notifications
            lhs.rejected += rhs.rejected
            lhs.deferred += rhs.deferred
            lhs.playVoidedPushes += rhs.playVoidedPushes
            lhs.playPurchasePushes += rhs.playPurchasePushes
        }
    }

    private let executor = DispatchQueueExecutor(label: "reconcile.ingest")
    public nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

    public let layout: SpoolLayout
    /// Batches commit on the store's writer thread, awaited (``SerializedStore``).
    private let store: any OrderIngesting & SerializedStore
    private let logger: Logger
    private let clock: any DaemonClock
    private let onCommitted: @Sendable (Summary) -> Void
    private let parser = OrderFileParser()
    private var settings: Settings
    private let directories: SpoolDirectories
    /// The problem last logged for each directory that could not be used: logged once, not at
    /// every retry; cleared (with a notice) when the directory is usable again.
    private var directoryProblems: [SpoolDirectories.Subdirectory: SpoolDirectoryProblem] = [:]
    private let quarantine = Quarantine()
    private let removals = BlockingWorkPool(threads: 8, name: "reconcile-unlink")
    private var unreported = Summary()
    private let totals = Mutex(Summary())
    private let stopRequested = Atomic<Bool>(false)
    /// The running loop's own input, for ``stop()`` to wake it.
    private let loopInput = Mutex<AsyncStream<Step>.Continuation?>(nil)

    /// Everything since start, batch by batch, for status and metrics; readable at any time,
    /// even while a long backlog is being read.
    public nonisolated var total: Summary { totals.withLock { $0 } }

    /// - Parameter onCommitted: called after each batch that handled files (stored orders, or
    ///   moved files to `rejected/`), with what it did, once ``total`` counts it: the scheduler
    ///   wakes for new due orders, the metrics file is refreshed.
    public init(
        layout: SpoolLayout, store: any OrderIngesting & SerializedStore, settings: Settings, logger: Logger,
        clock: any DaemonClock, onCommitted: @escaping @Sendable (Summary) -> Void = { _ in }
    ) {
        self.layout = layout
        self.store = store
        self.settings = settings
        self.logger = logger
        self.clock = clock
        self.onCommitted = onCommitted
        directories = SpoolDirectories(layout: layout)
    }

    deinit {
        removals.waitUntilIdle()
    }

    /// Takes new settings (after a reload).
    public func apply(_ settings: Settings) {
        self.settings = settings
    }

    /// Asks the ingest to stop (SIGTERM): ``run(events:)`` returns after the batch in hand, its
    /// retries cancelled; files not yet read stay in `incoming/` for the next start.
    public nonisolated func stop() {
        stopRequested.store(true, ordering: .relaxed)
        loopInput.withLock { $0 }?.yield(.end)
    }

    private nonisolated var isStopping: Bool { stopRequested.load(ordering: .relaxed) }

    // MARK: - The loop

    /// What the loop handles: the caller's events, its own retries, and the end.
    private enum Step: Sendable {
        case event(SpoolEvent)
        case retry
        /// The summary interval after the last summary is over.
        case summarize
        case end
    }

    /// Handles events until the stream ends, ``stop()`` is called or the task is cancelled.
    ///
    /// When files must wait (the store or the disk failed, a spool directory is unusable),
    /// nothing is deleted; a rescan is due after a delay (1 s doubling to 30 s) until one
    /// succeeds. Events keep being handled meanwhile — a new file need not wait for the retry —
    /// and the end of the stream or a stop request ends the loop at once, retry or not.
    public func run(events: AsyncStream<SpoolEvent>) async {
        let (steps, input) = AsyncStream<Step>.makeStream()
        loopInput.withLock { $0 = input }
        if isStopping { input.yield(.end) }
        let forwarding = Task {
            for await event in events { input.yield(.event(event)) }
            input.yield(.end)
        }
        var retry: Task<Void, Never>?
        var delay = Duration.seconds(1)
        var lastSummary: ContinuousClock.Instant?
        var summarizing: Task<Void, Never>?
        loop: for await step in steps {
            if Task.isCancelled || isStopping { break }
            let summary: Summary
            var wholeSpool = true
            switch step {
            case .end:
                break loop
            case .retry:
                retry = nil
                summary = await rescan()
            case .summarize:
                summarizing = nil
                summary = Summary()
                wholeSpool = false
            case .event(.arrived(let names)):
                wholeSpool = false
                summary = await process(names)
            case .event(.rescan(let reason)):
                logger.debug("rescanning \(layout.incoming) (\(reason))")
                summary = await rescan()
            case .event(.overflow):
                logger.notice(
                    "the inotify event queue overflowed, so new names in \(layout.incoming) may have been missed; reading the whole directory",
                    [.path: layout.incoming])
                summary = await rescan()
            case .event(.directoryGone):
                summary = await recoverDirectory()
            }
            if summary.deferred > 0 {
                if retry == nil && !isStopping {
                    logger.notice(
                        "\(Plural.count(summary.deferred, "spool file")) wait in \(layout.incoming); retrying in \(TimeSpan.format(delay))")
                    retry = Task { [delay, clock] in
                        try? await clock.sleep(for: delay)
                        if !Task.isCancelled { input.yield(.retry) }
                    }
                    delay = min(delay * 2, .seconds(30))
                }
            } else if wholeSpool {
                // Everything in incoming/ was read: nothing waits.
                retry?.cancel()
                retry = nil
                delay = .seconds(1)
            }
            // One summary per interval: at once after a quiet spell, else when the interval ends.
            if unreported.filesHandled > 0 && summarizing == nil {
                let now = clock.instant()
                if let lastSummary, now < lastSummary + settings.summaryInterval {
                    summarizing = Task { [clock, settings] in
                        try? await clock.sleep(until: lastSummary + settings.summaryInterval)
                        if !Task.isCancelled { input.yield(.summarize) }
                    }
                } else {
                    reportSummary()
                    lastSummary = now
                }
            }
        }
        summarizing?.cancel()
        retry?.cancel()
        forwarding.cancel()
        loopInput.withLock { $0 = nil }
        input.finish()
        reportSummary()
    }

    // MARK: - Processing

    /// Reads every candidate name in `incoming/` (sorted by bytes, so a producer's later file
    /// for the same order is read after its earlier one) and processes them.
    public func rescan() async -> Summary {
        guard let directory = directory(.incoming) else { return Self.waiting(1) }
        do {
            let names = try FileSystem.listDirectoryEntries(descriptor: directory, path: layout.incoming)
            return await process(names.map(SpoolFileName.init).filter(\.isCandidate).sorted())
        } catch {
            logger.error("cannot list \(layout.incoming): \(error)", [.path: layout.incoming, .errno: String(error.errno)])
            directories.close(.incoming)
            return Self.waiting(1)
        }
    }

    /// Processes names in batches of `batchSize`, one transaction each. Names are bytes: two
    /// that are the same text in other Unicode forms are two files; a name repeated in `names`
    /// is read once.
    public func process(_ names: [SpoolFileName]) async -> Summary {
        var summary = Summary()
        var seen = Set<SpoolFileName>()
        let unique = names.filter { $0.isCandidate && seen.insert($0).inserted }
        guard !unique.isEmpty else { return summary }
        guard let directory = directory(.incoming) else { return Self.waiting(unique.count) }
        var start = 0
        while start < unique.count && !isStopping {
            let end = min(start + settings.batchSize, unique.count)
            summary += await processBatch(Array(unique[start..<end]), in: directory)
            start = end
        }
        // Committed files of the last batches may still be being unlinked.
        removals.waitUntilIdle()
        unreported += summary.counts
        return summary
    }

    private static func waiting(_ count: Int) -> Summary {
        var summary = Summary()
        summary.deferred = count
        return summary
    }

    private struct Read: Sendable {
        var name: SpoolFileName
        var candidate: IngestCandidate
        var identity: FileIdentity
    }

    /// A verified store notification file.
    private struct NotificationRead: Sendable {
        var name: SpoolFileName
        var notification: StoreNotification
        var identity: FileIdentity
        /// A Pub/Sub push of a voided purchase: confirmed by reading the list.
        var isPlayVoided = false
        /// The Pub/Sub push it is, if it is one.
        var push: PlayNotification?
    }

    private func processBatch(_ names: [SpoolFileName], in directory: Int32) async -> Summary {
        var summary = Summary()
        var reads: [Read] = []
        var notifications: [NotificationRead] = []
        var problems: [(SpoolFileName, OrderFileProblem)] = []
        for result in readAll(names, in: directory) {
            switch result {
            case .vanished: continue
            case .problem(let name, let problem): problems.append((name, problem))
            case .read(let read): reads.append(read)
            case .notification(let read): notifications.append(read)
            }
        }

        let time = clock.now()
        if !reads.isEmpty {
            do {
                let (candidates, verifiers) = (reads.map(\.candidate), settings.verifiers)
                let outcomes = try await store.writing { [store] in try store.ingest(candidates, verifiers: verifiers, now: time) }
                var committed: [Read] = []
                for (read, outcome) in zip(reads, outcomes) {
                    summary += handle(outcome, of: read, time: time, from: directory)
                    if outcome.isCommitted { committed.append(read) }
                }
                scheduleRemoval(of: committed, directory: directory)
            } catch {
                logger.error(
                    "cannot commit \(Plural.count(reads.count, "order")) to the store; the spool files stay in incoming/: \(error)",
                    id: .storeUnavailable, [.count: String(reads.count), .reason: ReasonCode.storeFailure(StoreFailure.of(error)).rawValue])
                summary.deferred += reads.count
            }
        }
        if !notifications.isEmpty {
            summary += await ingest(notifications, time: time, from: directory)
        }
        for (name, problem) in problems {
            summary += reject(name, problem: problem, orderID: nil, time: time, from: directory)
        }
        if summary.rejected > 0, let rejected = self.directory(.rejected) {
            // Once for the batch: each reason was synced before its file moved.
            if fsync(rejected) != 0 {
                logger.warning("cannot sync \(layout.rejected): \(String(cString: strerror(errno)))", [.path: layout.rejected, .errno: String(errno)])
            }
        }
        // The totals are counts: the pushes (and their tokens) go to onCommitted only.
        totals.withLock { $0 += summary.counts }
        if summary.filesHandled > 0 {
            onCommitted(summary)
        }
        return summary
    }

    /// The result of reading and validating one name.
    private enum ReadResult: Sendable {
        case read(Read)
        case notification(NotificationRead)
        case problem(SpoolFileName, OrderFileProblem)
        case vanished
    }

    /// Commits verified notifications in one transaction, logs what each did, deletes their files.
    private func ingest(_ reads: [NotificationRead], time: Date, from directory: Int32) async -> Summary {
        var summary = Summary()
        // In the order the store signed them, not the files' names: a refund before its reversal.
        let reads = reads.enumerated().sorted { ($0.element.notification.signedAt ?? .distantPast, $0.offset) < ($1.element.notification.signedAt ?? .distantPast, $1.offset) }
            .map(\.element)
        do {
            let (notifications, consumption, discovery) = (reads.map(\.notification), settings.consumption, settings.discovery)
            let outcomes = try await store.writing { [store] in
                try store.ingestNotifications(notifications, consumption: consumption, discovery: discovery, now: time)
            }
            for (read, outcome) in zip(reads, outcomes) {
                NotificationJournal.report(
                    outcome, of: read.notification, via: "from spool file \(read.name.escaped)", spoolFile: read.name.escaped, logger: logger)
                if case .duplicate = outcome {
                    summary.duplicates += 1
                } else {
                    summary.notifications += 1
                    if read.isPlayVoided { summary.playVoidedPushes += 1 }
                    if let push = read.push, case .oneTimeProduct(1, _, _) = push.kind, settings.discovery.mode != .off {
                        summary.playPurchasePushes.append(push)
                    }
                }
            }
            let logger = logger
            removals.submit {
                for read in reads { Self.removeCommitted(name: read.name, identity: read.identity, directory: directory, logger: logger) }
            }
        } catch {
            logger.error(
                "cannot commit \(Plural.count(reads.count, "store notification")) to the store; the spool files stay in incoming/: \(error)",
                id: .storeUnavailable, [.count: String(reads.count), .reason: ReasonCode.storeFailure(StoreFailure.of(error)).rawValue])
            summary.deferred += reads.count
        }
        return summary
    }

    /// Reads, validates and hashes `names` on every core, keeping their order.
    private func readAll(_ names: [SpoolFileName], in directory: Int32) -> [ReadResult] {
        let reader = SpoolFileReader(maximumSize: settings.maxFileSize)
        let parser = parser
        let notifications = settings.notifications
        let workers = max(1, min(ProcessInfo.processInfo.activeProcessorCount, names.count / 16))
        let chunk = (names.count + workers - 1) / workers
        let parts = Mutex<[Int: [ReadResult]]>([:])
        DispatchQueue.concurrentPerform(iterations: workers) { worker in
            let slice = names[min(worker * chunk, names.count)..<min((worker + 1) * chunk, names.count)]
            let results = slice.map { name -> ReadResult in
                switch reader.read(name, in: directory) {
                case .vanished:
                    return .vanished
                case .problem(let problem):
                    return .problem(name, problem)
                case .contents(let bytes, let identity):
                    let document = SpoolDocument.classify(bytes)
                    if document == .playNotification {
                        do throws(OrderFileProblem) {
                            let (push, notification) = try notifications.readPlayPush(bytes)
                            return .notification(NotificationRead(
                                name: name, notification: notification, identity: identity, isPlayVoided: push.isVoided, push: push))
                        } catch {
                            return .problem(name, error)
                        }
                    }
                    if document != .order {
                        do throws(OrderFileProblem) {
                            let notification = try notifications.read(bytes, kind: document, now: clock.now())
                            return .notification(NotificationRead(name: name, notification: notification, identity: identity))
                        } catch {
                            return .problem(name, error)
                        }
                    }
                    let submission: OrderSubmission
                    do throws(OrderFileProblem) {
                        submission = try parser.parse(bytes)
                    } catch {
                        return .problem(name, error)
                    }
                    let candidate = IngestCandidate(
                        submission: submission, raw: bytes, contentHash: SHA256.hexDigest(bytes), fileName: name.escaped)
                    return .read(Read(name: name, candidate: candidate, identity: identity))
                }
            }
            parts.withLock { $0[worker] = results }
        }
        return parts.withLock { parts in (0..<workers).flatMap { parts[$0] ?? [] } }
    }

    /// Hands committed files to the removal threads, in small groups.
    private func scheduleRemoval(of reads: [Read], directory: Int32) {
        let logger = logger
        var start = 0
        while start < reads.count {
            let group = Array(reads[start..<min(start + 32, reads.count)])
            removals.submit {
                for read in group { Self.removeCommitted(read, directory: directory, logger: logger) }
            }
            start += 32
        }
    }

    private func handle(_ outcome: IngestOutcome, of read: Read, time: Date, from directory: Int32) -> Summary {
        var summary = Summary()
        let orderID = read.candidate.submission.orderID
        let shown = read.name.escaped
        switch outcome {
        case .conflict(let problem):
            return reject(read.name, problem: problem, orderID: orderID, time: time, from: directory)
        case .accepted(let state):
            summary.accepted = 1
            logger.debug(
                "accepted order \(orderID) from \(shown) as \(state)",
                [.orderID: orderID, .orderState: state.rawValue, .spoolFile: shown])
        case .unchanged:
            summary.unchanged = 1
            logger.debug("\(shown) repeats order \(orderID) exactly; nothing to do", [.orderID: orderID, .spoolFile: shown])
        case .proofReplaced(let from, let to):
            summary.proofReplaced = 1
            logger.info(
                "new proof for order \(orderID) from \(shown): \(from) → \(to)",
                [.orderID: orderID, .orderState: to.rawValue, .spoolFile: shown, .reason: ReasonCode.proofReplaced.rawValue])
        case .duplicateIgnored(let state, let why):
            summary.duplicates = 1
            logger.info(
                "ignored \(shown) for order \(orderID): \(why)", id: .duplicateIgnored,
                [.orderID: orderID, .orderState: state.rawValue, .spoolFile: shown, .reason: ReasonCode.duplicateIgnored.rawValue])
        }
        return summary
    }

    /// Deletes a committed spool file, but only if its name still points to the inode that was
    /// read: a producer's new file under the same name is never lost.
    private static func removeCommitted(_ read: Read, directory: Int32, logger: Logger) {
        removeCommitted(name: read.name, identity: read.identity, directory: directory, logger: logger)
    }

    private static func removeCommitted(name: SpoolFileName, identity: FileIdentity, directory: Int32, logger: Logger) {
        var info = stat()
        guard name.withCString({ fstatat(directory, $0, &info, AT_SYMLINK_NOFOLLOW) }) == 0 else { return }
        guard FileIdentity(info) == identity else {
            logger.notice(
                "\(name.escaped) was replaced after it was read; the new file will be read next",
                [.spoolFile: name.escaped])
            return
        }
        if name.withCString({ unlinkat(directory, $0, 0) }) != 0 && errno != ENOENT {
            logger.warning(
                "cannot delete committed spool file \(name.escaped): \(String(cString: strerror(errno))); reading it again is harmless",
                [.spoolFile: name.escaped, .errno: String(errno)])
        }
    }

    private func reject(_ name: SpoolFileName, problem: OrderFileProblem, orderID: String?, time: Date, from incoming: Int32) -> Summary {
        var summary = Summary()
        let shown = name.escaped
        guard let rejected = directory(.rejected) else { return Self.waiting(1) }
        do {
            let target = try quarantine.reject(name, from: incoming, into: rejected, problem: problem, orderID: orderID, now: time, syncing: false)
            summary.rejected = 1
            logger.error(
                "rejected spool file \(shown): \(problem.detail)", id: .fileRejected,
                [.spoolFile: shown, .reason: problem.code.rawValue, .orderID: orderID, .path: "\(layout.rejected)/\(target.escaped)"])
        } catch {
            var info = stat()
            if error.isNotFound && name.withCString({ fstatat(incoming, $0, &info, AT_SYMLINK_NOFOLLOW) }) != 0 {
                return summary  // its producer removed it meanwhile
            }
            summary.deferred = 1
            logger.error(
                "cannot move \(shown) to \(layout.rejected): \(error); it stays in incoming/",
                [.spoolFile: shown, .reason: problem.code.rawValue, .errno: String(error.errno)])
        }
        return summary
    }

    // MARK: - Directories

    /// A spool directory's descriptor, checked to be the directory its path names now (opened
    /// afresh if it was replaced, re-created if it is missing). `nil` when it cannot be used — a
    /// symlink, not a directory, someone else's — which is logged at `err` once, until it is
    /// usable again.
    private func directory(_ subdirectory: SpoolDirectories.Subdirectory) -> Int32? {
        // A reopened incoming/ closes the old descriptor: no removal may still be using it.
        if subdirectory == .incoming { removals.waitUntilIdle() }
        let path = directories.path(subdirectory)
        var result: (descriptor: Int32, reopened: Bool)
        do {
            result = try directories.open(subdirectory)
        } catch let problem where problem.isMissing {
            // Removed (with the spool, perhaps): make what is missing, with the DESIGN modes.
            do {
                let created = try layout.prepare()
                if !created.isEmpty { logger.warning("\(path) was missing; recreated \(created.joined(separator: ", "))", [.path: path]) }
                result = try directories.open(subdirectory)
            } catch {
                noteProblem(subdirectory, error as? SpoolDirectoryProblem ?? .system(error as? SystemError ?? SystemError(errno: EIO, operation: "mkdir", path: path)))
                return nil
            }
        } catch {
            noteProblem(subdirectory, error)
            return nil
        }
        if directoryProblems.removeValue(forKey: subdirectory) != nil {
            logger.notice("\(path) is a directory of the spool again; using it", [.path: path])
        } else if result.reopened {
            logger.notice("\(path) was replaced; reading the directory that is there now", [.path: path])
        }
        return result.descriptor
    }

    private func noteProblem(_ subdirectory: SpoolDirectories.Subdirectory, _ problem: SpoolDirectoryProblem) {
        guard directoryProblems[subdirectory] != problem else { return }
        directoryProblems[subdirectory] = problem
        let files = subdirectory == .rejected ? "files to quarantine stay in incoming/" : "spool files wait"
        logger.error(
            "\(problem); \(files) until it is usable", id: .spoolDirectoryRefused,
            [.path: problem.path, .errno: problem.errno.map(String.init)])
    }

    /// The spool went away or was replaced under the daemon: make what is missing (with the
    /// DESIGN modes) and read it again. The caller re-establishes the watch.
    private func recoverDirectory() async -> Summary {
        do {
            let created = try layout.prepare()
            logger.warning(
                "\(layout.incoming) was removed or replaced; recreated \(created.isEmpty ? "nothing (it is there)" : created.joined(separator: ", "))",
                [.path: layout.incoming])
        } catch {
            logger.error("\(layout.incoming) was removed and cannot be recreated: \(error)", [.path: layout.incoming])
            return Self.waiting(1)
        }
        return await rescan()
    }

    // MARK: - Reporting

    /// Logs one `info` summary for everything since the last one (DESIGN §8: ingest at
    /// `debug`, a summary at `info`, at most once per `summaryInterval`).
    private func reportSummary() {
        let summary = unreported
        unreported = Summary()
        guard summary.filesHandled > 0 else { return }
        var parts: [String] = []
        if summary.unchanged > 0 { parts.append("\(summary.unchanged) unchanged") }
        if summary.proofReplaced > 0 { parts.append("\(summary.proofReplaced) with new proof") }
        if summary.duplicates > 0 { parts.append("\(summary.duplicates) duplicates ignored") }
        if summary.rejected > 0 { parts.append("\(summary.rejected) rejected") }
        let detail = parts.isEmpty ? "" : " (\(parts.joined(separator: ", ")))"
        logger.info(
            "accepted \(Plural.count(summary.accepted, "new order")) from \(Plural.count(summary.filesHandled, "spool file"))\(detail)",
            id: .ordersAccepted,
            [.count: String(summary.accepted)])
    }
}
