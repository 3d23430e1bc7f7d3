import Foundation
import Synchronization
import Testing
import TestSupport
@testable import ReconcileCore
import ReconcileFoundation

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
        #expect(MessageID.catalogued(MessageID.escalated.rawValue) == .escalated)
    }

    @Test("rate limiting per message id, with a suppressed summary")
    func rateLimit() {
        let clock = ManualClock(wall: Date(timeIntervalSince1970: 1000))
        let capture = CapturingLogHandler()
        let limiter = RateLimitingLogHandler(wrapping: capture, interval: 10, burst: 3, clock: clock)
        let logger = Logger(handler: limiter)
        for index in 0..<10 { logger.info("file \(index)", id: .fileRejected) }
        for index in 0..<2 { logger.info("other \(index)", id: .finished) }
        #expect(capture.records(with: .fileRejected).count == 3)
        #expect(capture.records(with: .finished).count == 2)
        #expect(capture.records(with: .suppressed).isEmpty)

        clock.advance(by: .seconds(11))
        logger.info("after the window", id: .finished)
        let summaries = capture.records(with: .suppressed)
        #expect(summaries.count == 1)
        #expect(summaries.first?[.count] == "7")
        #expect(summaries.first?[.suppressedMessageID] == MessageID.fileRejected.rawValue)
        #expect(summaries.first?.message.contains("\"file-rejected\"") == true)
        #expect(summaries.first?.level == .notice)
        logger.info("file again", id: .fileRejected)
        #expect(capture.records(with: .fileRejected).count == 4)
    }

    @Test("err lines are limited too (a flood of bad spool files), and the summary keeps their level")
    func errorsAreLimited() {
        let clock = ManualClock(wall: Date(timeIntervalSince1970: 1000))
        let capture = CapturingLogHandler()
        let limiter = RateLimitingLogHandler(wrapping: capture, interval: 10, burst: 3, clock: clock)
        let logger = Logger(handler: limiter)
        for index in 0..<1000 { logger.error("rejected spool file \(index)", id: .fileRejected) }
        logger.warning("order A1 escalated", id: .escalated)
        #expect(capture.records(with: .fileRejected).count == 3)
        #expect(capture.records(with: .escalated).count == 1, "another kind keeps its own budget")
        clock.advance(by: .seconds(10))
        limiter.flush()
        let summary = capture.records(with: .suppressed)
        #expect(summary.map { $0[.count] } == ["997"])
        #expect(summary.first?.level == .error)
    }

    @Test("lines without a message id are limited per place in the code; crit and debug never")
    func linesWithoutID() {
        let clock = ManualClock(wall: Date(timeIntervalSince1970: 1000))
        let capture = CapturingLogHandler()
        let limiter = RateLimitingLogHandler(wrapping: capture, interval: 10, burst: 2, clock: clock)
        let logger = Logger(handler: limiter, minimumLevel: .debug)
        for index in 0..<5 { logger.info("new proof for order A\(index)") }
        for index in 0..<5 { logger.error("cannot move f\(index)") }
        for index in 0..<5 { logger.debug("read f\(index)") }
        for index in 0..<3 { logger.critical("cannot start \(index)") }
        let messages = capture.records.map(\.message)
        #expect(messages.filter { $0.hasPrefix("new proof") } == ["new proof for order A0", "new proof for order A1"])
        #expect(messages.filter { $0.hasPrefix("cannot move") } == ["cannot move f0", "cannot move f1"])
        #expect(messages.filter { $0.hasPrefix("read f") }.count == 5)
        #expect(messages.filter { $0.hasPrefix("cannot start") }.count == 3)

        clock.advance(by: .seconds(10))
        logger.info("later")
        let summaries = capture.records(with: .suppressedLines)
        #expect(summaries.count == 2)
        let info = summaries.first { $0.message.contains("new proof") }
        #expect(info?[.count] == "3")
        #expect(info?.message.contains("messages like \"new proof for order A2\" (") == true)
        #expect(info?[.suppressedCodeFile]?.hasSuffix("LoggingTests.swift") == true)
        #expect(info?[.suppressedCodeLine] != nil)
        #expect(summaries.first { $0.message.contains("cannot move") }?.level == .error)
    }

    @Test("the summary comes when the window ends, even if nothing else is logged")
    func timedSummary() {
        let clock = ManualClock()
        let capture = CapturingLogHandler()
        let limiter = RateLimitingLogHandler(wrapping: capture, interval: 0.2, burst: 1, clock: clock)
        let logger = Logger(handler: limiter)
        for index in 0..<5 { logger.error("rejected \(index)", id: .fileRejected) }
        #expect(clock.pendingDeadlines.count == 1, "one timer for the window")
        clock.advance(by: .milliseconds(200))
        #expect(capture.records(with: .suppressed).isEmpty, "reported before the window ended")
        clock.advance(by: .milliseconds(60))  // the timer is set a little after the window's end
        #expect(capture.records(with: .suppressed).map { $0[.count] } == ["4"])
    }

    @Test("flush reports what is still held back")
    func flush() {
        let capture = CapturingLogHandler()
        let limiter = RateLimitingLogHandler(wrapping: capture, interval: 3600, burst: 1, clock: ManualClock())
        let logger = Logger(handler: limiter)
        logger.info("one", id: .escalated)
        logger.info("two", id: .escalated)
        limiter.flush()
        #expect(capture.records(with: .suppressed).first?[.count] == "1")
    }
}
