/// A strict reader of Prometheus's text exposition format 0.0.4, for tests: it refuses what
/// node_exporter's textfile collector or Prometheus would refuse, and a little more, and hands
/// back the samples to check.
///
/// Refused: a line that does not end with a line feed; a metric name outside
/// `[a-zA-Z_:][a-zA-Z0-9_:]*`, a label name outside `[a-zA-Z_][a-zA-Z0-9_]*` or starting with
/// `__`; a label named twice; an escape other than `\\`, `\"` (label values) and `\n`; a value
/// that is not a float (`+Inf`, `-Inf` and `NaN` included); a time stamp (the textfile
/// collector refuses them); a second `HELP` or `TYPE` line for a name, or one after the
/// family's samples; an unknown type; a family's lines not in one group; the same series
/// twice; a negative or NaN counter; a histogram without `le` on its buckets, with bounds not
/// increasing, counts decreasing, no `+Inf` bucket, or `_count` unequal to it, or without
/// `_sum`. With `requireMetadata` (the default), every family needs `HELP` and `TYPE`.
public struct PrometheusText: Sendable {
    /// One sample line.
    public struct Sample: Sendable, Hashable, CustomStringConvertible {
        /// The name as written (`…_bucket`, `…_sum` and `…_count` for histograms).
        public var name: String
        public var labels: [String: String]
        public var value: Double

        public var description: String {
            let labels = labels.sorted { $0.key < $1.key }.map { "\($0.key)=\"\($0.value)\"" }.joined(separator: ",")
            return "\(name){\(labels)} \(value)"
        }
    }

    /// One family: its metadata and samples, in file order.
    public struct Family: Sendable {
        public var name: String
        public var help: String?
        public var type: String?
        public var samples: [Sample] = []
    }

    /// Why the text was refused, with the 1-based line.
    public struct Problem: Error, Sendable, CustomStringConvertible {
        public var line: Int
        public var message: String
        public var description: String { "line \(line): \(message)" }
    }

    public private(set) var families: [Family] = []

    /// Every sample, in file order.
    public var samples: [Sample] { families.flatMap(\.samples) }

    public func family(_ name: String) -> Family? {
        families.first { $0.name == name }
    }

    /// The value of the sample with exactly these labels.
    public func value(_ name: String, _ labels: [String: String] = [:]) -> Double? {
        samples.first { $0.name == name && $0.labels == labels }?.value
    }

    /// The samples of one name whose labels include `labels`.
    public func samples(_ name: String, matching labels: [String: String] = [:]) -> [Sample] {
        samples.filter { sample in sample.name == name && labels.allSatisfy { sample.labels[$0.key] == $0.value } }
    }

    // MARK: - Parsing

    private static let types: Set<String> = ["counter", "gauge", "histogram", "summary", "untyped"]

    public init(parsing text: String, requireMetadata: Bool = true) throws(Problem) {
        guard text.isEmpty || text.hasSuffix("\n") else { throw Problem(line: 0, message: "the text does not end with a line feed") }
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        lines.removeLast()
        var index: [String: Int] = [:]
        var closed = Set<String>()
        var current: String?
        var series = Set<String>()

        func open(_ name: String, line: Int) throws(Problem) -> Int {
            if current != name {
                if let current { closed.insert(current) }
                guard !closed.contains(name) else { throw Problem(line: line, message: "\(name): its lines are not in one group") }
                current = name
            }
            if let position = index[name] { return position }
            families.append(Family(name: name))
            index[name] = families.count - 1
            return families.count - 1
        }

        for (offset, line) in lines.enumerated() {
            let number = offset + 1
            if line.allSatisfy({ $0 == " " || $0 == "\t" }) { continue }
            if line.hasPrefix("#") {
                var scanner = Scanner(line.dropFirst(), line: number)
                scanner.skipBlanks()
                let keyword = scanner.word()
                guard keyword == "HELP" || keyword == "TYPE" else { continue }  // a comment
                guard scanner.skipBlanks() else { throw Problem(line: number, message: "\(keyword) without a metric name") }
                let name = try scanner.metricName()
                let position = try open(name, line: number)
                guard families[position].samples.isEmpty else {
                    throw Problem(line: number, message: "\(keyword) for \(name) after its samples")
                }
                if keyword == "HELP" {
                    guard families[position].help == nil else { throw Problem(line: number, message: "a second HELP for \(name)") }
                    families[position].help = scanner.atEnd ? "" : try scanner.helpText()
                } else {
                    guard families[position].type == nil else { throw Problem(line: number, message: "a second TYPE for \(name)") }
                    guard scanner.skipBlanks() else { throw Problem(line: number, message: "TYPE for \(name) without a type") }
                    let type = scanner.word()
                    guard Self.types.contains(type), scanner.atEnd else {
                        throw Problem(line: number, message: "TYPE for \(name): unknown type \(type)")
                    }
                    families[position].type = type
                }
                continue
            }
            var scanner = Scanner(Substring(line), line: number)
            let name = try scanner.metricName()
            let labels = try scanner.labels()
            guard scanner.skipBlanks() else { throw Problem(line: number, message: "\(name): no value") }
            let value = try scanner.value()
            if scanner.skipBlanks() && !scanner.atEnd {
                throw Problem(line: number, message: "\(name): a time stamp or more after the value (the textfile collector refuses time stamps)")
            }
            guard scanner.atEnd else { throw Problem(line: number, message: "\(name): unexpected text after the value") }

            let familyName = Self.family(of: name, families: families, index: index)
            let position = try open(familyName, line: number)
            let type = families[position].type ?? "untyped"
            let key = name + "{" + labels.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: "\u{0}") + "}"
            guard series.insert(key).inserted else { throw Problem(line: number, message: "\(name): the same series twice") }
            if type == "counter" && !(value >= 0) {
                throw Problem(line: number, message: "\(name): a counter must not be negative or NaN")
            }
            if type == "histogram" {
                guard name != familyName else { throw Problem(line: number, message: "\(name): a histogram sample without _bucket, _sum or _count") }
                guard (name == familyName + "_bucket") == (labels["le"] != nil) else {
                    throw Problem(line: number, message: "\(name): le belongs on buckets, and only there")
                }
            }
            families[position].samples.append(Sample(name: name, labels: labels, value: value))
        }

