import CLinux
import Dispatch
import Glibc
import ReconcileSystem

/// Watches `incoming/` with inotify (`IN_MOVED_TO`, `IN_CLOSE_WRITE`) and reports names as
/// they arrive (bytes, as the kernel gives them), a queue overflow (time to rescan), or the
/// directory itself going away or being replaced.
///
/// The parent directory is watched too: `incoming/`'s own `IN_DELETE_SELF` comes only once
/// nothing holds it open any more (the ingestor keeps a descriptor on it), while the parent's
/// `IN_DELETE` for the name comes at once; and the parent reports a new `incoming` (created or
/// moved in) so that the watch follows the directory that is there now. A symlink in
/// `incoming/`'s place is never followed (`IN_DONT_FOLLOW`): the watch then covers the parent
/// only, until a real directory is back.
public final class SpoolWatcher: @unchecked Sendable {
    // @unchecked: every property is immutable, and a dispatch source may be cancelled from any thread.
    /// What the watch saw.
    public enum Event: Sendable, Hashable {
        /// Names that were moved in or written and closed.
        case arrived([SpoolFileName])
        /// The kernel's event queue overflowed: some names were missed, rescan.
        case overflow
        /// The watched directory was deleted, moved away or replaced: watch and read it afresh.
        case directoryGone
    }

    private let descriptor: Int32
    private let source: any DispatchSourceRead
    public let directory: String

    /// Starts watching.
    ///
    /// - Throws: ``SystemError`` when inotify is unavailable (no instances left: `EMFILE`;
    ///   watch limit reached: `ENOSPC`) or the parent cannot be watched; the caller falls back
    ///   to periodic rescans. A `directory` that is missing or not a directory is not an error:
    ///   the parent is watched for its return.
    public init(directory: String, handler: @escaping @Sendable (Event) -> Void) throws(SystemError) {
        self.directory = directory
        let descriptor = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard descriptor >= 0 else { throw SystemError.current("inotify_init1") }
        let mask = UInt32(IN_MOVED_TO | IN_CLOSE_WRITE | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR | IN_DONT_FOLLOW | IN_EXCL_UNLINK)
        let parent = FileSystem.parentDirectory(of: directory)
        let parentMask = UInt32(IN_DELETE | IN_MOVED_FROM | IN_CREATE | IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR)
        let parentDescriptor = inotify_add_watch(descriptor, parent, parentMask)
        var failure: SystemError? = parentDescriptor < 0 ? SystemError.current("inotify_add_watch", path: parent) : nil
        if failure == nil, inotify_add_watch(descriptor, directory, mask) < 0, ![ENOENT, ENOTDIR, ELOOP].contains(errno) {
            failure = SystemError.current("inotify_add_watch", path: directory)
        }
        if let failure {
            close(descriptor)
            throw failure
        }
        let name = Array((directory.split(separator: "/").last ?? "").utf8)
        let parentWatch = ParentWatch(descriptor: parentDescriptor, childName: name)
        self.descriptor = descriptor
        let queue = DispatchQueue(label: "reconcile.spool-watch")
        let source = DispatchSource.makeReadSource(fileDescriptor: descriptor, queue: queue)
        source.setEventHandler { @Sendable in
            for event in Self.drain(descriptor, parent: parentWatch) { handler(event) }
        }
        source.setCancelHandler { @Sendable in close(descriptor) }
        self.source = source
        source.resume()
    }

    deinit {
        source.cancel()
    }

    /// Stops watching and closes the inotify descriptor.
    public func cancel() {
        source.cancel()
    }

    /// The watch on the parent directory, and the name of the watched directory in it.
    struct ParentWatch: Sendable {
        var descriptor: Int32
        var childName: [UInt8]
    }

    /// Reads every pending inotify event.
    static func drain(_ descriptor: Int32, parent: ParentWatch?) -> [Event] {
        var events: [Event] = []
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            events += parse(buffer[0..<count], parent: parent)
        }
        return events
    }

    /// Decodes `struct inotify_event` records: wd (4), mask (4), cookie (4), len (4), name.
    static func parse(_ bytes: ArraySlice<UInt8>, parent: ParentWatch? = nil) -> [Event] {
        var names: [SpoolFileName] = []
        var events: [Event] = []
        var offset = bytes.startIndex
        func word(_ at: Int) -> UInt32 {
            UInt32(bytes[at]) | UInt32(bytes[at + 1]) << 8 | UInt32(bytes[at + 2]) << 16 | UInt32(bytes[at + 3]) << 24
        }
        while offset + 16 <= bytes.endIndex {
            let watch = Int32(bitPattern: word(offset))
            let mask = word(offset + 4)
            let length = Int(word(offset + 12))
            let nameStart = offset + 16
            guard nameStart + length <= bytes.endIndex else { break }
            let name = Array(bytes[nameStart..<nameStart + length].prefix { $0 != 0 })
            offset = nameStart + length
            if mask & UInt32(IN_Q_OVERFLOW) != 0 {
                // One rescan answers any number of overflow records read at once.
                if !events.contains(.overflow) { events.append(.overflow) }
            } else if let parent, watch == parent.descriptor {
                // The parent: only the watched directory's removal or replacement (or the
                // parent's own) matters.
                let changes = UInt32(IN_DELETE | IN_MOVED_FROM | IN_CREATE | IN_MOVED_TO)
                let gone = mask & UInt32(IN_DELETE_SELF | IN_MOVE_SELF) != 0 || (name == parent.childName && mask & changes != 0)
                if gone && !events.contains(.directoryGone) { events.append(.directoryGone) }
            } else if mask & UInt32(IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED) != 0 {
                if !events.contains(.directoryGone) { events.append(.directoryGone) }
            } else if !name.isEmpty {
                names.append(SpoolFileName(name))
            }
        }
        if !names.isEmpty { events.insert(.arrived(names), at: 0) }
        return events
    }
}
