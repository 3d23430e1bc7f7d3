import Foundation
import Testing
@testable import ReconcileCore
import ReconcileFoundation

@Suite("Journal entry fields")
struct JournalEntryTests {
    @Test("MESSAGE, PRIORITY, SYSLOG_IDENTIFIER, MESSAGE_ID, the record's fields in order, then the code location")
    func order() {
        let record = LogRecord(
            level: .warning, message: "order A1 escalated: duplicate_transaction", messageID: .escalated,
            fields: [(.orderID, "A1"), (.orderState, "escalated"), (.reason, "duplicate_transaction")],
            file: "ReconcileEngine/Scheduler.swift", line: 481, function: "report(_:lastRequest:)")
        let entry = JournalEntry(record, identifier: "reconciled")
        #expect(entry.fields.map(\.name) == [
            "MESSAGE", "PRIORITY", "SYSLOG_IDENTIFIER", "MESSAGE_ID", "ORDER_ID", "ORDER_STATE", "REASON", "CODE_FILE", "CODE_LINE", "CODE_FUNC",
        ])
        #expect(entry["PRIORITY"] == "4")
        #expect(entry["MESSAGE_ID"] == "8d96f3cc23f944988959a52d96d05ed5")
        #expect(entry["CODE_LINE"] == "481")
        #expect(entry["CODE_FUNC"] == "report(_:lastRequest:)")
        #expect(entry["ORDER_ID"] == "A1")
    }

    @Test("no MESSAGE_ID when the event has none; a multi-line message is kept whole (the protocol carries it)")
    func plain() {
        let entry = JournalEntry(LogRecord(level: .info, message: "line one\nline two"), identifier: "reconciled")
        #expect(entry["MESSAGE_ID"] == nil)
        #expect(entry["MESSAGE"] == "line one\nline two")
        #expect(entry.fields.allSatisfy { LogField.isValidName($0.name) })
    }
}
