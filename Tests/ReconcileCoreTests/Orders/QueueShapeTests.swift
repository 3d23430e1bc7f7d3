import Foundation
import ReconcileFoundation
import Testing
@testable import ReconcileCore

/// `reconcilectl shape`'s counts (DESIGN §10): ages in minutes up to 5, 10, … 1280, then older;
/// rows by size; the total row; the table and its JSON.
@Suite("Queue shape")
struct QueueShapeTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    @Test("an age on a bound is in that bound's column; one second past it, the next; a future time is the first")
    func columns() {
        func column(_ seconds: Double) -> Int { QueueShape.column(receivedAt: Self.now.addingTimeInterval(-seconds), now: Self.now) }
        #expect(column(0) == 0 && column(300) == 0 && column(301) == 1)
        #expect(column(600) == 1 && column(601) == 2 && column(2400) == 3 && column(4800) == 4)
        #expect(column(1280 * 60) == 8 && column(1280 * 60 + 1) == 9 && column(90 * 86_400) == 9)
        #expect(column(-60) == 0)
        #expect(QueueShape.headings == ["T", "5", "10", "20", "40", "80", "160", "320", "640", "1280", "1280+"])
    }

    @Test("rows sorted by their totals, then by name; the total row sums them; text fits 80 columns; JSON holds every count")
    func table() throws {
        var shape = QueueShape(grouping: .state)
        shape.add("pending", column: 0, count: 3)
        shape.add("escalated", column: 9, count: 1)
        shape.add("pending", column: 5, count: 2)
        shape.add("waiting", column: 2, count: 1)
        #expect(shape.rows.map(\.name) == ["pending", "escalated", "waiting"])
        #expect(shape.totalRow.counts == [3, 0, 1, 0, 0, 2, 0, 0, 0, 1] && shape.totalRow.total == 7)
        #expect(shape.text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) == [
            "          T 5 10 20 40 80 160 320 640 1280 1280+",
            "TOTAL     7 3  0  1  0  0   2   0   0    0     1",
            "pending   5 3  0  0  0  0   2   0   0    0     0",
            "escalated 1 0  0  0  0  0   0   0   0    0     1",
            "waiting   1 0  0  1  0  0   0   0   0    0     0",
            "",
        ])
        let lines = shape.text.split(separator: "\n").map(String.init)
        #expect(lines.count == 5 && lines[1].hasPrefix("TOTAL") && lines[2].hasPrefix("pending") && lines.allSatisfy { $0.count <= 80 })
        #expect(lines[0].hasSuffix("1280 1280+") && lines[1].hasSuffix(" 1"))
        let json = try #require(shape.json.objectValue)
        #expect(json["by"]?.stringValue == "state" && json["total"]?["total"]?.int64Value == 7)
        #expect(json["rows"]?.arrayValue?.first?["counts"]?.arrayValue?.compactMap(\.int64Value) == [3, 0, 0, 0, 0, 2, 0, 0, 0, 0])
        #expect(json["bounds_minutes"]?.arrayValue?.count == 9)
    }

    @Test("a long name is cut with …; large counts widen their column instead of losing digits")
    func wide() {
        var shape = QueueShape(grouping: .product)
        shape.add("com.example.an.extremely.long.product.identifier", column: 9, count: 1_234_567)
        let lines = shape.text.split(separator: "\n").map(String.init)
        #expect(lines[2].hasPrefix("com.example.an.extr…"))
        #expect(lines[2].contains("1234567") && lines[1].contains("1234567"))
    }
}
