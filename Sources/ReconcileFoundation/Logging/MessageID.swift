/// A journal `MESSAGE_ID`: one per kind of event, with a short name. The daemon's own events are
/// declared, and catalogued, in `ReconcileCore` (`MessageID+Catalog.swift`,
/// `systemd/reconciled.catalog`); here only the logging machinery's own.
public struct MessageID: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    public var rawValue: String
    /// A short name for the event, for tests and the stderr backend.
    public var name: String

    /// An id read back (from the journal, a test): named by its id, as nothing else is known.
    public init(rawValue: String) {
        self.init(rawValue, rawValue)
    }

    public init(_ name: String, _ id: String) {
        precondition(id.count == 32 && id.allSatisfy { $0.isHexDigit && !$0.isUppercase }, "MESSAGE_ID must be 32 lower-case hex digits")
        self.name = name
        self.rawValue = id
    }

    public var description: String { name }

    public static let suppressed = MessageID("suppressed", "36674a40de1e422b80438d197c1a4887")
    /// Messages without a message id held back by the rate limit (one place in the code).
    public static let suppressedLines = MessageID("suppressed-lines", "9afe68e58d024b71996fd36efb20fdaf")
}
