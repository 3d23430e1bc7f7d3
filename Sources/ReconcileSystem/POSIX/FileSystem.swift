import CLinux
import Glibc

/// The file operations the daemon and the CLI need, with durability spelled out: every write
/// that must survive a crash is fsynced, and so is the directory that names it.
public enum FileSystem {
    /// Opens a directory for `openat`, `fsync` and listing.
    public static func openDirectory(_ path: String) throws(SystemError) -> Int32 {
        try retryingOnInterrupt("open", path: path) {
            reconcile_openat(AT_FDCWD, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0)
        }
    }

    /// Flushes a directory's entries (new, renamed or removed names) to disk.
    public static func syncDirectory(_ path: String) throws(SystemError) {
        let descriptor = try openDirectory(path)
        defer { close(descriptor) }
        try retryingOnInterrupt("fsync", path: path) { fsync(descriptor) }
    }

    /// Creates a directory with exactly `mode` (umask ignored) when it does not exist, with its
    /// missing parents (0755). Returns true when it created it.
    @discardableResult
    public static func makeDirectory(_ path: String, mode: mode_t) throws(SystemError) -> Bool {
        var info = stat()
        if lstat(path, &info) == 0 {
            guard info.st_mode & S_IFMT == S_IFDIR else {
                throw SystemError(errno: ENOTDIR, operation: "mkdir", path: path)
            }
            return false
        }
        let parent = parentDirectory(of: path)
        if parent != path && !parent.isEmpty && lstat(parent, &info) != 0 {
            try makeDirectory(parent, mode: 0o755)
        }
        if mkdir(path, mode) != 0 && errno != EEXIST {
            throw SystemError.current("mkdir", path: path)
        }
        try retryingOnInterrupt("chmod", path: path) { chmod(path, mode) }
        return true
    }

