/// One configuration file's text, with the path it was read from.
public struct ConfigurationSource: Sendable, Hashable {
    public var path: String
    public var text: String

    public init(path: String, text: String) {
        self.path = path
        self.text = text
    }
}

/// One `Key=Value` line, with where it came from.
public struct ConfigurationAssignment: Sendable, Hashable {
    public var section: String
    public var key: String
    /// The value with surrounding whitespace removed; empty means "reset to the default".
    public var value: String
    public var path: String
    public var line: Int

    public init(section: String, key: String, value: String, path: String, line: Int) {
        self.section = section
        self.key = key
        self.value = value
        self.path = path
        self.line = line
    }
}

/// A `[Section]` header and where it is.
public struct ConfigurationSection: Sendable, Hashable {
    public var name: String
    public var path: String
    public var line: Int
}

/// One file's sections and assignments, in file order.
public struct INIDocument: Sendable, Hashable {
    public var sections: [ConfigurationSection] = []
    public var assignments: [ConfigurationAssignment] = []
}

/// Splits systemd-style INI text into sections and assignments (systemd.syntax(7)):
/// `[Section]` headers, `Key=Value` lines, whole-line comments starting with `#` or `;`, and a
/// trailing backslash to continue a value on the next line.
public enum INIParser {
    public static func parse(_ source: ConfigurationSource) throws(ConfigurationError) -> INIDocument {
        var document = INIDocument()
        var problems: [ConfigurationProblem] = []
        var section: String?
        // "\r\n" is one Character in Swift, so split on both forms.
        var lines = source.text.split(omittingEmptySubsequences: false) { $0 == "\n" || $0 == "\r\n" }
            .map(String.init)
        if lines.last?.isEmpty == true { lines.removeLast() }
        var index = 0
        while index < lines.count {
            let lineNumber = index + 1
            var line = stripCarriageReturn(lines[index]).trimmingSpaces()
            index += 1
            if line.isEmpty || line.hasPrefix("#") || line.hasPrefix(";") { continue }
            // Continuation lines: a value ending in a backslash goes on with the next line.
            while line.hasSuffix("\\") {
                line.removeLast()
                guard index < lines.count else { break }
                let next = stripCarriageReturn(lines[index]).trimmingSpaces()
                index += 1
                if next.hasPrefix("#") || next.hasPrefix(";") { continue }
                line += " " + next
            }
            if line.hasPrefix("[") {
                guard line.hasSuffix("]"), line.count > 2 else {
                    problems.append(
                        ConfigurationProblem(
                            path: source.path, line: lineNumber,
                            message: "malformed section header \(quote(line)); expected [Section]"))
                    section = nil
                    continue
                }
                let name = String(line.dropFirst().dropLast()).trimmingSpaces()
                section = name
                document.sections.append(ConfigurationSection(name: name, path: source.path, line: lineNumber))
                continue
            }
            guard let equals = line.firstIndex(of: "=") else {
                problems.append(
                    ConfigurationProblem(
                        path: source.path, line: lineNumber, section: section,
                        message: "expected Key=Value, a [Section] header or a comment, found \(quote(line))"))
                continue
            }
            let key = String(line[..<equals]).trimmingSpaces()
            let value = String(line[line.index(after: equals)...]).trimmingSpaces()
            guard !key.isEmpty else {
                problems.append(
                    ConfigurationProblem(
                        path: source.path, line: lineNumber, section: section, message: "a line starts with '='"))
                continue
            }
            guard let section else {
                problems.append(
                    ConfigurationProblem(
                        path: source.path, line: lineNumber, key: key,
                        message: "\(key)= appears before any [Section] header"))
                continue
            }
            document.assignments.append(
                ConfigurationAssignment(section: section, key: key, value: value, path: source.path, line: lineNumber))
        }
        if !problems.isEmpty { throw ConfigurationError(problems: problems) }
        return document
    }

    private static func stripCarriageReturn(_ line: String) -> String {
        line.hasSuffix("\r") ? String(line.dropLast()) : line
    }

    package static func quote(_ text: String) -> String {
        let cut = text.count > 60 ? String(text.prefix(60)) + "…" : text
        return "\"\(cut)\""
    }
}
