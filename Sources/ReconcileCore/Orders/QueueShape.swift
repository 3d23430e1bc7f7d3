import Foundation
import ReconcileFoundation

/// The orders still in play by age, as Postfix's `qshape` shows a mail queue (`reconcilectl
/// shape`, DESIGN §10): one row per state, product or endpoint, columns of ages in minutes —
/// up to 5, 10, 20, 40, 80, 160, 320, 640, 1280, then older — and a total. Counts orders that
/// are not finished, cancelled or revoked, by the time they were received.
public struct QueueShape: Sendable, Hashable {
    /// What the rows are.
    public enum Grouping: String, Sendable, Hashable, CaseIterable {
        case state, product, endpoint
    }

    /// The columns' upper bounds in minutes; an eleventh column holds the older ones.
    public static let bounds = [5, 10, 20, 40, 80, 160, 320, 640, 1280]
    public static var columnCount: Int { bounds.count + 1 }

    /// One row: its name, and a count per column.
    public struct Row: Sendable, Hashable {
        public var name: String
        public var counts: [Int]
        public var total: Int { counts.reduce(0, +) }

        public init(name: String, counts: [Int] = Array(repeating: 0, count: QueueShape.columnCount)) {
            self.name = name
            self.counts = counts
        }
    }

    public var grouping: Grouping
    /// Each row's counts by its name.
    private var counts: [String: [Int]] = [:]

    /// The rows, the largest total first (then by name).
    public var rows: [Row] {
        counts.map { Row(name: $0.key, counts: $0.value) }.sorted { ($0.total, $1.name) > ($1.total, $0.name) }
    }

    public init(grouping: Grouping) {
        self.grouping = grouping
    }

    /// The column of an order received at `receivedAt`, seen at `now`: the first bound its age
    /// is within (an age of exactly 5 minutes is in the 5 column), or the last.
    public static func column(receivedAt: Date, now: Date) -> Int {
        let minutes = max(0, now.timeIntervalSince(receivedAt)) / 60
        return bounds.firstIndex { minutes <= Double($0) } ?? bounds.count
    }

    /// Adds `count` orders of row `name` in `column`.
    public mutating func add(_ name: String, column: Int, count: Int = 1) {
        precondition((0..<Self.columnCount).contains(column), "column \(column) out of range")
        counts[name, default: Array(repeating: 0, count: Self.columnCount)][column] += count
    }

    /// Every row summed: the first line of the table.
    public var totalRow: Row {
        var total = Row(name: "TOTAL")
        for row in counts.values {
            for column in 0..<Self.columnCount { total.counts[column] += row[column] }
        }
        return total
    }

    /// The column headings: `T`, the bounds, then `1280+`.
    public static var headings: [String] { ["T"] + bounds.map(String.init) + ["\(bounds.last!)+"] }

    /// `shape --json` (documented in `docs/reconcilectl.md`).
    public var json: JSONValue {
        func row(_ row: Row) -> JSONValue {
            .object(JSONObject(["name": .string(row.name), "total": .integer(row.total), "counts": .array(row.counts.map { .integer($0) })]))
        }
        return .object(JSONObject([
            "version": .integer(1), "by": .string(grouping.rawValue), "bounds_minutes": .array(Self.bounds.map { .integer($0) }),
            "total": row(totalRow), "rows": .array(rows.map(row)),
        ]))
    }

    /// The table in at most 80 columns when the numbers allow (wider columns for larger counts):
    /// the row name left, then `T` and each age column right-aligned; names cut with `…`.
    public var text: String {
        let all = [totalRow] + rows
        let headings = Self.headings
        let widths = (0..<headings.count).map { index in
            all.map { row in String(index == 0 ? row.total : row.counts[index - 1]).count }.reduce(headings[index].count, max)
        }
        let nameWidth = max(5, min(20, all.map(\.name.count).max() ?? 5))
        func name(_ text: String) -> String {
            let cut = text.count > nameWidth ? String(text.prefix(nameWidth - 1)) + "…" : text
            return cut + String(repeating: " ", count: nameWidth - cut.count)
        }
        func right(_ text: String, _ width: Int) -> String { String(repeating: " ", count: max(0, width - text.count)) + text }
        var lines = [name("") + zip(headings, widths).map { " " + right($0, $1) }.joined()]
        for row in all {
            let values = [row.total] + row.counts
            lines.append(name(row.name) + zip(values, widths).map { " " + right(String($0), $1) }.joined())
        }
        return lines.map { $0.replacingOccurrences(of: "\\s+$", with: "", options: .regularExpression) }.joined(separator: "\n") + "\n"
    }
}