    /// The directory part of a path (`/a/b/c` → `/a/b`).
    public static func parentDirectory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        let parent = String(path[..<slash])
        return parent.isEmpty ? "/" : parent
    }

    /// The last component of a path.
    public static func baseName(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return path }
        return String(path[path.index(after: slash)...])
    }

    /// Reads a whole file, refusing one larger than `limit` bytes.
    public static func readFile(_ path: String, limit: Int = 16 * 1024 * 1024) throws(SystemError) -> [UInt8] {
        let descriptor = try retryingOnInterrupt("open", path: path) {
            reconcile_openat(AT_FDCWD, path, O_RDONLY | O_CLOEXEC, 0)
        }
        defer { close(descriptor) }
        guard let bytes = try read(descriptor, limit: limit, path: path) else {
            throw SystemError(errno: EFBIG, operation: "read", path: path)
        }
        return bytes
    }

    /// Reads a whole regular file (symlinks followed), refusing anything else without blocking:
    /// the file is opened with `O_NONBLOCK` (a FIFO would otherwise wait for a writer forever)
    /// and checked with `fstat` on the open descriptor. `/dev/null` reads as empty, so that a
    /// symlink to it masks a file as in systemd.
    ///
    /// - Throws: ``SystemError``: `EFBIG` past `limit`; `EINVAL` for anything but a regular
    ///   file, its operation saying what the file is ("not a regular file (a FIFO)").
    public static func readRegularFile(_ path: String, limit: Int = 16 * 1024 * 1024) throws(SystemError) -> [UInt8] {
        let descriptor = try retryingOnInterrupt("open", path: path) {
            reconcile_openat(AT_FDCWD, path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, 0)
        }
        defer { close(descriptor) }
        var info = stat()
        try retryingOnInterrupt("fstat", path: path) { fstat(descriptor, &info) }
        if info.st_mode & S_IFMT == S_IFCHR && isDevNull(info) { return [] }
        guard info.st_mode & S_IFMT == S_IFREG else {
            throw SystemError(errno: EINVAL, operation: "not a regular file (\(kind(of: info.st_mode)))", path: path)
        }
        guard let bytes = try read(descriptor, limit: limit, expectedSize: Int(info.st_size), path: path) else {
            throw SystemError(errno: EFBIG, operation: "read", path: path)
        }
        return bytes
    }

    static func isDevNull(_ info: stat) -> Bool {
        var null = stat()
        return stat("/dev/null", &null) == 0 && null.st_mode & S_IFMT == S_IFCHR && null.st_rdev == info.st_rdev
    }

    /// What a file is, in words, from its `st_mode`.
    public static func kind(of mode: mode_t) -> String {
        switch mode & S_IFMT {
        case S_IFREG: "a regular file"
        case S_IFDIR: "a directory"
        case S_IFIFO: "a FIFO"
        case S_IFSOCK: "a socket"
        case S_IFCHR: "a character device"
        case S_IFBLK: "a block device"
        case S_IFLNK: "a symbolic link"
        default: "of unknown type"
        }
    }

    /// Reads from `descriptor` until end of file; `nil` when there are more than `limit` bytes.
    ///
    /// - Parameter expectedSize: the size `fstat` reported, to read a small file with one
    ///   small buffer.
    public static func read(_ descriptor: Int32, limit: Int, expectedSize: Int? = nil, path: String? = nil) throws(SystemError) -> [UInt8]? {
        var bytes: [UInt8] = []
        let chunkSize = expectedSize.map { min(max($0 + 1, 512), 64 * 1024) } ?? 64 * 1024
        var chunk = [UInt8](repeating: 0, count: min(max(limit + 1, 1), chunkSize))
        while true {
            let count = try retryingOnInterrupt("read", path: path) {
                chunk.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
            }
            if count == 0 { return bytes }
            bytes.append(contentsOf: chunk[0..<count])
            if bytes.count > limit { return nil }
        }
    }

    /// Writes all of `bytes`.
    public static func writeAll(_ descriptor: Int32, _ bytes: [UInt8], path: String? = nil) throws(SystemError) {
        var offset = 0
        while offset < bytes.count {
            let written = try retryingOnInterrupt("write", path: path) {
                bytes.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress! + offset, $0.count - offset) }
            }
            offset += written
        }
    }

    /// Writes a file so that after a crash it is either absent, the old version, or complete:
    /// a temporary file in the same directory, fsync, rename over the target, fsync the directory.
    public static func writeAtomically(_ path: String, _ bytes: [UInt8], mode: mode_t = 0o640) throws(SystemError) {
        let directory = parentDirectory(of: path)
        let temporary = "\(directory)/.\(baseName(of: path)).\(getpid()).\(UInt32.random(in: 0...UInt32.max)).tmp"
        let descriptor = try retryingOnInterrupt("open", path: temporary) {
            reconcile_openat(AT_FDCWD, temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode)
        }
        do {
            try writeAll(descriptor, bytes, path: temporary)
            try retryingOnInterrupt("fchmod", path: temporary) { fchmod(descriptor, mode) }
            try retryingOnInterrupt("fsync", path: temporary) { fsync(descriptor) }
        } catch {
            close(descriptor)
            unlink(temporary)
            throw error
        }
        // Closed once, before the rename: a second close after a failed rename could close a
        // descriptor another thread has been given the number of meanwhile.
        close(descriptor)
        do {
            try retryingOnInterrupt("rename", path: path) { rename(temporary, path) }
        } catch {
            unlink(temporary)
            throw error
        }
        try syncDirectory(directory)
    }

    /// Renames `source` to `target`, failing with `EEXIST` rather than replacing a file that is
    /// there (`renameat2(RENAME_NOREPLACE)`).
    public static func renameWithoutReplacing(_ source: String, to target: String) throws(SystemError) {
        try retryingOnInterrupt("rename", path: target) {
            reconcile_rename_noreplace(AT_FDCWD, source, AT_FDCWD, target)
        }
    }

    /// The names in a directory, without `.` and `..`.
    public static func listDirectory(_ path: String) throws(SystemError) -> [String] {
        let descriptor = try openDirectory(path)
        return try listDirectory(descriptor: descriptor, path: path, closing: true)
    }

    /// Where `d_name` lies in a `struct dirent`.
    private static let nameOffset = MemoryLayout<dirent>.offset(of: \dirent.d_name)!

    /// The names in an open directory. The descriptor is duplicated, so the caller's stays open
    /// unless `closing` is true. A name that is not UTF-8 is repaired (U+FFFD) and then names
    /// nothing: where names may be any bytes, use ``listDirectoryEntries(descriptor:path:)``.
    public static func listDirectory(descriptor: Int32, path: String, closing: Bool = false) throws(SystemError) -> [String] {
        try listDirectoryEntries(descriptor: descriptor, path: path, closing: closing).map { String(decoding: $0, as: UTF8.self) }
    }

    /// The names in an open directory as the kernel gives them, bytes without the NUL, `.` and
    /// `..` left out. The descriptor is duplicated, so the caller's stays open unless `closing`
    /// is true.
    public static func listDirectoryEntries(descriptor: Int32, path: String, closing: Bool = false) throws(SystemError) -> [[UInt8]] {
        let own = closing ? descriptor : dup(descriptor)
        guard own >= 0, let stream = fdopendir(own) else {
            let error = SystemError.current("opendir", path: path)
            if own >= 0 { close(own) }
            throw error
        }
        defer { closedir(stream) }
        rewinddir(stream)
        var names: [[UInt8]] = []
        while true {
            errno = 0
            guard let entry = readdir(stream) else {
                if errno != 0 { throw SystemError.current("readdir", path: path) }
                return names
            }
            // Read the name in place, up to its NUL. `entry.pointee` would copy a whole
            // `struct dirent` (a 256-byte d_name), but the kernel packs entries by `d_reclen`:
            // the last one in glibc's buffer can be shorter, and the copy read past the buffer
            // (AddressSanitizer: heap-buffer-overflow).
            let start = UnsafeRawPointer(entry).advanced(by: Self.nameOffset).assumingMemoryBound(to: UInt8.self)
            let name = Array(UnsafeBufferPointer(start: start, count: strlen(UnsafeRawPointer(start).assumingMemoryBound(to: CChar.self))))
            if name != [0x2E] && name != [0x2E, 0x2E] { names.append(name) }
        }
    }

    /// Whether something (anything, even a dangling symlink) exists at `path`.
    public static func exists(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0
    }
}
