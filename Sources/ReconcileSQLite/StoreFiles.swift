import ReconcileStore
import CSQLite
import Glibc

/// The files an SQLite store is made of on disk: the database, its write-ahead log (`-wal`) and
/// its shared-memory index (`-shm`), and what the daemon checks about them.
///
/// They hold receipts: the database is created 0640 whatever the umask (SQLite gives `-wal` and
/// `-shm` the database's mode), so that a copy of the state directory made with `cp -r` is not
/// readable by everyone.
public struct StoreFiles: Sendable, Hashable {
    public var database: String

    public init(database: String) {
        self.database = database
    }

    public var wal: String { database + "-wal" }
    public var shm: String { database + "-shm" }
    /// All three, database first.
    public var all: [String] { [database, wal, shm] }
    /// Present while `reconcilectl restore` moves files; the store is not opened for writing
    /// while it is there.
    public var restoreMarker: String { database + ".restoring" }

    /// The mode of a new store: the daemon's user reads and writes, its group reads.
    public static let mode: mode_t = 0o640

    /// A WAL header is 32 bytes; anything beyond is frames.
    static let walHeaderSize = 32

    /// Creates an empty database file with ``mode`` when none exists (SQLite fills an empty file),
    /// and takes group write and every permission of others from existing files.
    ///
    /// - Returns: whether the database was created.
    /// - Throws: ``SQLiteError`` (`SQLITE_CANTOPEN` with the system's `errno`) when the file
    ///   cannot be created.
    @discardableResult
    func prepareForOwner() throws(SQLiteError) -> Bool {
        var created = false
        var info = stat()
        if lstat(database, &info) != 0 && errno == ENOENT {
            let descriptor = open(database, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, Self.mode)
            if descriptor < 0 && errno != EEXIST {
                let failure = errno
                throw SQLiteError(
                    extendedCode: SQLITE_CANTOPEN, message: "cannot create \(database): \(String(cString: strerror(failure)))",
                    systemErrno: failure)
            }
            if descriptor >= 0 {
                fchmod(descriptor, Self.mode)  // the umask may have taken bits away; never adds any
                close(descriptor)
                created = true
            }
        }
        for path in all {
            guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { continue }
            let permissions = info.st_mode & 0o7777
            if permissions & 0o027 != 0 { chmod(path, permissions & ~0o027) }
        }
        return created
    }

    /// Whether a write-ahead log with frames lies beside the database: the last connection did
    /// not close cleanly (a crash, a kill, a power cut), or the log belongs to another database
    /// that was there before.
    public var walHasFrames: Bool {
        var info = stat()
        return stat(wal, &info) == 0 && Int(info.st_size) > Self.walHeaderSize
    }

    /// The size of the database file in bytes, if it exists.
    public var databaseSize: Int64? {
        var info = stat()
        return stat(database, &info) == 0 ? Int64(info.st_size) : nil
    }
}

/// Which file a path names (device and inode), its size and its first 100 bytes (SQLite's
/// database header: page count, freelist, change counter, schema cookie).
///
/// Between two of the daemon's commits none of these may change: only its own checkpoints write
/// the database file. The modification time is not used: it also changes for a `touch`, and a
/// step of the wall clock shifts what it means.
public struct FileIdentity: Sendable, Hashable {
    public var device: UInt64
    public var inode: UInt64
    public var size: Int64
    /// Read through the store's own connection (``SQLiteConnection/readDatabaseFile(count:)``);
    /// empty when not read.
    public var header: [UInt8]

    /// The file `path` names now (`stat` only: it opens nothing), or `nil` when there is none.
    public init?(path: String, header: [UInt8] = []) {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
        size = Int64(info.st_size)
        self.header = header
    }

    /// The same file (device and inode).
    public func isSameFile(as other: FileIdentity) -> Bool {
        device == other.device && inode == other.inode
    }

    /// The same file, with the same size and header as then.
    public func isUnchanged(since other: FileIdentity) -> Bool {
        isSameFile(as: other) && size == other.size && header == other.header
    }
}
