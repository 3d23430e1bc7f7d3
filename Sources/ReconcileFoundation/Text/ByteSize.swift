/// Sizes as systemd writes them (`1M`, `512K`, `64`): powers of 1024, see systemd.exec(5).
public enum ByteSize {
    static let suffixes: [Character: Double] = [
        "B": 1, "K": 1024, "M": 1024 * 1024, "G": 1024 * 1024 * 1024,
        "T": 1024 * 1024 * 1024 * 1024, "P": 1024 * 1024 * 1024 * 1024 * 1024,
    ]

    public static let acceptedSuffixesDescription = "a number of bytes with an optional B, K, M, G, T or P suffix (e.g. 1M)"

    /// Parses a size in bytes; `nil` for anything that is not one.
    public static func parse(_ text: String) -> Int? {
        var body = Substring(text.trimmingSpaces())
        var factor = 1.0
        if let last = body.last, let suffix = suffixes[last] {
            factor = suffix
            body = body.dropLast()
        }
        guard !body.isEmpty, body.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == ".") }),
            let number = Double(body), number.isFinite
        else { return nil }
        let bytes = number * factor
        guard bytes < 9.0e18 else { return nil }
        return Int(bytes.rounded(.down))
    }

    /// Formats a size with the largest suffix that divides it (`1M`, `1536K`, `100`).
    public static func format(_ bytes: Int) -> String {
        for (suffix, size) in [("P", 1 << 50), ("T", 1 << 40), ("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)]
        where bytes >= size && bytes % size == 0 {
            return "\(bytes / size)\(suffix)"
        }
        return String(bytes)
    }
}

extension String {
    /// The string without leading and trailing spaces and tabs.
    package func trimmingSpaces() -> String {
        var scalars = Substring(self)
        while let first = scalars.first, first == " " || first == "\t" { scalars.removeFirst() }
        while let last = scalars.last, last == " " || last == "\t" { scalars.removeLast() }
        return String(scalars)
    }
}
