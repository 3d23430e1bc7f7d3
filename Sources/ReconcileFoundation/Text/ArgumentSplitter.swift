/// Splits a command line into arguments the way systemd splits `ExecStart=`: words separated by
/// whitespace, single or double quotes around a word, backslash escapes. No shell is involved,
/// so `$VAR`, globs and pipes mean nothing.
public enum ArgumentSplitter {
    /// Why a command line could not be split.
    public enum Problem: Error, Sendable, Hashable, CustomStringConvertible {
        case unterminatedQuote
        case trailingBackslash

        public var description: String {
            switch self {
            case .unterminatedQuote: "a quote is not closed"
            case .trailingBackslash: "the line ends in a lone backslash"
            }
        }
    }

    public static func split(_ line: String) throws(Problem) -> [String] {
        var words: [String] = []
        var current = ""
        var inWord = false
        var quote: Character?
        var iterator = line.makeIterator()
        while let character = iterator.next() {
            if let open = quote {
                if character == open {
                    quote = nil
                } else if character == "\\" && open == "\"" {
                    guard let escaped = iterator.next() else { throw .trailingBackslash }
                    current.append(unescape(escaped))
                } else {
                    current.append(character)
                }
                continue
            }
            switch character {
            case " ", "\t", "\n":
                if inWord {
                    words.append(current)
                    current = ""
                    inWord = false
                }
            case "\"", "'":
                quote = character
                inWord = true
            case "\\":
                guard let escaped = iterator.next() else { throw .trailingBackslash }
                current.append(unescape(escaped))
                inWord = true
            default:
                current.append(character)
                inWord = true
            }
        }
        if quote != nil { throw .unterminatedQuote }
        if inWord { words.append(current) }
        return words
    }

    private static func unescape(_ character: Character) -> Character {
        switch character {
        case "n": "\n"
        case "t": "\t"
        default: character
        }
    }
}
