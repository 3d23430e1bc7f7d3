import Foundation
import Glibc
import ReconcileCore
import Testing
import TestSupport
@testable import ReconcileSystem
import ReconcileFoundation

@Suite("Stderr log backend")
struct StderrLogHandlerTests {
    let record = LogRecord(
        level: .error, message: "rejected spool file x y.json: not valid JSON", messageID: .fileRejected,
        fields: [(.spoolFile, "x y.json"), (.reason, "not_json")], time: Date(timeIntervalSince1970: 1_796_023_566.25))

    @Test("under journald: a <N> prefix and no time stamp")
    func journalStream() {
        let line = StderrLogHandler(style: .journalStream).format(record)
        #expect(line == "<3>rejected spool file x y.json: not valid JSON  SPOOL_FILE=\"x y.json\" REASON=not_json")
    }

    @Test("on a terminal: a clock and the level")
    func terminal() {
        let line = StderrLogHandler(style: .terminal).format(record)
        #expect(line == "07:26:06.250 err     rejected spool file x y.json: not valid JSON  SPOOL_FILE=\"x y.json\" REASON=not_json")
    }

    @Test("to a file or pipe: an RFC 3339 time stamp, identifier and pid")
    func plain() {
        let line = StderrLogHandler(style: .plain).format(record)
        #expect(line.hasPrefix("2026-11-30T07:26:06.250Z reconciled[\(getpid())] err: rejected spool file"))
    }

    @Test("one line per record, whatever the message holds")
    func singleLine() {
        let multi = LogRecord(level: .info, message: "a\nb", fields: [(.reason, "c\nd")], time: Date())
        #expect(!StderrLogHandler(style: .journalStream).format(multi).contains("\n"))
    }

    @Test("control characters never reach a terminal raw: CR, ESC, C1, bidi overrides escaped")
    func controlCharacters() {
        let hostile = LogRecord(
            level: .error, message: "rejected a\rb\u{1B}[2Jc\u{9B}d\u{202E}e\tf\u{7F}", fields: [(.spoolFile, "x\u{1B}]0;title\u{07}")], time: Date())
        let line = StderrLogHandler(style: .terminal).format(hostile)
        #expect(!line.unicodeScalars.contains { $0.value < 0x20 || (0x7F..<0xA0).contains($0.value) || $0 == "\u{202E}" }, "\(line)")
        #expect(line.contains(#"rejected a\rb\x1b[2Jc\u{9b}d\u{202e}e\tf\x7f"#))
        #expect(line.contains(#"SPOOL_FILE=x\x1b]0;title\x07"#))
        #expect(StderrLogHandler(style: .plain).format(LogRecord(level: .info, message: "café ✓", time: Date())).hasSuffix("info: café ✓"))
    }

    @Test("writes whole lines to its descriptor")
    func writes() throws {
        let directory = TemporaryDirectory(prefix: "log")
        let path = directory.file("err.log")
        let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        defer { close(descriptor) }
        let handler = StderrLogHandler(style: .journalStream, descriptor: descriptor)
        handler.log(record)
        handler.log(record)
        #expect(directory.read("err.log")?.split(separator: "\n").count == 2)
    }

    @Test("JOURNAL_STREAM must name the very stream stderr is")
    func journalStreamDetection() throws {
        let directory = TemporaryDirectory(prefix: "log")
        let descriptor = open(directory.file("f"), O_WRONLY | O_CREAT, 0o600)
        defer { close(descriptor) }
        var info = stat()
        #expect(fstat(descriptor, &info) == 0)
        let matching = "\(info.st_dev):\(info.st_ino)"
        #expect(JournalStream.matches(matching, descriptor: descriptor))
        #expect(!JournalStream.matches("\(info.st_dev):\(info.st_ino + 1)", descriptor: descriptor))
        #expect(!JournalStream.matches("garbage", descriptor: descriptor))
        #expect(StderrLogHandler.detectStyle(environment: ["JOURNAL_STREAM": matching], descriptor: descriptor) == .journalStream)
        #expect(StderrLogHandler.detectStyle(environment: ["JOURNAL_STREAM": "1:2"], descriptor: descriptor) == .plain)
    }
}
