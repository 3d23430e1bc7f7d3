import CLinux
import Glibc
import ReconcileSystem

/// The spool's directories (DESIGN §3) and their modes.
///
/// ```
/// <spool>/tmp/        producers write here first (fsync the file)
/// <spool>/incoming/   producers rename() finished files here, then fsync the directory
/// <spool>/rejected/   files the daemon cannot accept, each with NAME.reason beside it
/// <spool>/reconciled.lock   held by the one daemon that uses this spool
/// ```
public struct SpoolLayout: Sendable, Hashable {
    public let root: String

    public init(root: String) {
        self.root = root
    }

    public var temporary: String { root + "/tmp" }
    public var incoming: String { root + "/incoming" }
    public var rejected: String { root + "/rejected" }
    /// The lock file of the daemon that uses this spool (``SpoolLock``).
    public var lock: String { root + "/reconciled.lock" }

    /// Spool, `tmp/` and `incoming/`: setgid (files keep the producers' group) and sticky (a
    /// producer can neither rename nor delete another's file, nor the subdirectories).
    public static let sharedMode: mode_t = 0o3770
    /// `rejected/`: the daemon's only (reasons can name other producers' files).
    public static let rejectedMode: mode_t = 0o750

    /// Creates whatever is missing, with the DESIGN modes: the root by its path (with missing
    /// parents), the subdirectories relative to the root's descriptor, each set to its mode on
    /// the descriptor of what was created (never by path, so a link put in its place meanwhile
    /// is not followed). Existing entries are left as they are: an operator (or tmpfiles.d) may
    /// have chosen other modes, and a subdirectory that is not a directory of the spool's owner
    /// is refused when it is opened (``SpoolDirectories``).
    ///
    /// - Returns: the directories created.
    @discardableResult
    public func prepare() throws(SystemError) -> [String] {
        var created: [String] = []
        if try FileSystem.makeDirectory(root, mode: Self.sharedMode) { created.append(root) }
        let rootDescriptor = try FileSystem.openDirectory(root)
        defer { close(rootDescriptor) }
        for (name, mode) in [("tmp", Self.sharedMode), ("incoming", Self.sharedMode), ("rejected", Self.rejectedMode)] {
            if mkdirat(rootDescriptor, name, 0o700) != 0 {
                guard errno == EEXIST else { throw SystemError.current("mkdir", path: "\(root)/\(name)") }
                continue
            }
            let descriptor = reconcile_openat(rootDescriptor, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0)
            guard descriptor >= 0 else { throw SystemError.current("open", path: "\(root)/\(name)") }
            defer { close(descriptor) }
            try retryingOnInterrupt("chmod", path: "\(root)/\(name)") { fchmod(descriptor, mode) }
            created.append("\(root)/\(name)")
        }
        return created
    }

    /// Whether a name in `incoming/` is one the daemon should read: names starting with `.` or
    /// ending in `.tmp` are producers' work in progress.
    public static func isCandidate(_ name: String) -> Bool {
        SpoolFileName(name).isCandidate
    }
}
