/// Aligned plain-text tables that fit 80 columns: columns keep their minimum widths, the flexible
/// one takes what is left, and values too long are cut with `…`.
struct TextTable {
    struct Column {
        var title: String
        /// The widest this column may be.
        var maximum: Int
        /// Takes the room the others leave (the last such column).
        var flexible = false
        var alignRight = false
    }

    var columns: [Column]
    var rows: [[String]] = []
    var width = 80

    init(_ columns: [Column]) {
        self.columns = columns
    }

    mutating func add(_ row: [String]) {
        rows.append(row)
    }

    /// The table, with a header line, each line at most `width` characters.
    func render(style: TerminalStyle = .plain, colours: [Int: (String) -> TerminalStyle.Colour?] = [:]) -> String {
        var widths = columns.enumerated().map { index, column in
            min(column.maximum, max(column.title.count, rows.map { $0[index].count }.max() ?? 0))
        }
        let gaps = 2 * (columns.count - 1)
        if let flexible = columns.lastIndex(where: \.flexible) {
            let others = widths.enumerated().filter { $0.offset != flexible }.map(\.element).reduce(0, +)
            widths[flexible] = max(columns[flexible].title.count, min(widths[flexible], width - gaps - others))
        }
        func line(_ cells: [String], colour: Bool) -> String {
            var parts: [String] = []
            for (index, cell) in cells.enumerated() {
                let cut = Self.cut(cell, to: widths[index])
                let isLast = index == cells.count - 1
                var padded = columns[index].alignRight
                    ? String(repeating: " ", count: widths[index] - cut.count) + cut
                    : (isLast ? cut : cut + String(repeating: " ", count: widths[index] - cut.count))
                if colour, let pick = colours[index], let chosen = pick(cell) { padded = style.paint(padded, chosen) }
                parts.append(padded)
            }
            var text = parts.joined(separator: "  ")
            while text.hasSuffix(" ") { text.removeLast() }  // an empty last cell leaves no trailing blanks
            return text
        }
        var output = style.bold(line(columns.map(\.title), colour: false)) + "\n"
        for row in rows { output += line(row, colour: true) + "\n" }
        return output
    }

    /// `text` cut to `width` characters, with `…` in place of what is missing.
    static func cut(_ text: String, to width: Int) -> String {
        guard text.count > width else { return text }
        guard width > 1 else { return String(text.prefix(width)) }
        return String(text.prefix(width - 1)) + "…"
    }
}
