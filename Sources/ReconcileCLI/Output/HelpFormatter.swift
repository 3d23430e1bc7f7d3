/// Lays out help text in swift-argument-parser's shape: a 24-column name field, wrapped text.
enum HelpFormatter {
    static let nameWidth = 24
    static let lineWidth = 80

    static func optionLine(_ option: OptionSpec) -> String {
        var name = option.short.map { "-\($0), " } ?? ""
        name += "--\(option.long)"
        if let value = option.valueName { name += " <\(value)>" }
        return row(name, option.help)
    }

    /// A discussion: its paragraphs (split at blank lines) refilled to 80 columns.
    static func paragraphs(_ text: String) -> String {
        var paragraphs: [[Substring]] = [[]]
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.allSatisfy({ $0 == " " }) {
                if !(paragraphs.last?.isEmpty ?? true) { paragraphs.append([]) }
            } else {
                paragraphs[paragraphs.count - 1].append(line)
            }
        }
        return paragraphs.filter { !$0.isEmpty }.map { paragraph in
            var lines: [String] = []
            var current = ""
            for word in paragraph.joined(separator: " ").split(separator: " ") {
                if !current.isEmpty && current.count + 1 + word.count > lineWidth {
                    lines.append(current)
                    current = String(word)
                } else {
                    current += current.isEmpty ? String(word) : " " + word
                }
            }
            if !current.isEmpty { lines.append(current) }
            return lines.joined(separator: "\n")
        }.joined(separator: "\n\n")
    }

    /// `  name                    text`, the text wrapped at 80 columns and indented under itself.
    static func row(_ name: String, _ text: String) -> String {
        let indent = String(repeating: " ", count: nameWidth + 2)
        var lines: [String] = []
        var current = ""
        for word in text.split(separator: " ") {
            if !current.isEmpty && indent.count + current.count + 1 + word.count > lineWidth {
                lines.append(current)
                current = String(word)
            } else {
                current += current.isEmpty ? String(word) : " " + word
            }
        }
        if !current.isEmpty { lines.append(current) }
        if lines.isEmpty { lines = [""] }
        let head = "  " + name
        var output: String
        if head.count < indent.count {
            output = head + String(repeating: " ", count: indent.count - head.count) + lines[0] + "\n"
        } else {
            output = head + "\n" + indent + lines[0] + "\n"
        }
        for line in lines.dropFirst() { output += indent + line + "\n" }
        return output
    }
}
