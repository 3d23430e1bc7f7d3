import Foundation

/// A Markdown page as the documentation tests read it: its headings (with the anchors GitHub
/// gives them), its `§` section numbers, and its relative links — code blocks left out.
struct MarkdownPage {
    /// A link's target as written: a path (empty for the page itself) and an anchor.
    struct Link: Equatable {
        var path: String
        var anchor: String?
        var line: Int
    }

    let headings: [String]
    /// The anchors of the headings, numbered as GitHub numbers repeats (`name`, `name-1`, …).
    let anchors: Set<String>
    /// The section numbers headings start with: `## §5a Refunds` gives `5a`.
    let sections: Set<String>
    /// Links to files and headings of this repository (not `http:`, `https:`, `mailto:`, `file:`).
    let links: [Link]

    init(_ text: String) {
        var headings: [String] = []
        var links: [Link] = []
        var inFence = false
        for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            if line.hasPrefix("```") {
                inFence.toggle()
                continue
            }
            if inFence { continue }
            if line.hasPrefix("#") {
                let title = line.drop { $0 == "#" }
                if title.first == " " { headings.append(title.trimmingCharacters(in: .whitespaces)) }
            }
            links += Self.links(in: String(line), line: number + 1)
        }
        self.headings = headings
        var anchors = Set<String>()
        var seen: [String: Int] = [:]
        for heading in headings {
            let base = Self.anchor(of: heading)
            let count = seen[base, default: 0]
            seen[base] = count + 1
            anchors.insert(count == 0 ? base : "\(base)-\(count)")
        }
        self.anchors = anchors
        sections = Set(headings.compactMap(Self.section(of:)))
        self.links = links
    }

    /// GitHub's anchor for a heading: lower case, letters, digits, `-` and `_` kept, spaces made
    /// `-`, everything else (punctuation, `§`, backticks) dropped.
    static func anchor(of heading: String) -> String {
        var anchor = ""
        for character in heading.lowercased() {
            if character == " " {
                anchor.append("-")
            } else if character.isLetter || character.isNumber || character == "-" || character == "_" {
                anchor.append(character)
            }
        }
        return anchor
    }

    /// The section number a heading starts with (`§5a Refunds` → `5a`), if any.
    static func section(of heading: String) -> String? {
        guard heading.hasPrefix("§") else { return nil }
        let number = heading.dropFirst().prefix { $0.isNumber || $0.isLetter || $0 == "." }
        let trimmed = number.hasSuffix(".") ? number.dropLast() : number
        return trimmed.isEmpty ? nil : String(trimmed)
    }

    /// The relative links of one line: `[text](target)`.
    static func links(in line: String, line number: Int) -> [Link] {
        var links: [Link] = []
        var rest = line[...]
        while let open = rest.range(of: "](") {
            let target = rest[open.upperBound...].prefix { $0 != ")" && $0 != " " }
            rest = rest[open.upperBound...]
            let external = ["http:", "https:", "mailto:", "file:"].contains { target.hasPrefix($0) }
            guard !target.isEmpty, !external else { continue }
            let parts = target.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)
            links.append(Link(path: String(parts[0]), anchor: parts.count > 1 ? String(parts[1]) : nil, line: number))
        }
        return links
    }
}
