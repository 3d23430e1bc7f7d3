import Foundation

/// A systemd journal message catalog (`systemd/reconciled.catalog`), parsed the way
/// `journalctl --update-catalog` reads it: `#` comment lines; an entry starts with
/// `-- <32 hex digits>[ <locale>]`, then `Key: value` header lines up to the first empty line,
/// then the text up to the next entry.
public struct JournalCatalog: Sendable {
    public struct Entry: Sendable {
        /// The MESSAGE_ID as written after `-- `.
        public var id: String
        public var locale: String?
        /// Where the `-- ` line is (1-based).
        public var line: Int
        public var headers: [(key: String, value: String)]
        /// The text lines after the headers, trailing empty lines removed.
        public var body: [String]

        public func header(_ key: String) -> String? { headers.first { $0.key == key }?.value }

        /// Every `@NAME@` in the headers and the text, in order (what journalctl would try to
        /// replace by the entry's field NAME).
        public var substitutions: [String] {
            let text = (headers.map(\.value) + body).joined(separator: "\n")
            var names: [String] = []
            var rest = Substring(text)
            while let open = rest.firstIndex(of: "@") {
                let after = rest[rest.index(after: open)...]
                guard let close = after.firstIndex(of: "@") else { break }
                let name = after[..<close]
                if !name.isEmpty && !name.contains(where: \.isWhitespace) {
                    names.append(String(name))
                    rest = after[after.index(after: close)...]
                } else {
                    rest = after
                }
            }
            return names
        }
    }

    public struct ParseError: Error, CustomStringConvertible {
        public var line: Int
        public var message: String
        public var description: String { "line \(line): \(message)" }
    }

    public var entries: [Entry]

    public init(text: String) throws {
        var entries: [Entry] = []
        var inHeaders = false
        for (index, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let number = index + 1
            let line = String(raw)
            if line.hasPrefix("#") { continue }
            if line.hasPrefix("-- ") {
                let words = line.dropFirst(3).split(separator: " ")
                guard let id = words.first, words.count <= 2 else {
                    throw ParseError(line: number, message: "an entry line is '-- <id>[ <locale>]'")
                }
                entries.append(Entry(
                    id: String(id), locale: words.count == 2 ? String(words[1]) : nil, line: number, headers: [], body: []))
                inHeaders = true
                continue
            }
            guard !entries.isEmpty else {
                if line.trimmingCharacters(in: .whitespaces).isEmpty { continue }
                throw ParseError(line: number, message: "text before the first entry")
            }
            if inHeaders {
                if line.isEmpty {
                    inHeaders = false
                    continue
                }
                guard let colon = line.firstIndex(of: ":"), colon != line.startIndex else {
                    throw ParseError(line: number, message: "a header line is 'Key: value' (an empty line ends the headers)")
                }
                entries[entries.count - 1].headers.append(
                    (String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)))
            } else {
                entries[entries.count - 1].body.append(line)
            }
        }
        for index in entries.indices {
            while entries[index].body.last?.isEmpty == true { entries[index].body.removeLast() }
        }
        self.entries = entries
    }

    /// `systemd/reconciled.catalog` of this checkout.
    public static func repositoryCatalog() throws -> JournalCatalog {
        let path = Fixtures.repositoryRoot + "/systemd/reconciled.catalog"
        return try JournalCatalog(text: String(contentsOfFile: path, encoding: .utf8))
    }
}
