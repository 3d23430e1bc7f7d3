import Glibc
import Testing
import ReconcileFoundation

/// Shell wildcards as `fnmatch(3)` reads them without flags, checked case by case and against
/// the C library itself on generated patterns.
@Suite("Shell glob")
struct ShellGlobTests {
    @Test(
        "matches whole strings: stars, question marks, sets, ranges, negation, escapes",
        arguments: [
            ("com.example.gems.*", "com.example.gems.100", true),
            ("com.example.gems.*", "com.example.gems.", true),
            ("com.example.gems.*", "com.example.gemsX100", false),
            ("com.example.gems.*", "xcom.example.gems.1", false),
            ("*", "", true),
            ("*", "anything/at all", true),
            ("?", "", false),
            ("?", "é", true),
            ("gems_??", "gems_10", true),
            ("gems_??", "gems_100", false),
            ("a*b*c", "aXbYc", true),
            ("a*b*c", "aXbYcZ", false),
            ("a**c", "abc", true),
            ("[abc]x", "bx", true),
            ("[abc]x", "dx", false),
            ("[a-c]x", "cx", true),
            ("[!a-c]x", "cx", false),
            ("[^a-c]x", "dx", true),
            ("[]]", "]", true),
            ("[!]]", "a", true),
            ("[a-]", "-", true),
            ("\\*", "*", true),
            ("\\*", "x", false),
            ("[\\]]", "]", true),
            ("exact", "exact", true),
            ("exact", "exactly", false),
        ])
    func matching(pattern: String, text: String, expected: Bool) throws {
        #expect(try ShellGlob(pattern).matches(text) == expected)
    }

    @Test(
        "a pattern that cannot be read is refused with what is wrong",
        arguments: [
            ("gems[", "has a [ without its ]"),
            ("gems[a-", "has a [ without its ]"),
            ("gems\\", "ends in a lone \\"),
            ("[z-a]", "has the range z-a, whose ends are the wrong way round"),
        ])
    func refused(pattern: String, problem: String) {
        #expect(throws: ShellGlob.Problem(problem)) { try ShellGlob(pattern) }
    }

    @Test("agrees with the C library's fnmatch on 20,000 generated patterns and strings")
    func agreesWithFnmatch() throws {
        var generator = SplitMix64(seed: 0x5eed_1234)
        let alphabet: [Character] = ["a", "b", "c", ".", "-", "_"]
        func word(_ length: Int) -> String {
            String((0..<length).map { _ in alphabet[Int(generator.next() % UInt64(alphabet.count))] })
        }
        func pattern() -> String {
            var text = ""
            for _ in 0..<Int(generator.next() % 6) {
                switch generator.next() % 8 {
                case 0: text += "*"
                case 1: text += "?"
                case 2: text += "[a-b]"
                case 3: text += "[!c.]"
                case 4: text += "\\."
                default: text += word(1)
                }
            }
            return text
        }
        var disagreements: [String] = []
        for _ in 0..<20_000 {
            let pattern = pattern()
            let text = word(Int(generator.next() % 7))
            let expected = fnmatch(pattern, text, 0) == 0
            if try ShellGlob(pattern).matches(text) != expected { disagreements.append("\(pattern) ~ \(text): fnmatch says \(expected)") }
        }
        #expect(disagreements.isEmpty, "\(disagreements.prefix(10))")
    }

    @Test("forty stars against a 5,000-character near-miss: no match, and no backtracking blow-up (it ends)")
    func noBlowUp() throws {
        // A matcher that tried every split of the text among the stars would not end.
        let glob = try ShellGlob(String(repeating: "a*", count: 40) + "b")
        #expect(!glob.matches(String(repeating: "a", count: 5_000)))
        #expect(glob.matches(String(repeating: "a", count: 5_000) + "b"))
    }
}

/// A small deterministic generator, so that a failing case can be replayed.
private struct SplitMix64 {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var value = state
        value = (value ^ (value >> 30)) &* 0xBF58_476D_1CE4_E5B9
        value = (value ^ (value >> 27)) &* 0x94D0_49BB_1331_11EB
        return value ^ (value >> 31)
    }
}
