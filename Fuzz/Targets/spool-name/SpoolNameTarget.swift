// Fuzz target: spool file names (bytes) through the whole ingest path — the real SpoolIngestor
// on a real spool in a temporary directory (on /dev/shm when there is one), with an in-memory
// store — then the invariant: every name ends stored, rejected with a reason, or ignored by the
// documented rule (a leading `.` or a `.tmp` ending).
//
// Input: entries separated by NUL bytes (a name can hold any byte but NUL); in each, the first
// byte chooses what the file is (its value mod 4: 0 a valid order, 1 not JSON, 2 empty, 3 a
// symlink), the rest is the name, `/` replaced by `_` and cut at 255 bytes. At most 12 entries
// a run; names that cannot be created (empty, `.`, `..`, a repeat) are skipped. The input's
// first byte, odd, hands the names to the ingest as inotify would (`process`), else it rescans.
import Foundation
import Glibc
import ReconcileCore
import ReconcileFoundation
import ReconcileSpool
import ReconcileSystem
import Synchronization

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzSpoolName(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    SpoolNameTarget.run(inputBytes(data, size))
    return 0
}

/// Takes every valid order; records what it was given. Its writes run on a queue of its own,
/// as a real store's do.
final class RecordingStore: OrderIngesting, SerializedStore {
    let candidates = Mutex<[IngestCandidate]>([])
    private let writer = DispatchQueueExecutor(label: "reconcile.fuzz.store")

    var executor: UnownedSerialExecutor { writer.asUnownedSerialExecutor() }

    func writing<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await writer.run(body)
    }

    func reading<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await writer.run(body)
    }

    func ingest(_ candidates: [IngestCandidate], verifiers: ConfiguredVerifiers, now: Date) throws -> [IngestOutcome] {
        self.candidates.withLock { $0 += candidates }
        return candidates.map { _ in .accepted(.pending) }
    }

    /// Store notifications (no spool name here is one; verified ones would be recorded).
    func ingestNotifications(
        _ notifications: [StoreNotification], consumption: ConsumptionPolicy, discovery: DiscoverySettings, now: Date
    ) throws -> [NotificationIngestOutcome] {
        notifications.map { _ in .taken(.recorded) }
    }
}

/// Keeps the records of one run.
final class RecordingLog: LogHandler {
    let records = Mutex<[LogRecord]>([])
    func log(_ record: LogRecord) { records.withLock { $0.append(record) } }
}

enum SpoolNameTarget {
    enum Kind: Int, CaseIterable {
        case valid, notJSON, empty, symlink
    }

    struct Entry {
        var name: SpoolFileName
        var kind: Kind
        var content: [UInt8]
    }

    static let root: String = {
        let base = FileManager.default.fileExists(atPath: "/dev/shm") ? "/dev/shm" : NSTemporaryDirectory()
        atexit { SpoolNameTarget.removeTree(SpoolNameTarget.root) }
        return "\(base)/reconcile-fuzz-spool-\(getpid())"
    }()
    static let layout: SpoolLayout = {
        let layout = SpoolLayout(root: root + "/spool")
        try! layout.prepare()
        return layout
    }()
    static let store = RecordingStore()
    static let log = RecordingLog()
    static let ingestor = SpoolIngestor(
        layout: layout, store: store, settings: .init(verifierKind: .http, maxFileSize: 4096), logger: Logger(handler: log, minimumLevel: .debug),
        clock: SystemClock())

    static func run(_ input: [UInt8]) {
        let entries = create(parse(input))
        let arrived = input.first.map { $0 & 1 == 1 } ?? false
        store.candidates.withLock { $0.removeAll() }
        log.records.withLock { $0.removeAll() }
        let done = DispatchSemaphore(value: 0)
        let names = entries.map(\.name)
        Task {
            _ = arrived ? await ingestor.process(names) : await ingestor.rescan()
            done.signal()
        }
        done.wait()
        check(entries)
        clean()
    }

    static func parse(_ input: [UInt8]) -> [(SpoolFileName, Kind)] {
        input.dropFirst().split(separator: 0, omittingEmptySubsequences: true).prefix(12).compactMap { part in
            guard let selector = part.first else { return nil }
            let name = part.dropFirst().prefix(255).map { $0 == UInt8(ascii: "/") ? UInt8(ascii: "_") : $0 }
            return (SpoolFileName(name), Kind(rawValue: Int(selector) % Kind.allCases.count)!)
        }
    }

