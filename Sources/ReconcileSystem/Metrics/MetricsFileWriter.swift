import Glibc

/// Writes the metrics file (`[Daemon] MetricsFile=`) for node_exporter's textfile collector,
/// so that the collector never reads half a file: the text goes to a temporary file in the
/// same directory (a hidden `.….tmp` name the collector ignores, as it reads only `*.prom`),
/// is synced, made mode 0644 whatever the umask (node_exporter runs as another user), and
/// renamed over the file.
///
/// Text equal to the last one written is not written again, as long as the file is still the
/// one this writer put there (someone deleting or replacing it gets it back at the next write).
/// A failed write does not make the writer forget the file it owns: it is still the one
/// ``removeWritten()`` removes, and the next successful write replaces it.
///
/// A value owned by one caller (the daemon's metrics publisher); not shared.
public struct MetricsFileWriter: Sendable {
    /// Why the file could not be written; names the file and the failing step.
    public struct Failure: Error, Sendable, Hashable, CustomStringConvertible {
        public var path: String
        public var underlying: SystemError

        public var description: String { "cannot write the metrics file \(path): \(underlying)" }
    }

    /// The file written, and what it holds (`nil`: not known for sure, written again next time).
    private struct Written: Sendable, Hashable {
        var text: String?
        var device: UInt64
        var inode: UInt64
    }

    public let path: String
    private var written: Written?

    /// The mode of the file: readable by node_exporter's user.
    public static let mode: mode_t = 0o644

    public init(path: String) {
        self.path = path
    }

    /// Replaces the file's contents with `text`, unless it holds exactly that already (and
    /// `evenIfUnchanged` is false: a heartbeat rewrites it, so that its modification time,
    /// node_exporter's `node_textfile_mtime_seconds`, shows the daemon alive).
    ///
    /// - Returns: whether the file was written.
    /// - Throws: ``Failure`` naming the file (a missing or read-only directory, a full disk);
    ///   the previous file, if any, is left as it was.
    @discardableResult
    public mutating func write(_ text: String, evenIfUnchanged: Bool = false) throws(Failure) -> Bool {
        if !evenIfUnchanged, let written, written.text == text, let identity = identity(), identity == (written.device, written.inode) {
            return false
        }
        do {
            try FileSystem.writeAtomically(path, Array(text.utf8), mode: Self.mode)
        } catch {
            written = owned(afterFailingToWrite: text)
            throw Failure(path: path, underlying: error)
        }
        if let identity = identity() {
            written = Written(text: text, device: identity.device, inode: identity.inode)
        } else {
            written = nil
        }
        return true
    }

    /// Removes the file if it is still the one this writer wrote (`MetricsFile=` changed or was
    /// turned off on reload: node_exporter should not go on exporting numbers nobody updates).
    ///
    /// - Returns: whether a file was removed.
    @discardableResult
    public mutating func removeWritten() -> Bool {
        defer { written = nil }
        guard let written, let identity = identity(), identity == (written.device, written.inode) else { return false }
        return unlink(path) == 0
    }

    /// What this writer owns at `path` after a failed write: the file it wrote before, as it was
    /// (the new text went to a temporary file, removed) — unless only the directory's sync failed,
    /// after the rename: then the file holding `text`, kept but written again next time. (What
    /// is owned is checked by identity again before it is skipped or removed.)
    private func owned(afterFailingToWrite text: String) -> Written? {
        guard let identity = identity(), written.map({ identity != ($0.device, $0.inode) }) ?? true,
            let bytes = try? FileSystem.readFile(path, limit: text.utf8.count + 1), bytes.elementsEqual(text.utf8)
        else { return written }
        return Written(text: nil, device: identity.device, inode: identity.inode)
    }

    private func identity() -> (device: UInt64, inode: UInt64)? {
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        return (UInt64(info.st_dev), UInt64(info.st_ino))
    }
}
