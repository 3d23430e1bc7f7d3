import Glibc
import ReconcileSystem

/// Why this user may not reach a file of the daemon's, in words an operator can act on: which
/// directory or file refuses, its mode, owner and group, and how to get in (join the group, or
/// log in again when already a member). Operators outside the daemon's group used to be told
/// that the store did not exist (issue 27).
enum PermissionProblem {
    /// What refuses the way to `path` for reading (`write`: and writing), or `nil` when nothing
    /// does (or the path does not exist, which is another message).
    static func explain(_ path: String, what: String, write: Bool = false) -> String? {
        guard path.hasPrefix("/") else { return nil }
        var blocking: String?
        var directory = ""
        for component in path.split(separator: "/").dropLast() {
            directory += "/" + component
            if access(directory, X_OK) != 0 && errno == EACCES {
                blocking = directory
                break
            }
        }
        if blocking == nil {
            var info = stat()
            guard stat(path, &info) == 0 else { return nil }
            guard access(path, write ? R_OK | W_OK : R_OK) != 0 && errno == EACCES else { return nil }
            blocking = path
        }
        guard let blocking else { return nil }
        var info = stat()
        guard stat(blocking, &info) == 0 else { return "cannot reach \(what) \(path): permission denied on \(blocking)" }
        let isDirectory = info.st_mode & S_IFMT == S_IFDIR
        let owner = UserDatabase.userName(of: info.st_uid) ?? String(info.st_uid)
        let group = UserDatabase.groupName(of: info.st_gid) ?? String(info.st_gid)
        let mode = String(info.st_mode & 0o7777, radix: 8)
        var text = "cannot reach \(what) \(path): permission denied on the \(isDirectory ? "directory" : "file") \(blocking)"
        text += " (mode \(mode.count < 4 ? String(repeating: "0", count: 4 - mode.count) + mode : mode), owner \(owner), group \(group))"
        let user = UserDatabase.currentUserName
        let allowed = info.st_mode & (isDirectory ? 0o010 : (write ? 0o060 : 0o040)) == (isDirectory ? 0o010 : (write ? 0o060 : 0o040))
        guard allowed else { return text + "; run as root or as \(owner)" }
        if UserDatabase.groups(of: user, primary: getegid()).contains(info.st_gid) && !UserDatabase.processGroups.contains(info.st_gid) {
            return text + "; \(user) is in the group \(group), but this session started before: log in again (or run 'newgrp \(group)')"
        }
        return text + "; members of the group \(group) may: 'sudo usermod -aG \(group) \(user)', then log in again (or run this with sudo)"
    }
}
