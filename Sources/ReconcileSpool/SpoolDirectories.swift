import CLinux
import Glibc
import ReconcileSystem

/// The spool's directories held open the safe way (DESIGN §3): the root by its configured
/// path, `tmp/`, `incoming/` and `rejected/` relative to the root's descriptor with
/// `O_NOFOLLOW|O_DIRECTORY`, each owned by the root's owner or by root.
///
/// A producer may create entries in the spool root. Were a subdirectory opened by path, one who
/// could put a symlink in its place would make the daemon read, delete and quarantine files in
/// any directory it can reach; a link is refused instead (``SpoolDirectoryProblem``), and so is
/// a directory someone else created. Every ``open(_:)`` checks that the path still names the
/// directory held (`fstat` against `fstatat(AT_SYMLINK_NOFOLLOW)`, device and inode) and
/// opens it afresh when it was replaced, so a held descriptor never strands new files in a
/// directory that is no longer the spool's.
///
/// Not thread-safe: one owner (the ingest actor, or a command) uses it.
public final class SpoolDirectories {
    /// A directory of the spool.
    public enum Subdirectory: String, Sendable, Hashable, CaseIterable {
        case temporary = "tmp"
        case incoming
        case rejected
    }

    private struct Held {
        var descriptor: Int32
        var identity: FileIdentity
    }

    public let layout: SpoolLayout
    private var root: Held?
    private var rootOwner: uid_t = 0
    private var held: [Subdirectory: Held] = [:]

    public init(layout: SpoolLayout) {
        self.layout = layout
    }

    deinit {
        closeAll()
    }

    public func path(_ subdirectory: Subdirectory) -> String {
        "\(layout.root)/\(subdirectory.rawValue)"
    }

    /// The descriptor of `subdirectory`, checked to be the directory its path names now.
    ///
    /// - Returns: the descriptor (owned by this object: valid until the next call that reopens
    ///   it, ``close(_:)`` or ``closeAll()``), and whether it was opened afresh because the one
    ///   held before had been replaced or removed.
    public func open(_ subdirectory: Subdirectory) throws(SpoolDirectoryProblem) -> (descriptor: Int32, reopened: Bool) {
        let rootDescriptor = try openRoot()
        var info = stat()
        guard let current = held[subdirectory] else {
            return (try openSubdirectory(subdirectory, in: rootDescriptor), false)
        }
        if fstatat(rootDescriptor, subdirectory.rawValue, &info, AT_SYMLINK_NOFOLLOW) == 0, FileIdentity(info) == current.identity {
            return (current.descriptor, false)
        }
        close(subdirectory)
        return (try openSubdirectory(subdirectory, in: rootDescriptor), true)
    }

    /// Forgets a directory's descriptor; the next ``open(_:)`` opens it again.
    public func close(_ subdirectory: Subdirectory) {
        if let current = held.removeValue(forKey: subdirectory) { Glibc.close(current.descriptor) }
    }

    public func closeAll() {
        for subdirectory in Subdirectory.allCases { close(subdirectory) }
        if let root { Glibc.close(root.descriptor) }
        root = nil
    }

    /// The root, opened afresh when its path names another directory now (the spool removed and
    /// re-created). The subdirectories held stay open until each is asked for again, when it is
    /// compared with what the new root holds: a caller may still be using one (committed files
    /// are unlinked on other threads), and closing it under them could hand its number to
    /// another directory.
    private func openRoot() throws(SpoolDirectoryProblem) -> Int32 {
        var info = stat()
        if let root {
            if stat(layout.root, &info) == 0, FileIdentity(info) == root.identity { return root.descriptor }
            Glibc.close(root.descriptor)
            self.root = nil
        }
        let descriptor = reconcile_openat(AT_FDCWD, layout.root, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0)
        guard descriptor >= 0 else { throw SpoolDirectoryProblem.opening(layout.root, errno: errno) }
        guard fstat(descriptor, &info) == 0 else {
            let failure = errno
            Glibc.close(descriptor)
            throw .system(SystemError(errno: failure, operation: "fstat", path: layout.root))
        }
        root = Held(descriptor: descriptor, identity: FileIdentity(info))
        rootOwner = info.st_uid
        return descriptor
    }

    private func openSubdirectory(_ subdirectory: Subdirectory, in rootDescriptor: Int32) throws(SpoolDirectoryProblem) -> Int32 {
        let path = path(subdirectory)
        let descriptor = reconcile_openat(rootDescriptor, subdirectory.rawValue, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0)
        var info = stat()
        guard descriptor >= 0 else {
            let failure = errno
            // O_NOFOLLOW|O_DIRECTORY on a symlink: ELOOP (or ENOTDIR); say which it is.
            if fstatat(rootDescriptor, subdirectory.rawValue, &info, AT_SYMLINK_NOFOLLOW) == 0, info.st_mode & S_IFMT == S_IFLNK {
                throw .symlink(path)
            }
            if failure == ENOTDIR { throw .notDirectory(path) }
            throw .opening(path, errno: failure)
        }
        guard fstat(descriptor, &info) == 0 else {
            let failure = errno
            Glibc.close(descriptor)
            throw .system(SystemError(errno: failure, operation: "fstat", path: path))
        }
        guard info.st_uid == rootOwner || info.st_uid == 0 else {
            Glibc.close(descriptor)
            throw .foreignOwner(path, owner: info.st_uid, expected: rootOwner)
        }
        held[subdirectory] = Held(descriptor: descriptor, identity: FileIdentity(info))
        return descriptor
    }
}

/// Why a spool directory was not opened.
public enum SpoolDirectoryProblem: Error, Sendable, Hashable, CustomStringConvertible {
    /// The name is a symbolic link: never followed.
    case symlink(String)
    /// The name is something other than a directory.
    case notDirectory(String)
    /// The directory belongs to someone other than the spool root's owner (or root).
    case foreignOwner(String, owner: uid_t, expected: uid_t)
    /// `open` failed (`ENOENT`, `EACCES`, …).
    case opening(String, errno: Int32)
    case system(SystemError)

    public var path: String {
        switch self {
        case .symlink(let path), .notDirectory(let path), .foreignOwner(let path, _, _), .opening(let path, _): path
        case .system(let error): error.path ?? ""
        }
    }

    public var errno: Int32? {
        switch self {
        case .opening(_, let errno): errno
        case .system(let error): error.errno
        default: nil
        }
    }

    public var isMissing: Bool { errno == ENOENT }

    public var description: String {
        switch self {
        case .symlink(let path):
            "\(path) is a symbolic link, not the spool's directory; it is not followed (restore the real directory)"
        case .notDirectory(let path):
            "\(path) is not a directory; it is not used (restore the real directory)"
        case .foreignOwner(let path, let owner, let expected):
            "\(path) belongs to uid \(owner), not to the spool's owner (uid \(expected)) or root; it is not used (restore the real directory)"
        case .opening(let path, let errno):
            "cannot open \(path): \(String(cString: strerror(errno)))"
        case .system(let error):
            error.description
        }
    }
}

extension FileIdentity {
    init(_ info: stat) {
        self.init(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
    }
}
