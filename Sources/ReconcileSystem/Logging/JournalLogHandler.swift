import CSystemd
import Glibc
import ReconcileCore
import ReconcileFoundation

/// Sends each log record to journald as a native entry with structured fields
/// (`sd_journal_sendv`, sd_journal_print(3)), so that `journalctl ORDER_ID=…` finds an order's
/// events. Chosen when stderr is the journal stream systemd set up (``StderrLogHandler/detectStyle(environment:descriptor:)``)
/// and the journal socket exists.
///
/// `sd_journal_sendv` drops an entry silently when the socket is gone (it returns 0), so the
/// socket is checked at start; a send that fails with an error writes the record to `fallback`
/// (stderr, which journald also reads) instead of losing it.
public final class JournalLogHandler: LogHandler {
    /// journald's native socket; libsystemd has it compiled in.
    public static let socketPath = "/run/systemd/journal/socket"

    private let identifier: String
    private let fallback: any LogHandler

    public init(identifier: String = "reconciled", fallback: any LogHandler) {
        self.identifier = identifier
        self.fallback = fallback
    }

    /// Whether journald's native socket is there to send to.
    public static func socketExists(at path: String = socketPath) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFSOCK
    }

    public func log(_ record: LogRecord) {
        if send(JournalEntry(record, identifier: identifier)) < 0 {
            fallback.log(record)
        }
    }

    /// Sends one entry; `sd_journal_sendv`'s result (negative errno on failure).
    func send(_ entry: JournalEntry) -> Int32 {
        // One buffer holding every "NAME=value", and an iovec per assignment pointing into it.
        var buffer: [UInt8] = []
        var ranges: [Range<Int>] = []
        for field in entry.fields {
            let start = buffer.count
            buffer.append(contentsOf: field.name.utf8)
            buffer.append(UInt8(ascii: "="))
            buffer.append(contentsOf: field.value.utf8)
            ranges.append(start..<buffer.count)
        }
        return buffer.withUnsafeMutableBytes { bytes in
            let base = bytes.baseAddress!
            var vectors = ranges.map { iovec(iov_base: base + $0.lowerBound, iov_len: $0.count) }
            return sd_journal_sendv(&vectors, Int32(vectors.count))
        }
    }
}
