/// A shell wildcard pattern, as `fnmatch(3)` reads one without flags: `*` matches any run of
/// characters (none included), `?` one character, `[abc]`, `[a-z]` and `[!x]` (or `[^x]`) one
/// character of a set, and `\` takes the next character literally. It matches whole strings,
/// character by character (Unicode scalars); `/` and a leading `.` are nothing special.
///
/// For configuration values that name things by pattern (`[Discovery] Products=`); a pattern
/// with an unclosed `[` or a trailing `\` is refused when it is read, never half-matched.
public struct ShellGlob: Sendable, Hashable, CustomStringConvertible {
    /// The pattern as written.
    public let pattern: String
    private let elements: [Element]

    private enum Element: Sendable, Hashable {
        case literal(Unicode.Scalar)
        case any
        case anyRun
        case set(ranges: [ClosedRange<Unicode.Scalar>], negated: Bool)
    }

    /// Why a pattern cannot be read.
    public struct Problem: Error, Sendable, Hashable, CustomStringConvertible {
        public let description: String

        public init(_ description: String) {
            self.description = description
        }
    }

    /// Reads `pattern`; throws a ``Problem`` naming what is wrong with it.
    public init(_ pattern: String) throws(Problem) {
        self.pattern = pattern
        var elements: [Element] = []
        var scalars = Array(pattern.unicodeScalars)[...]
        while let scalar = scalars.popFirst() {
            switch scalar {
            case "*":
                // A run of stars is one star.
                if elements.last != .anyRun { elements.append(.anyRun) }
            case "?":
                elements.append(.any)
            case "\\":
                guard let next = scalars.popFirst() else { throw Problem("ends in a lone \\") }
                elements.append(.literal(next))
            case "[":
                elements.append(try Self.readSet(&scalars))
            default:
                elements.append(.literal(scalar))
            }
        }
        self.elements = elements
    }

    /// Reads a set after its `[`, up to and including its `]`. A `]` first in the set (after a
    /// `!` or `^`) is a member.
    private static func readSet(_ scalars: inout ArraySlice<Unicode.Scalar>) throws(Problem) -> Element {
        var negated = false
        if let first = scalars.first, first == "!" || first == "^" {
            negated = true
            scalars.removeFirst()
        }
        var ranges: [ClosedRange<Unicode.Scalar>] = []
        var first = true
        while true {
            guard var low = scalars.popFirst() else { throw Problem("has a [ without its ]") }
            if low == "]" && !first { break }
            first = false
            if low == "\\" {
                guard let escaped = scalars.popFirst() else { throw Problem("has a [ without its ]") }
                low = escaped
            }
            if scalars.count >= 2, scalars.first == "-", scalars[scalars.index(after: scalars.startIndex)] != "]" {
                scalars.removeFirst()
                var high = scalars.removeFirst()
                if high == "\\" {
                    guard let escaped = scalars.popFirst() else { throw Problem("has a [ without its ]") }
                    high = escaped
                }
                guard low <= high else { throw Problem("has the range \(low)-\(high), whose ends are the wrong way round") }
                ranges.append(low...high)
            } else {
                ranges.append(low...low)
            }
        }
        return .set(ranges: ranges, negated: negated)
    }

    /// Whether `text`, whole, matches.
    public func matches(_ text: String) -> Bool {
        let scalars = Array(text.unicodeScalars)
        // The classic two-pointer walk: on a mismatch, go back to the last star and let it take
        // one more character. Linear in practice, never exponential.
        var textIndex = 0
        var elementIndex = 0
        var lastStar: (element: Int, text: Int)?
        while textIndex < scalars.count {
            if elementIndex < elements.count {
                switch elements[elementIndex] {
                case .anyRun:
                    lastStar = (elementIndex, textIndex)
                    elementIndex += 1
                    continue
                case .any:
                    textIndex += 1
                    elementIndex += 1
                    continue
                case .literal(let scalar) where scalar == scalars[textIndex]:
                    textIndex += 1
                    elementIndex += 1
                    continue
                case .set(let ranges, let negated) where ranges.contains { $0.contains(scalars[textIndex]) } != negated:
                    textIndex += 1
                    elementIndex += 1
                    continue
                default:
                    break
                }
            }
            guard let star = lastStar else { return false }
            lastStar = (star.element, star.text + 1)
            elementIndex = star.element + 1
            textIndex = star.text + 1
        }
        while elementIndex < elements.count, elements[elementIndex] == .anyRun { elementIndex += 1 }
        return elementIndex == elements.count
    }

    public var description: String { pattern }
}
