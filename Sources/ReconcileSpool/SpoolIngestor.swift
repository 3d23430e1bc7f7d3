import CLinux
import Foundation
import Glibc
import ReconcileCore
import ReconcileCrypto
import ReconcileSystem
import Synchronization

/// What the ingest loop reacts to.
public enum SpoolEvent: Sendable, Hashable {
    /// Names that appeared in `incoming/`.
    case arrived([String])
    /// Read the whole of `incoming/` again (start-up, queue overflow, `RescanInterval=`).
    case rescan(reason: String)
    /// `incoming/` (or the spool) was removed: recreate it and rescan.
    case directoryGone
}

/// Takes spool files into the store: reads them safely, validates them, commits them in
/// batches (group commit: one transaction for many files), and only then deletes them; files it
/// cannot accept go to `rejected/` with their reason (DESIGN §3).
///
/// An actor on its own dispatch queue: reading files and committing with `synchronous=FULL`
/// block, and must not hold the cooperative threads. Each batch goes through three stages:
/// files are read, validated and hashed on all cores; the batch is committed in one
/// transaction; committed files are unlinked by a pool of threads while the next batch is read
/// (on filesystems mounted with `discard`, an unlink waits for the device).
public actor SpoolIngestor {
    /// What the ingestor needs from the configuration; reloadable.
    public struct Settings: Sendable, Hashable {
        public var verifierKind: VerifierKind
        public var maxFileSize: Int
        /// Files per transaction.
        public var batchSize: Int

        public init(verifierKind: VerifierKind, maxFileSize: Int, batchSize: Int = 512) {
            self.verifierKind = verifierKind
            self.maxFileSize = maxFileSize
            self.batchSize = batchSize
        }
    }

    /// Counts of what happened to spool files.
    public struct Summary: Sendable, Hashable {
        public var accepted = 0
        public var unchanged = 0
        public var proofReplaced = 0
        public var duplicates = 0
        public var rejected = 0
        /// Files left in `incoming/` because the store or the disk failed; retried later.
        public var deferred = 0

        public init() {}

        public var filesHandled: Int { accepted + unchanged + proofReplaced + duplicates + rejected }

        public static func += (lhs: inout Summary, rhs: Summary) {
            lhs.accepted += rhs.accepted
            lhs.unchanged += rhs.unchanged
            lhs.proofReplaced += rhs.proofReplaced
            lhs.duplicates += rhs.duplicates
            lhs.rejected += rhs.rejected
            lhs.deferred += rhs.deferred
        }
    }

    private let executor = DispatchQueueExecutor(label: "reconcile.ingest")
    public nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

    public let layout: SpoolLayout
    private let store: any OrderIngesting
    private let logger: Logger
    private let now: @Sendable () -> Date
    private let onCommitted: @Sendable (Summary) -> Void
    private let parser = OrderFileParser()
    private var settings: Settings
    private var incomingDescriptor: Int32?
    private let removals = BlockingWorkPool(threads: 8, name: "reconcile-unlink")
    private var unreported = Summary()
    private let totals = Mutex(Summary())

    /// Everything since start, batch by batch, for status and metrics; readable at any time,
    /// even while a long backlog is being read.
    public nonisolated var total: Summary { totals.withLock { $0 } }

    /// - Parameter onCommitted: called after each batch that handled files (stored orders, or
    ///   moved files to `rejected/`), with what it did, once ``total`` counts it: the scheduler
    ///   wakes for new due orders, the metrics file is refreshed.
    public init(
        layout: SpoolLayout, store: any OrderIngesting, settings: Settings, logger: Logger,
        now: @escaping @Sendable () -> Date = Date.init, onCommitted: @escaping @Sendable (Summary) -> Void = { _ in }
    ) {
        self.layout = layout
        self.store = store
        self.settings = settings
        self.logger = logger
        self.now = now
        self.onCommitted = onCommitted
    }

    deinit {
        removals.waitUntilIdle()
        if let incomingDescriptor { close(incomingDescriptor) }
    }

    /// Takes new settings (after a reload).
    public func apply(_ settings: Settings) {
        self.settings = settings
    }

    // MARK: - The loop

    /// Handles events until the stream ends or the task is cancelled. When the store or the
    /// disk fails, nothing is deleted; the loop backs off (1 s doubling to 30 s) and rescans
    /// until it succeeds.
    public func run(events: AsyncStream<SpoolEvent>) async {
        for await event in events {
            if Task.isCancelled { break }
            var summary: Summary
            switch event {
            case .arrived(let names):
                summary = process(names)
            case .rescan(let reason):
                logger.debug("rescanning \(layout.incoming) (\(reason))")
                summary = rescan()
            case .directoryGone:
                summary = recoverDirectory()
            }
            var delay = Duration.seconds(1)
            while summary.deferred > 0, !Task.isCancelled {
                logger.notice("\(Plural.count(summary.deferred, "spool file")) wait in \(layout.incoming); retrying in \(TimeSpan.format(delay))")
                try? await DeadlineTimer.shared.sleep(for: delay)
                delay = min(delay * 2, .seconds(30))
                summary = rescan()
            }
            reportSummary()
        }
        reportSummary()
    }

    // MARK: - Processing

    /// Reads every candidate name in `incoming/` (sorted, so a producer's later file for the
    /// same order is read after its earlier one) and processes them.
    public func rescan() -> Summary {
        do {
            let names = try FileSystem.listDirectory(descriptor: try incoming(), path: layout.incoming)
            return process(names.filter(SpoolLayout.isCandidate).sorted())
        } catch {
            logger.error("cannot list \(layout.incoming): \(error)", [.path: layout.incoming, .errno: String(error.errno)])
            closeIncoming()
            var summary = Summary()
            summary.deferred = 1
            return summary
        }
    }

    /// Processes names in batches of `batchSize`, one transaction each.
    public func process(_ names: [String]) -> Summary {
        var summary = Summary()
        var seen = Set<String>()
        let unique = names.filter { SpoolLayout.isCandidate($0) && seen.insert($0).inserted }
        var start = 0
        while start < unique.count {
            let end = min(start + settings.batchSize, unique.count)
            summary += processBatch(Array(unique[start..<end]))
            start = end
        }
        // Committed files of the last batches may still be being unlinked.
        removals.waitUntilIdle()
        unreported += summary
        return summary
    }

    private struct Read: Sendable {
        var name: String
        var candidate: IngestCandidate
        var identity: FileIdentity
    }

    private func processBatch(_ names: [String]) -> Summary {
        var summary = Summary()
        let directory: Int32
        do {
            directory = try incoming()
        } catch {
            logger.error("cannot open \(layout.incoming): \(error)", [.path: layout.incoming])
            summary.deferred = names.count
            return summary
        }
        var reads: [Read] = []
        var problems: [(String, OrderFileProblem)] = []
        for result in readAll(names, in: directory) {
            switch result {
            case .vanished: continue
            case .problem(let name, let problem): problems.append((name, problem))
            case .read(let read): reads.append(read)
            }
        }

        let time = now()
        if !reads.isEmpty {
            do {
                let outcomes = try store.ingest(reads.map(\.candidate), verifierKind: settings.verifierKind, now: time)
                var committed: [Read] = []
                for (read, outcome) in zip(reads, outcomes) {
                    summary += handle(outcome, of: read, time: time)
                    if outcome.isCommitted { committed.append(read) }
                }
                scheduleRemoval(of: committed, directory: directory)
            } catch {
                logger.error(
                    "cannot commit \(Plural.count(reads.count, "order")) to the store; the spool files stay in incoming/: \(error)",
                    id: .storeUnavailable, [.count: String(reads.count), .reason: StoreFailure.of(error).rawValue])
                summary.deferred += reads.count
            }
        }
        for (name, problem) in problems {
            summary += reject(name, problem: problem, orderID: nil, time: time)
        }
        totals.withLock { $0 += summary }
        if summary.filesHandled > 0 {
            onCommitted(summary)
        }
        return summary
    }

    /// The result of reading and validating one name.
    private enum ReadResult: Sendable {
        case read(Read)
        case problem(String, OrderFileProblem)
        case vanished
    }

    /// Reads, validates and hashes `names` on every core, keeping their order.
    private func readAll(_ names: [String], in directory: Int32) -> [ReadResult] {
        let reader = SpoolFileReader(maximumSize: settings.maxFileSize)
        let parser = parser
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
                    let submission: OrderSubmission
                    do throws(OrderFileProblem) {
                        submission = try parser.parse(bytes)
                    } catch {
                        return .problem(name, error)
                    }
                    let candidate = IngestCandidate(
                        submission: submission, raw: bytes, contentHash: SHA256.hexDigest(bytes), fileName: name)
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

    private func handle(_ outcome: IngestOutcome, of read: Read, time: Date) -> Summary {
        var summary = Summary()
        let orderID = read.candidate.submission.orderID
        switch outcome {
        case .conflict(let problem):
            return reject(read.name, problem: problem, orderID: orderID, time: time)
        case .accepted(let state):
            summary.accepted = 1
            logger.debug(
                "accepted order \(orderID) from \(read.name) as \(state)",
                [.orderID: orderID, .orderState: state.rawValue, .spoolFile: read.name])
        case .unchanged:
            summary.unchanged = 1
            logger.debug("\(read.name) repeats order \(orderID) exactly; nothing to do", [.orderID: orderID, .spoolFile: read.name])
        case .proofReplaced(let from, let to):
            summary.proofReplaced = 1
            logger.info(
                "new proof for order \(orderID) from \(read.name): \(from) → \(to)",
                [.orderID: orderID, .orderState: to.rawValue, .spoolFile: read.name, .reason: "proof_replaced"])
        case .duplicateIgnored(let state, let why):
            summary.duplicates = 1
            logger.info(
                "ignored \(read.name) for order \(orderID): \(why)", id: .duplicateIgnored,
                [.orderID: orderID, .orderState: state.rawValue, .spoolFile: read.name, .reason: "duplicate_ignored"])
        }
        return summary
    }

    /// Deletes a committed spool file, but only if its name still points to the inode that was
    /// read: a producer's new file under the same name is never lost.
    private static func removeCommitted(_ read: Read, directory: Int32, logger: Logger) {
        var info = stat()
        guard fstatat(directory, read.name, &info, AT_SYMLINK_NOFOLLOW) == 0 else { return }
        guard UInt64(info.st_dev) == read.identity.device, UInt64(info.st_ino) == read.identity.inode else {
            logger.notice(
                "\(read.name) was replaced after it was read; the new file will be read next",
                [.spoolFile: read.name])
            return
        }
        if unlinkat(directory, read.name, 0) != 0 && errno != ENOENT {
            logger.warning(
                "cannot delete committed spool file \(read.name): \(String(cString: strerror(errno))); reading it again is harmless",
                [.spoolFile: read.name, .errno: String(errno)])
        }
    }

    private func reject(_ name: String, problem: OrderFileProblem, orderID: String?, time: Date) -> Summary {
        var summary = Summary()
        do {
            let target = try Quarantine(layout: layout).reject(name, problem: problem, orderID: orderID, now: time)
            summary.rejected = 1
            logger.error(
                "rejected spool file \(name): \(problem.detail)", id: .fileRejected,
                [.spoolFile: name, .reason: problem.code.rawValue, .orderID: orderID, .path: "\(layout.rejected)/\(target)"])
        } catch {
            if error.isNotFound && !FileSystem.exists("\(layout.incoming)/\(name)") {
                return summary  // its producer removed it meanwhile
            }
            summary.deferred = 1
            logger.error(
                "cannot move \(name) to \(layout.rejected): \(error); it stays in incoming/",
                [.spoolFile: name, .reason: problem.code.rawValue, .errno: String(error.errno)])
        }
        return summary
    }

    // MARK: - Directory

    private func incoming() throws(SystemError) -> Int32 {
        if let incomingDescriptor { return incomingDescriptor }
        let descriptor = try FileSystem.openDirectory(layout.incoming)
        incomingDescriptor = descriptor
        return descriptor
    }

    private func closeIncoming() {
        removals.waitUntilIdle()
        if let incomingDescriptor { close(incomingDescriptor) }
        incomingDescriptor = nil
    }

    /// The spool went away under the daemon: recreate it with the DESIGN modes and read it
    /// again. The caller re-establishes the watch.
    private func recoverDirectory() -> Summary {
        closeIncoming()
        do {
            let created = try layout.prepare()
            logger.warning(
                "\(layout.incoming) was removed; recreated \(created.isEmpty ? "nothing (it is back)" : created.joined(separator: ", "))",
                [.path: layout.incoming])
        } catch {
            logger.error("\(layout.incoming) was removed and cannot be recreated: \(error)", [.path: layout.incoming])
            var summary = Summary()
            summary.deferred = 1
            return summary
        }
        return rescan()
    }

    // MARK: - Reporting

    /// Logs one `info` summary for everything since the last one (DESIGN §8: ingest at
    /// `debug`, a summary at `info`).
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
