import Glibc
import ReconcileSystem

/// The spool's directories (DESIGN §3) and their modes.
///
/// ```
/// <spool>/tmp/        producers write here first (fsync the file)
/// <spool>/incoming/   producers rename() finished files here, then fsync the directory
/// <spool>/rejected/   files the daemon cannot accept, each with NAME.reason beside it
/// ```
public struct SpoolLayout: Sendable, Hashable {
    public let root: String

    public init(root: String) {
        self.root = root
    }

    public var temporary: String { root + "/tmp" }
    public var incoming: String { root + "/incoming" }
    public var rejected: String { root + "/rejected" }

    /// Spool, `tmp/` and `incoming/`: setgid, shared with the producer group.
    public static let sharedMode: mode_t = 0o2770
    /// `rejected/`: the daemon's only (reasons can name other producers' files).
    public static let rejectedMode: mode_t = 0o750

    /// Creates whatever is missing, with the DESIGN modes. Existing directories keep their
    /// modes: an operator (or tmpfiles.d) may have chosen otherwise.
    ///
    /// - Returns: the directories created.
    @discardableResult
    public func prepare() throws(SystemError) -> [String] {
        var created: [String] = []
        for (path, mode) in [
            (root, Self.sharedMode), (temporary, Self.sharedMode), (incoming, Self.sharedMode), (rejected, Self.rejectedMode),
        ] where try FileSystem.makeDirectory(path, mode: mode) {
            created.append(path)
        }
        return created
    }

    /// Whether a name in `incoming/` is one the daemon should read: names starting with `.` or
    /// ending in `.tmp` are producers' work in progress.
    public static func isCandidate(_ name: String) -> Bool {
        !name.hasPrefix(".") && !name.hasSuffix(".tmp") && !name.isEmpty
    }
}
