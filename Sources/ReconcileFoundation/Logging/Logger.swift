import Foundation

/// The daemon's logger: levels, structured fields named as journald stores them, and a
/// `MESSAGE_ID` per kind of event.
///
/// A value type after swift-log's shape: libraries receive a `Logger`, only `main` chooses the
/// handler. Messages are autoclosures, so a filtered-out debug line costs nothing.
public struct Logger: Sendable {
    public var handler: any LogHandler
    /// Records below this level are dropped.
    public var minimumLevel: LogLevel
    /// Fields added to every record (for example `ENDPOINT=` for a verifier's logger).
    public var context: [(LogField, String)]

    public init(handler: any LogHandler, minimumLevel: LogLevel = .info, context: [(LogField, String)] = []) {
        self.handler = handler
        self.minimumLevel = minimumLevel
        self.context = context
    }

    /// A logger that drops everything.
    public static var discarding: Logger { Logger(handler: DiscardingLogHandler()) }

    /// This logger with an extra context field.
    public func with(_ field: LogField, _ value: String) -> Logger {
        var copy = self
        copy.context.append((field, value))
        return copy
    }

    public func isEnabled(_ level: LogLevel) -> Bool { level >= minimumLevel }

    public func log(
        _ level: LogLevel, _ message: @autoclosure () -> String, id: MessageID? = nil,
        _ fields: KeyValuePairs<LogField, String?> = [:],
        file: String = #fileID, line: UInt = #line, function: String = #function
    ) {
        guard level >= minimumLevel else { return }
        var all = context
        for (field, value) in fields {
            if let value { all.append((field, value)) }
        }
        handler.log(
            LogRecord(
                level: level, message: message(), messageID: id, fields: all, file: file, line: line, function: function))
    }

    public func debug(
        _ message: @autoclosure () -> String, id: MessageID? = nil, _ fields: KeyValuePairs<LogField, String?> = [:],
        file: String = #fileID, line: UInt = #line, function: String = #function
    ) {
        log(.debug, message(), id: id, fields, file: file, line: line, function: function)
    }

    public func info(
        _ message: @autoclosure () -> String, id: MessageID? = nil, _ fields: KeyValuePairs<LogField, String?> = [:],
        file: String = #fileID, line: UInt = #line, function: String = #function
    ) {
        log(.info, message(), id: id, fields, file: file, line: line, function: function)
    }

    public func notice(
        _ message: @autoclosure () -> String, id: MessageID? = nil, _ fields: KeyValuePairs<LogField, String?> = [:],
        file: String = #fileID, line: UInt = #line, function: String = #function
    ) {
        log(.notice, message(), id: id, fields, file: file, line: line, function: function)
    }

    public func warning(
        _ message: @autoclosure () -> String, id: MessageID? = nil, _ fields: KeyValuePairs<LogField, String?> = [:],
        file: String = #fileID, line: UInt = #line, function: String = #function
    ) {
        log(.warning, message(), id: id, fields, file: file, line: line, function: function)
    }

    public func error(
        _ message: @autoclosure () -> String, id: MessageID? = nil, _ fields: KeyValuePairs<LogField, String?> = [:],
        file: String = #fileID, line: UInt = #line, function: String = #function
    ) {
        log(.error, message(), id: id, fields, file: file, line: line, function: function)
    }

    public func critical(
        _ message: @autoclosure () -> String, id: MessageID? = nil, _ fields: KeyValuePairs<LogField, String?> = [:],
        file: String = #fileID, line: UInt = #line, function: String = #function
    ) {
        log(.critical, message(), id: id, fields, file: file, line: line, function: function)
    }
}

/// Drops every record.
public struct DiscardingLogHandler: LogHandler {
    public init() {}
    public func log(_ record: LogRecord) {}
}