    /// Creates the files in incoming/; returns those that exist.
    static func create(_ wanted: [(SpoolFileName, Kind)]) -> [Entry] {
        let incoming = open(layout.incoming, O_RDONLY | O_DIRECTORY)
        defer { close(incoming) }
        var entries: [Entry] = []
        for (index, (name, kind)) in wanted.enumerated() where name.isValidComponent {
            let content: [UInt8] = switch kind {
            case .valid: Array(#"{"order_id":"F\#(index)","product_id":"p","receipt":"QUJD"}"#.utf8)
            case .notJSON: Array("not json \(index)".utf8)
            case .empty: []
            case .symlink: Array("/etc/passwd".utf8)
            }
            if kind == .symlink {
                guard name.withCString({ symlinkat("/etc/passwd", incoming, $0) }) == 0 else { continue }
            } else {
                let descriptor = name.withCString { openat(incoming, $0, O_WRONLY | O_CREAT | O_EXCL, 0o640) }
                guard descriptor >= 0 else { continue }
                _ = content.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
                close(descriptor)
            }
            entries.append(Entry(name: name, kind: kind, content: content))
        }
        return entries
    }

    static func check(_ entries: [Entry]) {
        let incoming = Set(names(layout.incoming))
        let rejected = names(layout.rejected)
        let stored = store.candidates.withLock { $0 }
        var reasons = Set(rejected.filter { $0.bytes.count > 7 && $0.bytes.suffix(7).elementsEqual(".reason".utf8) })
        var quarantined = Set(rejected).subtracting(reasons)

        for entry in entries {
            let shown = entry.name.escaped
            invariant(SpoolFileName(escaped: shown) == entry.name, "the escaped name \(shown) does not read back")
            invariant(!shown.unicodeScalars.contains { $0.value < 0x20 || (0x7F..<0xA0).contains($0.value) }, "control character in \(shown)")
            if !entry.name.isCandidate {
                // The documented rule: a leading '.' or a '.tmp' ending is a producer's work in progress.
                invariant(entry.name.bytes.first == UInt8(ascii: ".") || entry.name.bytes.ends(with: Array(".tmp".utf8)), "\(shown) skipped against the rule")
                invariant(incoming.contains(entry.name), "\(shown), which is to be ignored, left incoming/")
                invariant(!stored.contains { $0.fileName.utf8.elementsEqual(shown.utf8) }, "\(shown), which is to be ignored, was stored")
                continue
            }
            invariant(!incoming.contains(entry.name), "\(shown) is still in incoming/")
            if entry.kind == .valid {
                invariant(stored.contains { $0.fileName.utf8.elementsEqual(shown.utf8) && $0.raw == entry.content }, "\(shown) was not stored")
                continue
            }
            // Rejected: a reason naming it, beside a file with its bytes.
            // Names compare as bytes: Swift's String == holds "café" composed and decomposed equal,
            // yet they are two files (found by this target: it matched the other file's reason).
            let heading = Array("file: \(shown)\n".utf8)
            let match = reasons.first { reason in
                read(layout.rejected, reason).map { $0.starts(with: heading) } ?? false
            }
            guard let reason = match else {
                invariant(false, "\(shown) has no reason in rejected/")
                return
            }
            reasons.remove(reason)
            let target = SpoolFileName(Array(reason.bytes.dropLast(7)))
            invariant(quarantined.remove(target) != nil, "the reason of \(shown) has no file beside it")
            if entry.kind == .symlink {
                let directory = open(layout.rejected, O_RDONLY | O_DIRECTORY)
                defer { close(directory) }
                var info = stat()
                let found = target.withCString { fstatat(directory, $0, &info, AT_SYMLINK_NOFOLLOW) } == 0
                invariant(found && info.st_mode & S_IFMT == S_IFLNK, "the quarantined symlink \(shown) is not the link itself")
            } else {
                invariant(read(layout.rejected, target) == entry.content, "the quarantined \(shown) lost its bytes")
            }
            invariant(Quarantine.reasonName(of: target).bytes.count + 32 <= 255, "\(target.escaped) leaves no room for its reason's temporary name")
        }
        invariant(reasons.isEmpty && quarantined.isEmpty, "rejected/ holds what no name explains: \(reasons.map(\.escaped)) \(quarantined.map(\.escaped))")
        invariant(stored.count == entries.filter { $0.kind == .valid && $0.name.isCandidate }.count, "stored \(stored.count) files")

        for record in log.records.withLock({ $0 }) {
            let text = record.message + record.fields.map(\.1).joined()
            invariant(!text.unicodeScalars.contains { $0.value < 0x20 || (0x7F..<0xA0).contains($0.value) }, "a log line holds a control character: \(record.message)")
        }
    }

    static func names(_ path: String) -> [SpoolFileName] {
        let descriptor = open(path, O_RDONLY | O_DIRECTORY)
        defer { close(descriptor) }
        return ((try? FileSystem.listDirectoryEntries(descriptor: descriptor, path: path)) ?? []).map(SpoolFileName.init)
    }

    static func read(_ directory: String, _ name: SpoolFileName) -> [UInt8]? {
        let parent = open(directory, O_RDONLY | O_DIRECTORY)
        defer { close(parent) }
        let descriptor = name.withCString { openat(parent, $0, O_RDONLY | O_NOFOLLOW) }
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        return (try? FileSystem.read(descriptor, limit: 1 << 16)) ?? nil
    }

    /// Empties incoming/ and rejected/ (names of any bytes) for the next run.
    static func clean() {
        for path in [layout.incoming, layout.rejected] {
            let directory = open(path, O_RDONLY | O_DIRECTORY)
            for name in names(path) { _ = name.withCString { unlinkat(directory, $0, 0) } }
            close(directory)
        }
    }

    static func removeTree(_ path: String) {
        for sub in ["spool/incoming", "spool/rejected", "spool/tmp"] {
            let directory = open("\(path)/\(sub)", O_RDONLY | O_DIRECTORY)
            if directory >= 0 {
                for name in names("\(path)/\(sub)") { _ = name.withCString { unlinkat(directory, $0, 0) } }
                close(directory)
            }
            rmdir("\(path)/\(sub)")
        }
        unlink("\(path)/spool/reconciled.lock")
        rmdir("\(path)/spool")
        rmdir(path)
    }
}

extension Array where Element == UInt8 {
    func ends(with suffix: [UInt8]) -> Bool {
        count >= suffix.count && self[(count - suffix.count)...].elementsEqual(suffix)
    }
}
