/// A log record as journald's native protocol takes it: `FIELD=value` assignments (DESIGN §8).
///
/// `MESSAGE`, `PRIORITY`, `SYSLOG_IDENTIFIER`, `MESSAGE_ID` when the event has one, the record's
/// own fields, then `CODE_FILE`, `CODE_LINE` and `CODE_FUNC`. Field names are checked against
/// journald's rule; one that fails it (none can: ``LogField`` checks at construction) is left
/// out rather than sent, since journald would drop the whole entry.
public struct JournalEntry: Sendable, Hashable {
    /// The assignments in order, names and values apart.
    public var fields: [Field]

    /// One assignment. The value may hold any bytes, newlines included.
    public struct Field: Sendable, Hashable {
        public var name: String
        public var value: String

        public init(_ name: String, _ value: String) {
            self.name = name
            self.value = value
        }
    }

    public init(_ record: LogRecord, identifier: String) {
        var fields = [
            Field("MESSAGE", record.message),
            Field("PRIORITY", String(record.level.rawValue)),
            Field("SYSLOG_IDENTIFIER", identifier),
        ]
        if let id = record.messageID { fields.append(Field("MESSAGE_ID", id.rawValue)) }
        for (field, value) in record.fields where LogField.isValidName(field.rawValue) {
            fields.append(Field(field.rawValue, value))
        }
        fields.append(Field("CODE_FILE", record.file))
        fields.append(Field("CODE_LINE", String(record.line)))
        fields.append(Field("CODE_FUNC", record.function))
        self.fields = fields
    }

    /// The value of the first assignment to `name`.
    public subscript(name: String) -> String? {
        fields.first { $0.name == name }?.value
    }
}
