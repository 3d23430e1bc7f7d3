import Glibc

/// Names and groups of users, from the system's user database (NSS).
public enum UserDatabase {
    /// The name of a user id.
    public static func userName(of uid: UInt32) -> String? {
        var entry = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 4096)
        guard getpwuid_r(uid, &entry, &buffer, buffer.count, &result) == 0, result != nil, let name = entry.pw_name else { return nil }
        return String(cString: name)
    }

    /// The groups a user belongs to (primary included).
    public static func groups(of user: String, primary: UInt32) -> [UInt32] {
        var count: Int32 = 64
        var groups = [gid_t](repeating: 0, count: Int(count))
        if getgrouplist(user, primary, &groups, &count) < 0 {
            groups = [gid_t](repeating: 0, count: Int(count))
            guard getgrouplist(user, primary, &groups, &count) >= 0 else { return [primary] }
        }
        return Array(groups.prefix(Int(count)))
    }

    /// The current user's name (`SUDO_USER` is the caller's business).
    public static var currentUserName: String {
        userName(of: geteuid()) ?? String(geteuid())
    }
}
