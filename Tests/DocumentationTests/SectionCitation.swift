import Foundation

/// A `§` citation found in a source file or page: which document it names and which section.
///
/// The forms the code uses: `DESIGN §5a` (a section of `docs/design.md`), `` `docs/protocols/apple.md`
/// §2.3 `` (a section of that page), `RFC 9110 §10.2.3` (outside the repository: not checked), and
/// a bare `§7` (in a page that has numbered sections, that page; elsewhere `docs/design.md`). A
/// citation that follows another with only a comma, `and` or a range's end between (`§3, §5`,
/// `§1.2–1.4, §2`) names the same document. Comment markers at line starts are removed first, so a citation broken over two
/// comment lines (`(DESIGN` / `/// §7)`) reads as one.
struct SectionCitation: Equatable {
    /// The document as cited: `DESIGN`, a path, or `nil` for a bare `§`.
    var document: String?
    var section: String
    var line: Int

    /// Whether the citation is of a document outside this repository (an RFC).
    var isExternal: Bool { document?.hasPrefix("RFC") == true }

    static func scan(_ text: String) -> [SectionCitation] {
        // Each line's leading comment markers dropped, lines joined with a space; `lineStarts`
        // maps an offset back to its line.
        var joined: [Character] = []
        var lineOfOffset: [Int] = []
        for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            var body = line.drop { $0 == " " || $0 == "\t" }
            for marker in ["///", "//", "#", "--", "*"] where body.hasPrefix(marker) {
                body = body.dropFirst(marker.count)
                break
            }
            for character in body {
                joined.append(character)
                lineOfOffset.append(number + 1)
            }
            joined.append(" ")
            lineOfOffset.append(number + 1)
        }
        var citations: [SectionCitation] = []
        var previousEnd: Int?
        var index = 0
        while index < joined.count {
            guard joined[index] == "§" else {
                index += 1
                continue
            }
            var start = index + 1
            while start < joined.count, joined[start] == " " { start += 1 }
            // Digits, at most one letter (`5a`), then `.digits` parts (`2.3`).
            var end = start
            while end < joined.count, joined[end].isNumber { end += 1 }
            guard end > start else {
                index += 1
                continue
            }
            if end < joined.count, joined[end].isLetter, joined[end].isLowercase,
                end + 1 >= joined.count || !(joined[end + 1].isLetter || joined[end + 1].isNumber)
            {
                end += 1
            }
            while end + 1 < joined.count, joined[end] == ".", joined[end + 1].isNumber {
                end += 1
                while end < joined.count, joined[end].isNumber { end += 1 }
            }
            let section = String(joined[start..<end])
            let before = String(joined[max(0, index - 80)..<index])
            var document = Self.document(endingAt: before)
            if document == nil, let previousEnd, let previous = citations.last,
                Self.continuesList(String(joined[previousEnd..<index]))
            {
                document = previous.document
            }
            citations.append(SectionCitation(document: document, section: section, line: lineOfOffset[index]))
            previousEnd = end
            index = end
        }
        return citations
    }

    /// Whether the text between two citations only continues a list (`, `, ` and `, or the end
    /// of a range such as `–1.4, `): then the second names the first's document.
    static func continuesList(_ gap: String) -> Bool {
        let words = gap.split { " ,;–-".contains($0) }
        return words.allSatisfy { $0 == "and" || $0.allSatisfy { $0.isNumber || $0 == "." } }
    }

    /// The document named just before a `§` (`DESIGN`, `RFC 9110`, or a `.md` path, possibly in
    /// backticks or quotes, possibly after an opening parenthesis), if any.
    static func document(endingAt text: String) -> String? {
        var trimmed = text[...]
        while let last = trimmed.last, last == " " || last == "`" || last == "\"" || last == "'" { trimmed = trimmed.dropLast() }
        let word = trimmed.reversed().prefix { !($0 == " " || $0 == "(" || $0 == "`" || $0 == "[" || $0 == "\"") }
        let token = String(word.reversed())
        if token == "DESIGN" { return "DESIGN" }
        if token.hasSuffix(".md") { return token }
        // `RFC 9110 §…`: the number, then RFC before it.
        if !token.isEmpty, token.allSatisfy(\.isNumber) {
            let beforeNumber = trimmed.dropLast(token.count)
            if beforeNumber.hasSuffix("RFC ") { return "RFC \(token)" }
        }
        return nil
    }
}
