import Glibc

/// `JOURNAL_STREAM` (`<device>:<inode>` of the journal stream systemd connected): whether a
/// descriptor is that very stream (systemd.exec(5)).
public enum JournalStream {
    public static func matches(_ value: String, descriptor: Int32) -> Bool {
        let parts = value.split(separator: ":")
        guard parts.count == 2, let device = UInt64(parts[0]), let inode = UInt64(parts[1]) else { return false }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { return false }
        return UInt64(info.st_dev) == device && UInt64(info.st_ino) == inode
    }
}
