/// The name of a structured log field, as journald stores it (DESIGN §8).
///
/// Names follow journald's rules (checked by ``isValidName(_:)``): 1–64 characters of `A-Z`,
/// `0-9` and `_`, not starting with a digit or `_`.
public struct LogField: RawRepresentable, Sendable, Hashable, Comparable, CustomStringConvertible {
    public var rawValue: String

    public init(rawValue: String) {
        precondition(Self.isValidName(rawValue), "invalid journal field name \(rawValue)")
        self.rawValue = rawValue
    }

    public init(_ name: String) {
        self.init(rawValue: name)
    }

    public var description: String { rawValue }

    public static func < (lhs: LogField, rhs: LogField) -> Bool { lhs.rawValue < rhs.rawValue }

    /// journald's field-name rule (`journal_field_valid()`).
    public static func isValidName(_ name: String) -> Bool {
        guard let first = name.unicodeScalars.first, name.unicodeScalars.count <= 64 else { return false }
        guard first != "_", !("0"..."9").contains(first) else { return false }
        return name.unicodeScalars.allSatisfy { ("A"..."Z").contains($0) || ("0"..."9").contains($0) || $0 == "_" }
    }

    // MARK: - The logging machinery's own fields (the daemon's are in ReconcileCore)

    /// A count, in summaries.
    public static let count = LogField("COUNT")
    /// An `errno` value, as systemd's own `ERRNO=`.
    public static let errno = LogField("ERRNO")
    /// A file system path or configuration file.
    public static let path = LogField("PATH")
    /// In a "suppressed N" summary: the message id held back.
    public static let suppressedMessageID = LogField("SUPPRESSED_MESSAGE_ID")
    /// In a "suppressed N" summary of messages without an id: where in the code they come from.
    public static let suppressedCodeFile = LogField("SUPPRESSED_CODE_FILE")
    public static let suppressedCodeLine = LogField("SUPPRESSED_CODE_LINE")
}
