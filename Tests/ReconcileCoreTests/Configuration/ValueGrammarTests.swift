import Testing
@testable import ReconcileCore
import ReconcileFoundation

@Suite("Time spans, sizes and command lines")
struct ValueGrammarTests {
    @Test(
        "time spans as systemd writes them",
        arguments: [
            ("500ms", Duration.milliseconds(500)), ("30s", .seconds(30)), ("30", .seconds(30)), ("5min", .seconds(300)),
            ("1h", .seconds(3600)), ("3d", .seconds(259_200)), ("1h 30min", .seconds(5400)), ("1h30min", .seconds(5400)),
            ("2w", .seconds(1_209_600)), ("1.5s", .milliseconds(1500)), ("250us", .microseconds(250)),
            ("1 hour 2 minutes", .seconds(3720)), ("0", .zero),
        ])
    func spans(text: String, expected: Duration) {
        #expect(TimeSpan.parse(text) == expected)
    }

    @Test("invalid time spans", arguments: ["", "x", "10x", "-5s", "5 s s", "1..5s", "s"])
    func badSpans(text: String) {
        #expect(TimeSpan.parse(text) == nil)
    }

    @Test("formats spans in the same units")
    func formatSpans() {
        #expect(TimeSpan.format(.seconds(5400)) == "1h 30min")
        #expect(TimeSpan.format(.milliseconds(500)) == "500ms")
        #expect(TimeSpan.format(.seconds(90 * 86_400)) == "90d")
        #expect(TimeSpan.format(.zero) == "0")
        for text in ["1h 30min", "500ms", "3d", "5min", "1d 2h 3min 4s 5ms"] {
            #expect(TimeSpan.format(TimeSpan.parse(text)!) == text)
        }
    }

    @Test(
        "sizes as systemd writes them",
        arguments: [("1M", 1_048_576), ("512K", 524_288), ("64", 64), ("2G", 2_147_483_648), ("1.5K", 1536), ("100B", 100)])
    func sizes(text: String, expected: Int) {
        #expect(ByteSize.parse(text) == expected)
    }

    @Test("invalid sizes", arguments: ["", "M", "1X", "-1M", "1 M M", "1e3"])
    func badSizes(text: String) {
        #expect(ByteSize.parse(text) == nil)
    }

    @Test("formats sizes")
    func formatSizes() {
        #expect(ByteSize.format(1_048_576) == "1M")
        #expect(ByteSize.format(1536) == "1536")
        #expect(ByteSize.format(3072) == "3K")
    }

    @Test("splits command lines without a shell")
    func split() throws {
        #expect(try ArgumentSplitter.split("/bin/page --service reconciled") == ["/bin/page", "--service", "reconciled"])
        #expect(try ArgumentSplitter.split(#"a "b c" 'd e' f\ g "h\"i" ''"#) == ["a", "b c", "d e", "f g", "h\"i", ""])
        #expect(try ArgumentSplitter.split("  spaced   out  ") == ["spaced", "out"])
        #expect(try ArgumentSplitter.split("echo $HOME; rm -rf /") == ["echo", "$HOME;", "rm", "-rf", "/"])
        #expect(throws: ArgumentSplitter.Problem.unterminatedQuote) { try ArgumentSplitter.split("a 'b") }
        #expect(throws: ArgumentSplitter.Problem.trailingBackslash) { try ArgumentSplitter.split("a \\") }
    }

    @Test("loopback hosts")
    func loopback() {
        for host in ["127.0.0.1", "127.1.2.3", "::1", "[::1]", "localhost", "LOCALHOST"] {
            #expect(LoopbackAddress.isLoopback(host: host), "\(host)")
        }
        for host in ["128.0.0.1", "example.com", "127.0.0.1.example.com", "10.0.0.1", "::2", "127.0.0", "127.0.0.256"] {
            #expect(!LoopbackAddress.isLoopback(host: host), "\(host)")
        }
    }

    @Test("spelling suggestions")
    func spelling() {
        #expect(Spelling.closest(to: "MaxAttempt", in: ["MaxAttempts", "MaxAge", "MaxDelay"]) == "MaxAttempts")
        #expect(Spelling.closest(to: "--jsn", in: ["--json", "--limit"]) == "--json")
        #expect(Spelling.closest(to: "zzzzzz", in: ["--json", "--limit"]) == nil)
        #expect(Spelling.distance("kitten", "sitting") == 3)
    }
}
