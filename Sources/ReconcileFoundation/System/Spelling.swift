/// Suggests the closest known name for a misspelt one ("did you mean …?").
public enum Spelling {
    /// The candidate closest to `word` (case-insensitive edit distance), if it is close enough
    /// to be a likely typo: at most 2 edits, or a quarter of the word's length.
    public static func closest(to word: String, in candidates: [String]) -> String? {
        let lowered = word.lowercased()
        let limit = max(2, word.count / 4)
        var best: (candidate: String, distance: Int)?
        for candidate in candidates.sorted() {
            let score = distance(lowered, candidate.lowercased())
            guard score <= limit else { continue }
            if best == nil || score < best!.distance { best = (candidate, score) }
        }
        return best?.candidate
    }

    /// Levenshtein distance between two strings, by characters.
    public static func distance(_ a: String, _ b: String) -> Int {
        let a = Array(a)
        let b = Array(b)
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var previous = Array(0...b.count)
        var current = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            current[0] = i
            for j in 1...b.count {
                let substitution = previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)
                current[j] = min(previous[j] + 1, current[j - 1] + 1, substitution)
            }
            swap(&previous, &current)
        }
        return previous[b.count]
    }
}
