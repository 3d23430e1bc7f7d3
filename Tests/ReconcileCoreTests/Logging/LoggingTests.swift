import Foundation
import Synchronization
import Testing
@testable import ReconcileCore

@Suite("Logging")
struct LoggingTests {
    @Test("filters by level and carries fields in order")
    func levelsAndFields() {
        let capture = CapturingLogHandler()
        let logger = Logger(handler: capture, minimumLevel: .info).with(.endpoint, "production")
        logger.debug("hidden")
        logger.info("shown", id: .finished, [.orderID: "A1", .transactionID: nil, .attempt: "2"])
        logger.error("bad")
        #expect(capture.records.map(\.message) == ["shown", "bad"])
        let record = capture.records[0]
        #expect(record.messageID == .finished)
        #expect(record.fields.map(\.0) == [.endpoint, .orderID, .attempt])
        #expect(record[.orderID] == "A1")
        #expect(record.level == .info)
        #expect(record.file.hasSuffix("LoggingTests.swift"))
    }

    @Test("levels compare by importance and parse journalctl's names")
    func levels() {
        #expect(LogLevel.error > LogLevel.warning)
        #expect(LogLevel.debug < LogLevel.info)
        #expect(LogLevel(name: "err") == .error)
        #expect(LogLevel(name: "4") == .warning)
        #expect(LogLevel(name: "loud") == nil)
        #expect(LogLevel.error.rawValue == 3)
    }

    @Test("journal field names follow journald's rules")
    func fieldNames() {
        #expect(LogField.isValidName("ORDER_ID"))
        #expect(LogField.isValidName("A1"))
        #expect(!LogField.isValidName("_PID"))
        #expect(!LogField.isValidName("1ABC"))
        #expect(!LogField.isValidName("order_id"))
        #expect(!LogField.isValidName(""))
        #expect(!LogField.isValidName(String(repeating: "A", count: 65)))
        #expect(LogField.isValidName(String(repeating: "A", count: 64)))
    }

    @Test("message ids are unique 128-bit lower-case hex")
    func messageIDs() {
        let ids = MessageID.all.map(\.rawValue)
        #expect(Set(ids).count == ids.count)
        #expect(ids.allSatisfy { $0.count == 32 && $0.allSatisfy { $0.isHexDigit && !$0.isUppercase } })
        #expect(MessageID(rawValue: MessageID.escalated.rawValue) == .escalated)
    }

    @Test("rate limiting per message id, with a suppressed summary")
    func rateLimit() {
        let clock = Mutex(Date(timeIntervalSince1970: 1000))
        let capture = CapturingLogHandler()
        let limiter = RateLimitingLogHandler(wrapping: capture, interval: 10, burst: 3, now: { clock.withLock { $0 } })
        let logger = Logger(handler: limiter)
        for index in 0..<10 { logger.info("file \(index)", id: .fileRejected) }
        for index in 0..<2 { logger.info("other \(index)", id: .finished) }
        logger.info("no id, never limited")
        logger.error("errors are never limited", id: .fileRejected)
        #expect(capture.records(with: .fileRejected).count == 4)
        #expect(capture.records(with: .finished).count == 2)
        #expect(capture.records(with: .suppressed).isEmpty)

        clock.withLock { $0 += 11 }
        logger.info("after the window", id: .finished)
        let summaries = capture.records(with: .suppressed)
        #expect(summaries.count == 1)
        #expect(summaries.first?[.count] == "7")
        #expect(summaries.first?.message.contains("\"file-rejected\"") == true)
        logger.info("file again", id: .fileRejected)
        #expect(capture.records(with: .fileRejected).count == 5)
    }

    @Test("flush reports what is still held back")
    func flush() {
        let capture = CapturingLogHandler()
        let limiter = RateLimitingLogHandler(wrapping: capture, interval: 3600, burst: 1)
        let logger = Logger(handler: limiter)
        logger.info("one", id: .escalated)
        logger.info("two", id: .escalated)
        limiter.flush()
        #expect(capture.records(with: .suppressed).first?[.count] == "1")
    }
}
