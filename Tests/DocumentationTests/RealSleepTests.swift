import Foundation
import Testing

/// Tests wait for events and move a `ManualClock`; they do not sleep (issue 25). The few real
/// sleeps left wait on what no clock of ours moves — another process's time, a real timer under
/// test, a random moment to kill at — and each says so: a `real sleep:` comment on its line or
/// a comment line just above. Fewer than 20 in all.
@Suite("Real sleeps in the tests")
struct RealSleepTests {
    /// The most the tests may hold.
    static let budget = 19

    /// A call that waits for real time: `Task.sleep`, `Thread.sleep`, `usleep`, `sleep`, or a
    /// clock's `sleep` (the tests' real ones; a `ManualClock` is never slept on).
    static var sleepCall: Regex<Substring> {
        #/Task\.sleep|Thread\.sleep|\busleep\(|\bnanosleep\(|(?:^|[^.\w])sleep\(|\.sleep\(\s*(?:for|until):/#
    }

    /// One sleep: where it is, and whether it gives its reason.
    struct Sleep: Equatable {
        var file: String
        var line: Int
        var explained: Bool
    }

    /// The sleeps in `text`: lines that call one, skipping comments and test names.
    static func sleeps(in text: String, file: String) -> [Sleep] {
        let lines = text.components(separatedBy: "\n")
        var found: [Sleep] = []
        for (index, line) in lines.enumerated() {
            let code = line.trimmingCharacters(in: .whitespaces)
            if code.hasPrefix("//") || code.hasPrefix("@Test") || code.hasPrefix("///") { continue }
            guard line.contains("sleep"), line.contains(sleepCall) else { continue }
            let above = index > 0 ? lines[index - 1].trimmingCharacters(in: .whitespaces) : ""
            let explained = line.contains("real sleep:") || (above.hasPrefix("//") && above.contains("real sleep:"))
            found.append(Sleep(file: file, line: index + 1, explained: explained))
        }
        return found
    }

    @Test("fewer than 20 real sleeps in the tests, each with its reason")
    func budgetKept() throws {
        // Every Swift file under Tests/ (fixtures and this target's own samples left out).
        let sources = DocumentationTests.files(under: "Tests").filter { $0.hasSuffix(".swift") }
        let sleeps = try sources.flatMap { Self.sleeps(in: try DocumentationTests.read($0), file: $0) }
        #expect(!sleeps.isEmpty, "found no sleep at all: the search is broken")
        let unexplained = sleeps.filter { !$0.explained }.map { "\($0.file):\($0.line)" }
        #expect(unexplained.isEmpty, "real sleeps without a `real sleep:` reason: \(unexplained)")
        #expect(sleeps.count <= Self.budget, "\(sleeps.count) real sleeps: \(sleeps.map { "\($0.file):\($0.line)" })")
        print("real sleeps in the tests: \(sleeps.count) (budget \(Self.budget))")
    }

    @Test("the search finds each kind of sleep, with or without its reason, and leaves comments alone")
    func searchFindsSleeps() {
        let sample = """
            // real sleep: the timer under test
            try await clock.sleep(for: .seconds(1))
            usleep(2_000)
            Thread.sleep(forTimeInterval: 3)  // real sleep: another process's lock
            try await Task.sleep(until: began + .seconds(10))
            // Task.sleep in a comment is no call
            sleep(1)
            await clock.waitForTimers(1)
            """
        let found = Self.sleeps(in: sample, file: "Sample.swift")
        #expect(found.map(\.line) == [2, 3, 4, 5, 7])
        #expect(found.map(\.explained) == [true, false, true, false, false])
    }
}