        for family in families {
            if requireMetadata && (family.help == nil || family.type == nil) {
                throw Problem(line: 0, message: "\(family.name): no HELP or no TYPE")
            }
            if family.type == "histogram" { try Self.checkHistogram(family) }
        }
    }

    /// The family a sample belongs to: a histogram's or summary's suffixed samples belong to
    /// their base name when that family is typed so.
    private static func family(of name: String, families: [Family], index: [String: Int]) -> String {
        for suffix in ["_bucket", "_sum", "_count"] where name.hasSuffix(suffix) {
            let base = String(name.dropLast(suffix.count))
            guard let position = index[base] else { continue }
            let type = families[position].type
            if type == "histogram" || (type == "summary" && suffix != "_bucket") { return base }
        }
        return name
    }

    private static func checkHistogram(_ family: Family) throws(Problem) {
        var groups: [[String: String]: (bounds: [Double], counts: [Double], sum: Double?, count: Double?)] = [:]
        var order: [[String: String]] = []
        for sample in family.samples {
            var labels = sample.labels
            let le = labels.removeValue(forKey: "le")
            if groups[labels] == nil {
                groups[labels] = ([], [], nil, nil)
                order.append(labels)
            }
            if sample.name == family.name + "_bucket" {
                guard let le, let bound = Scanner.float(le) else {
                    throw Problem(line: 0, message: "\(family.name): le=\"\(le ?? "")\" is not a number")
                }
                if let last = groups[labels]!.bounds.last, !(bound > last) {
                    throw Problem(line: 0, message: "\(family.name)\(labels): bucket bounds do not increase (\(last), then \(bound))")
                }
                if let last = groups[labels]!.counts.last, sample.value < last {
                    throw Problem(line: 0, message: "\(family.name)\(labels): bucket counts decrease (\(last), then \(sample.value))")
                }
                groups[labels]!.bounds.append(bound)
                groups[labels]!.counts.append(sample.value)
            } else if sample.name == family.name + "_sum" {
                groups[labels]!.sum = sample.value
            } else {
                groups[labels]!.count = sample.value
            }
        }
        for labels in order {
            let group = groups[labels]!
            guard group.bounds.last == .infinity else { throw Problem(line: 0, message: "\(family.name)\(labels): no +Inf bucket") }
            guard group.sum != nil else { throw Problem(line: 0, message: "\(family.name)\(labels): no _sum") }
            guard group.count == group.counts.last else {
                throw Problem(line: 0, message: "\(family.name)\(labels): _count \(group.count.map { "\($0)" } ?? "missing") is not the +Inf bucket's \(group.counts.last!)")
            }
        }
    }

    // MARK: - Tokens

    /// Reads one line's tokens, byte by byte (names are ASCII; values are UTF-8).
    private struct Scanner {
        let text: [UInt8]
        let line: Int
        var position = 0

        init(_ text: Substring, line: Int) {
            self.text = Array(text.utf8)
            self.line = line
        }

        var atEnd: Bool { position == text.count }

        private var next: UInt8? { position < text.count ? text[position] : nil }

        /// Skips spaces and tabs; whether there were any.
        @discardableResult
        mutating func skipBlanks() -> Bool {
            let start = position
            while let byte = next, byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") { position += 1 }
            return position > start
        }

        mutating func word() -> String {
            let start = position
            while let byte = next, byte != UInt8(ascii: " ") && byte != UInt8(ascii: "\t") { position += 1 }
            return String(decoding: text[start..<position], as: UTF8.self)
        }

        mutating func metricName() throws(Problem) -> String {
            let name = identifier(colons: true)
            guard !name.isEmpty else { throw Problem(line: line, message: "no valid metric name at column \(position + 1)") }
            return name
        }

        private mutating func identifier(colons: Bool) -> String {
            let start = position
            while let byte = next {
                let letter = (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                    || byte == UInt8(ascii: "_") || (colons && byte == UInt8(ascii: ":"))
                let digit = (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
                guard letter || (digit && position > start) else { break }
                position += 1
            }
            return String(decoding: text[start..<position], as: UTF8.self)
        }

        mutating func labels() throws(Problem) -> [String: String] {
            guard next == UInt8(ascii: "{") else { return [:] }
            position += 1
            var labels: [String: String] = [:]
            while true {
                skipBlanks()
                guard let byte = next else { throw Problem(line: line, message: "unterminated label set") }
                if byte == UInt8(ascii: "}") {
                    position += 1
                    return labels
                }
                let name = identifier(colons: false)
                guard !name.isEmpty else { throw Problem(line: line, message: "no valid label name at column \(position + 1)") }
                guard !name.hasPrefix("__") else { throw Problem(line: line, message: "label name \(name) is reserved") }
                skipBlanks()
                guard next == UInt8(ascii: "=") else { throw Problem(line: line, message: "label \(name) without =") }
                position += 1
                skipBlanks()
                guard next == UInt8(ascii: "\"") else { throw Problem(line: line, message: "label \(name): value not quoted") }
                position += 1
                let value = try escaped(until: UInt8(ascii: "\""), quotes: true, what: "label \(name)")
                guard labels.updateValue(value, forKey: name) == nil else { throw Problem(line: line, message: "label \(name) twice") }
                skipBlanks()
                guard let separator = next else { throw Problem(line: line, message: "unterminated label set") }
                if separator == UInt8(ascii: ",") {
                    position += 1
                } else if separator != UInt8(ascii: "}") {
                    throw Problem(line: line, message: "expected , or } after label \(name)")
                }
            }
        }

        /// Text up to `terminator` (consumed; `nil`: the end of the line), unescaping `\\`,
        /// `\n` and, with `quotes`, `\"`; any other escape is refused.
        private mutating func escaped(until terminator: UInt8?, quotes: Bool, what: String) throws(Problem) -> String {
            var bytes: [UInt8] = []
            while true {
                guard let byte = next else {
                    if terminator == nil { break }
                    throw Problem(line: line, message: "\(what): unterminated")
                }
                position += 1
                if byte == terminator { break }
                guard byte == UInt8(ascii: "\\") else {
                    bytes.append(byte)
                    continue
                }
                guard let escape = next else { throw Problem(line: line, message: "\(what): an escape at the end") }
                position += 1
                switch escape {
                case UInt8(ascii: "\\"): bytes.append(escape)
                case UInt8(ascii: "n"): bytes.append(UInt8(ascii: "\n"))
                case UInt8(ascii: "\"") where quotes: bytes.append(escape)
                default: throw Problem(line: line, message: "\(what): invalid escape \\\(Character(UnicodeScalar(escape)))")
                }
            }
            guard let text = String(validating: bytes, as: UTF8.self) else { throw Problem(line: line, message: "\(what): not UTF-8") }
            return text
        }

        mutating func value() throws(Problem) -> Double {
            let token = word()
            guard let value = Self.float(token) else { throw Problem(line: line, message: "\(token) is not a float") }
            return value
        }

        mutating func helpText() throws(Problem) -> String {
            guard skipBlanks() else { throw Problem(line: line, message: "HELP: no blank after the name") }
            return try escaped(until: nil, quotes: false, what: "HELP")
        }

        /// A float as the format writes them: decimal with an optional exponent, `+Inf`,
        /// `-Inf`, `NaN`.
        static func float(_ token: String) -> Double? {
            switch token {
            case "+Inf": return .infinity
            case "-Inf": return -.infinity
            case "NaN": return .nan
            default: break
            }
            func isDigit(_ character: Character) -> Bool { character.isASCII && character.isNumber }
            var characters = Substring(token)
            if characters.first == "+" || characters.first == "-" { characters = characters.dropFirst() }
            let mantissa = characters.prefix { $0 != "e" && $0 != "E" }
            let exponent = characters.dropFirst(mantissa.count)
            let parts = mantissa.split(separator: ".", omittingEmptySubsequences: false)
            guard (1...2).contains(parts.count), parts.allSatisfy({ $0.allSatisfy(isDigit) }), parts.contains(where: { !$0.isEmpty })
            else { return nil }
            if !exponent.isEmpty {
                var digits = exponent.dropFirst()
                if digits.first == "+" || digits.first == "-" { digits = digits.dropFirst() }
                guard !digits.isEmpty, digits.allSatisfy(isDigit) else { return nil }
            }
            return Double(token)
        }
    }
}
