import Foundation

/// One log event: what a ``LogHandler`` receives.
public struct LogRecord: Sendable, Hashable {
    public var level: LogLevel
    /// Text for people; never a receipt, secret or token.
    public var message: String
    public var messageID: MessageID?
    /// Structured fields in the order given.
    public var fields: [(LogField, String)]
    public var time: Date
    /// Source location (`CODE_FILE`, `CODE_LINE`, `CODE_FUNC`).
    public var file: String
    public var line: UInt
    public var function: String

    public init(
        level: LogLevel, message: String, messageID: MessageID? = nil, fields: [(LogField, String)] = [],
        time: Date = Date(), file: String = #fileID, line: UInt = #line, function: String = #function
    ) {
        self.level = level
        self.message = message
        self.messageID = messageID
        self.fields = fields
        self.time = time
        self.file = file
        self.line = line
        self.function = function
    }

    /// The value of a field, if present.
    public subscript(field: LogField) -> String? {
        fields.first { $0.0 == field }?.1
    }

    public static func == (lhs: LogRecord, rhs: LogRecord) -> Bool {
        lhs.level == rhs.level && lhs.message == rhs.message && lhs.messageID == rhs.messageID
            && lhs.fields.map(\.0) == rhs.fields.map(\.0) && lhs.fields.map(\.1) == rhs.fields.map(\.1)
            && lhs.time == rhs.time && lhs.file == rhs.file && lhs.line == rhs.line && lhs.function == rhs.function
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(level)
        hasher.combine(message)
        hasher.combine(messageID)
    }
}

/// Where log records go: stderr, the journal, or a test's memory.
public protocol LogHandler: Sendable {
    func log(_ record: LogRecord)
}
