import CLinux
import Glibc
import ReconcileCore
import ReconcileSystem

/// Reads one spool file without trusting it: never follows a symlink (`O_NOFOLLOW`), checks
/// the open descriptor (`fstat`, so there is no check-then-open race), never blocks on a FIFO,
/// and never reads more than `MaxFileSize` + 1 bytes.
public struct SpoolFileReader: Sendable {
    /// The result of reading one name.
    public enum Result: Sendable, Hashable {
        /// The file's bytes, and the identity of the inode they came from.
        case contents([UInt8], FileIdentity)
        /// The file cannot be accepted; it goes to `rejected/`.
        case problem(OrderFileProblem)
        /// The name is gone (already handled, or removed by its producer).
        case vanished
    }

    public var maximumSize: Int

    public init(maximumSize: Int) {
        self.maximumSize = maximumSize
    }

    public func read(_ name: SpoolFileName, in directory: Int32) -> Result {
        let descriptor = name.withCString { reconcile_openat(directory, $0, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY, 0) }
        if descriptor < 0 {
            let failure = errno
            switch failure {
            case ENOENT:
                return .vanished
            case ELOOP:
                return .problem(
                    OrderFileProblem(.symlink, "the file is a symbolic link; spool files must be regular files (links are never followed)"))
            case ENXIO:
                return .problem(OrderFileProblem(.notRegularFile, "the file is a socket; spool files must be regular files"))
            default:
                return .problem(OrderFileProblem(.unreadable, "cannot open the file: \(String(cString: strerror(failure)))"))
            }
        }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else {
            return .problem(OrderFileProblem(.unreadable, "cannot stat the file: \(String(cString: strerror(errno)))"))
        }
        let type = info.st_mode & S_IFMT
        guard type == S_IFREG else {
            return .problem(
                OrderFileProblem(.notRegularFile, "the file is \(Self.describe(type)); spool files must be regular files"))
        }
        if Int(info.st_size) > maximumSize {
            return .problem(Self.tooLarge(Int(info.st_size), maximum: maximumSize))
        }
        let identity = FileIdentity(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
        do {
            guard let bytes = try FileSystem.read(descriptor, limit: maximumSize, expectedSize: Int(info.st_size)) else {
                return .problem(Self.tooLarge(nil, maximum: maximumSize))
            }
            return .contents(bytes, identity)
        } catch {
            return .problem(OrderFileProblem(.unreadable, "cannot read the file: \(String(cString: strerror(error.errno)))"))
        }
    }

    static func tooLarge(_ size: Int?, maximum: Int) -> OrderFileProblem {
        let what = size.map { "the file is \($0) bytes" } ?? "the file grew while it was read"
        return OrderFileProblem(.tooLarge, "\(what); MaxFileSize= allows \(maximum) bytes")
    }

    static func describe(_ type: mode_t) -> String {
        switch type {
        case S_IFDIR: "a directory"
        case S_IFIFO: "a FIFO"
        case S_IFSOCK: "a socket"
        case S_IFCHR: "a character device"
        case S_IFBLK: "a block device"
        case S_IFLNK: "a symbolic link"
        default: "not a regular file"
        }
    }
}

/// Which inode a file was: a name is deleted only if it still points to the inode that was
/// read and committed.
public struct FileIdentity: Sendable, Hashable {
    public var device: UInt64
    public var inode: UInt64

    public init(device: UInt64, inode: UInt64) {
        self.device = device
        self.inode = inode
    }
}
