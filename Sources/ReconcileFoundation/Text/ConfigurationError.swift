/// One thing wrong with the configuration, located by file, line, section and key.
public struct ConfigurationProblem: Sendable, Hashable, CustomStringConvertible {
    /// The file the problem is in.
    public var path: String
    /// One-based line, when the problem is on a line (a missing key is not).
    public var line: Int?
    public var section: String?
    public var key: String?
    public var message: String

    public init(path: String, line: Int? = nil, section: String? = nil, key: String? = nil, message: String) {
        self.path = path
        self.line = line
        self.section = section
        self.key = key
        self.message = message
    }

    /// `path:line: [Section] Key=: message`, as compilers and systemd print locations.
    public var description: String {
        var text = path
        if let line { text += ":\(line)" }
        text += ":"
        if let section {
            text += " [\(section)]"
            if let key { text += " \(key)=" }
            text += ":"
        }
        return text + " " + message
    }
}

/// A configuration that cannot be used: every problem found, in file order.
///
/// `reconciled` exits 78 (`EX_CONFIG`) on it; `reconcilectl check-config` prints it.
public struct ConfigurationError: Error, Sendable, Hashable, CustomStringConvertible {
    public var problems: [ConfigurationProblem]

    public init(problems: [ConfigurationProblem]) {
        self.problems = problems
    }

    public init(_ problem: ConfigurationProblem) {
        self.problems = [problem]
    }

    public var description: String {
        problems.map(\.description).joined(separator: "\n")
    }
}
