import Foundation
import ReconcileCore
import Testing
import TestSupport
@testable import ReconcileSpool

@Suite("Quarantine")
struct QuarantineTests {
    let fixture = SpoolFixture()
    let now = Date(timeIntervalSince1970: 1_796_023_566)

    @Test("moves the file to rejected/ with its reason")
    func reject() throws {
        fixture.drop("bad.json", "nope")
        let quarantine = Quarantine(layout: fixture.layout)
        let target = try quarantine.reject("bad.json", problem: OrderFileProblem(.notJSON, "not valid JSON: x"), now: now)
        #expect(target == "bad.json")
        #expect(fixture.incoming.isEmpty)
        #expect(fixture.rejected == ["bad.json", "bad.json.reason"])
        #expect(fixture.reason("bad.json") == """
            file: bad.json
            rejected_at: 2026-11-30T07:26:06Z
            reason: not_json
            detail: not valid JSON: x

            """)
    }

    @Test("a second file of the same name gets a numbered name; nothing is overwritten")
    func collisions() throws {
        let quarantine = Quarantine(layout: fixture.layout)
        for round in 0..<3 {
            fixture.drop("x.json", "round \(round)")
            _ = try quarantine.reject("x.json", problem: OrderFileProblem(.notJSON, "r\(round)"), orderID: "A1", now: now)
        }
        #expect(fixture.rejected == ["x.json", "x.json.1", "x.json.1.reason", "x.json.2", "x.json.2.reason", "x.json.reason"])
        #expect(fixture.directory.read("spool/rejected/x.json.2") == "round 2")
        #expect(fixture.reason("x.json.1")?.contains("order_id: A1") == true)
    }

    @Test("what a crash between reason and move leaves is cleaned up and reused")
    func crashLeftovers() throws {
        let quarantine = Quarantine(layout: fixture.layout)
        fixture.directory.write("spool/rejected/.x.json.reason.123.456.tmp", "half")
        fixture.directory.write("spool/rejected/x.json.reason", "orphan")
        fixture.directory.write("spool/rejected/.unrelated", "keep")
        #expect(quarantine.removeLeftovers() == [".x.json.reason.123.456.tmp"])
        fixture.drop("x.json", "again")
        #expect(try quarantine.reject("x.json", problem: OrderFileProblem(.notJSON, "x"), now: now) == "x.json")
        #expect(fixture.rejected == [".unrelated", "x.json", "x.json.reason"])
        #expect(fixture.reason("x.json")?.contains("reason: not_json") == true)
    }

    @Test("control characters in a name never break the reason file")
    func oddNames() throws {
        fixture.drop("a\nb.json", "x")
        _ = try Quarantine(layout: fixture.layout).reject("a\nb.json", problem: OrderFileProblem(.notJSON, "x"), now: now)
        #expect(fixture.reason("a\nb.json")?.hasPrefix("file: a?b.json\n") == true)
    }
}
