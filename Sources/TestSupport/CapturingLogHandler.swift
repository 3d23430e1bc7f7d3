import ReconcileCore
import Synchronization
import ReconcileFoundation

/// A log handler that keeps every record in memory, for tests that check what was logged.
public final class CapturingLogHandler: LogHandler {
    private let storage = Mutex<[LogRecord]>([])

    public init() {}

    public func log(_ record: LogRecord) {
        storage.withLock { $0.append(record) }
    }

    /// Everything logged so far, in order.
    public var records: [LogRecord] {
        storage.withLock { $0 }
    }

    /// Records with this message id.
    public func records(with id: MessageID) -> [LogRecord] {
        records.filter { $0.messageID == id }
    }
}
