import Foundation
import Glibc
import ReconcileCore
import ReconcileSystem
import Testing
import TestSupport
@testable import ReconcileSpool

@Suite("Quarantine")
struct QuarantineTests {
    let fixture = SpoolFixture()
    let now = Date(timeIntervalSince1970: 1_796_023_566)
    let directories: SpoolDirectories

    init() {
        directories = SpoolDirectories(layout: fixture.layout)
    }

    var incoming: Int32 { try! directories.open(.incoming).descriptor }
    var rejected: Int32 { try! directories.open(.rejected).descriptor }

    @discardableResult
    func reject(_ name: SpoolFileName, _ problem: OrderFileProblem, orderID: String? = nil) throws -> SpoolFileName {
        try Quarantine().reject(name, from: incoming, into: rejected, problem: problem, orderID: orderID, now: now)
    }

    @discardableResult
    func reject(_ name: String, _ problem: OrderFileProblem, orderID: String? = nil) throws -> SpoolFileName {
        try reject(SpoolFileName(name), problem, orderID: orderID)
    }

    @Test("moves the file to rejected/ with its reason")
    func rejectOne() throws {
        fixture.drop("bad.json", "nope")
        let target = try reject("bad.json", OrderFileProblem(.notJSON, "not valid JSON: x"))
        #expect(target == SpoolFileName("bad.json"))
        #expect(fixture.incoming.isEmpty)
        #expect(fixture.rejected == ["bad.json", "bad.json.reason"])
        #expect(fixture.reason("bad.json") == """
            file: bad.json
            rejected_at: 2026-11-30T07:26:06Z
            reason: not_json
            detail: not valid JSON: x

            """)
    }

    @Test("a name that is taken gets a random suffix, never a count (the search is constant); nothing is overwritten")
    func collisions() throws {
        // As many as a flood leaves: the old NAME.1, NAME.2, … search looked at each.
        fixture.directory.write("spool/rejected/x.json", "first")
        for index in 1...3000 { fixture.directory.write("spool/rejected/x.json.\(index)", "") }
        var targets: [String] = []
        for round in 0..<3 {
            fixture.drop("x.json", "round \(round)")
            targets.append(try reject("x.json", OrderFileProblem(.notJSON, "r\(round)"), orderID: "A1").escaped)
        }
        for target in targets {
            #expect(target.wholeMatch(of: /x\.json\.[0-9a-f]{8}/) != nil, "\(target)")
            #expect(fixture.directory.read("spool/rejected/\(target).reason")?.contains("file: x.json\n") == true)
            #expect(fixture.directory.read("spool/rejected/\(target).reason")?.contains("order_id: A1\n") == true)
        }
        #expect(Set(targets).count == 3)
        #expect(fixture.directory.read("spool/rejected/x.json") == "first")
        #expect(fixture.directory.read("spool/rejected/\(targets[2])") == "round 2")
    }

    @Test("what a crash between reason and move leaves is cleaned up and reused")
    func crashLeftovers() throws {
        fixture.directory.write("spool/rejected/.x.json.reason.123.456.tmp", "half")
        fixture.directory.write("spool/rejected/x.json.reason", "orphan")
        fixture.directory.write("spool/rejected/.unrelated", "keep")
        #expect(Quarantine().removeLeftovers(in: rejected) == [SpoolFileName(".x.json.reason.123.456.tmp")])
        fixture.drop("x.json", "again")
        #expect(try reject("x.json", OrderFileProblem(.notJSON, "x")) == SpoolFileName("x.json"))
        #expect(fixture.rejected == [".unrelated", "x.json", "x.json.reason"])
        #expect(fixture.reason("x.json")?.contains("reason: not_json") == true)
    }

    @Test("a file named like a reason is never confused with one: a rejected x.reason does not take x's reason")
    func reasonLikeNames() throws {
        fixture.drop("x.reason", "producer's bytes")
        let first = try reject("x.reason", OrderFileProblem(.notJSON, "a"))
        #expect(!first.escaped.hasSuffix(".reason"))
        fixture.drop("x", "other")
        #expect(try reject("x", OrderFileProblem(.notJSON, "b")) == SpoolFileName("x"))
        #expect(fixture.directory.read("spool/rejected/\(first.escaped)") == "producer's bytes")
        #expect(fixture.reason(first.escaped)?.hasPrefix("file: x.reason\n") == true)
        #expect(fixture.reason("x")?.hasPrefix("file: x\n") == true)
    }

    @Test("control characters in a name never break the reason file; the name is escaped there")
    func oddNames() throws {
        fixture.drop("a\nb\r\u{1B}[2J.json", "x")
        try reject("a\nb\r\u{1B}[2J.json", OrderFileProblem(.notJSON, "x"))
        let reason = try #require(fixture.reason("a\nb\r\u{1B}[2J.json"))
        #expect(reason.hasPrefix("file: a\\nb\\r\\x1b[2J.json\n"))
        #expect(!reason.unicodeScalars.contains { $0.value < 0x20 && $0 != "\n" })
        #expect(reason.split(separator: "\n").count == 4)
    }

    @Test("a 250-byte name (and one of 255) is quarantined under a name that fits, its reason and temporary name too")
    func longNames() throws {
        for length in [201, 250, 255] {
            let name = String(repeating: "n", count: length - 5) + ".json"
            fixture.drop(name, "not json")
            let target = try reject(name, OrderFileProblem(.notJSON, "x"))
            #expect(target.bytes.count <= 177)
            #expect(Quarantine.reasonName(of: target).bytes.count + ".12345678.tmp".utf8.count + 9 <= 255)
            #expect(fixture.reason(target.escaped)?.hasPrefix("file: \(name)\n") == true)
            #expect(fixture.directory.read("spool/rejected/\(target.escaped)") == "not json")
        }
        #expect(fixture.incoming.isEmpty)
        // Two long names with the same beginning get different names.
        let a = SpoolFileName(String(repeating: "é", count: 120) + "a")
        let b = SpoolFileName(String(repeating: "é", count: 120) + "b")
        #expect(Quarantine.quarantineName(for: a) != Quarantine.quarantineName(for: b))
        // Cut on a character boundary: still UTF-8.
        #expect(String(validating: Quarantine.quarantineName(for: a).bytes, as: UTF8.self) != nil)
    }

    @Test("a name that is not UTF-8 is quarantined as its bytes, shown escaped in the reason")
    func bytesNames() throws {
        let name = SpoolFileName([0x62, 0x61, 0x64, 0xFF, 0xFE, 0x2E, 0x6A])
        fixture.drop(name, bytes: Array("nope".utf8))
        #expect(try reject(name, OrderFileProblem(.notJSON, "x")) == name)
        let listed = try FileSystem.listDirectoryEntries(descriptor: rejected, path: "rejected").map(SpoolFileName.init)
        #expect(Set(listed) == [name, Quarantine.reasonName(of: name)])
        let reason = fixture.readRejected(Quarantine.reasonName(of: name)).map { String(decoding: $0, as: UTF8.self) }
        #expect(reason?.hasPrefix("file: bad\\xff\\xfe.j\n") == true, "\(reason ?? "no reason")")
        #expect(fixture.readRejected(name) == Array("nope".utf8))
    }
}
