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

    /// The name of a group id.
    public static func groupName(of gid: UInt32) -> String? {
        var entry = group()
        var result: UnsafeMutablePointer<group>?
        var buffer = [CChar](repeating: 0, count: 16_384)
        guard getgrgid_r(gid, &entry, &buffer, buffer.count, &result) == 0, result != nil, let name = entry.gr_name else { return nil }
        return String(cString: name)
    }

    /// The groups this process runs with now (effective and supplementary): a user added to a
    /// group has it only in sessions begun after.
    public static var processGroups: Set<UInt32> {
        let count = getgroups(0, nil)
        var groups = [gid_t](repeating: 0, count: Int(max(count, 0)))
        let filled = getgroups(count, &groups)
        return Set(groups.prefix(Int(max(filled, 0)))).union([getegid()])
    }

    /// The current user's name (`SUDO_USER` is the caller's business).
    public static var currentUserName: String {
        userName(of: geteuid()) ?? String(geteuid())
    }
}
