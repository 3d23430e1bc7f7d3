import Foundation
import Testing

/// The map of the code is the same in `Package.swift` (its targets and its layer comment) and in
/// `docs/architecture.md`, and the operator's tool keeps out of the daemon's layers.
@Suite("The package's map")
struct PackageMapTests {
    /// Package.swift's non-test targets and what each depends on, read from its text: a
    /// `.target(` or `.executableTarget(` call's `name:` and its `dependencies: [ … ]`.
    static func targets(in manifest: String) -> [String: [String]] {
        var targets: [String: [String]] = [:]
        let calls = manifest.components(separatedBy: ".")
        for call in calls where call.hasPrefix("target(") || call.hasPrefix("executableTarget(") {
            guard let name = quoted(after: "name: ", in: call) else { continue }
            var dependencies: [String] = []
            if let start = call.range(of: "dependencies: ["), let end = call[start.upperBound...].firstIndex(of: "]") {
                dependencies = call[start.upperBound..<end].split(separator: ",").compactMap { item in
                    let trimmed = item.trimmingCharacters(in: .whitespacesAndNewlines)
                    return trimmed.hasPrefix("\"") ? String(trimmed.dropFirst().prefix { $0 != "\"" }) : nil
                }
            }
            targets[name] = dependencies
        }
        return targets
    }

    static func quoted(after label: String, in text: String) -> String? {
        guard let start = text.range(of: label + "\"") else { return nil }
        return String(text[start.upperBound...].prefix { $0 != "\"" })
    }

    /// Every target `name` depends on, directly or not.
    static func closure(of name: String, in targets: [String: [String]]) -> Set<String> {
        var seen = Set<String>()
        var queue = targets[name] ?? []
        while let next = queue.popLast() {
            if seen.insert(next).inserted { queue += targets[next] ?? [] }
        }
        return seen
    }

    @Test("reconcilectl depends on no daemon, engine or HTTP target, and links no libcurl")
    func cliKeepsOut() throws {
        let targets = Self.targets(in: try DocumentationTests.read("Package.swift"))
        let closure = Self.closure(of: "reconcilectl", in: targets)
        #expect(closure.contains("ReconcileCLI") && closure.contains("ReconcileCredentials"), "the reader found \(closure.sorted())")
        #expect(closure.intersection(["ReconcileDaemon", "ReconcileEngine", "ReconcileHTTP", "CCurl"]).sorted() == [])
    }

    @Test("every library and executable target is in Package.swift's layer comment and in docs/architecture.md's map")
    func mapsAgree() throws {
        let manifest = try DocumentationTests.read("Package.swift")
        let comment = manifest.split(separator: "\n").prefix { $0.hasPrefix("//") }.joined(separator: "\n")
        let architecture = try DocumentationTests.read("docs/architecture.md")
        let names = Self.targets(in: manifest).keys.filter { $0 != "TestSupport" }.sorted()
        #expect(names.count >= 15, "the reader found \(names)")
        #expect(names.filter { !comment.contains($0) } == [], "targets missing from Package.swift's layer comment")
        #expect(names.filter { !architecture.contains($0) } == [], "targets missing from docs/architecture.md")
    }

    @Test("the manifest reader follows dependencies through the targets")
    func readerWorks() {
        let manifest = """
            .target(name: "A", dependencies: ["B", "CLib"], swiftSettings: s),
            .target(
                name: "B",
                dependencies: [
                    "C",
                ]),
            .target(name: "C"),
            .executableTarget(name: "tool", dependencies: ["A"]),
            .testTarget(name: "ATests", dependencies: ["A", "D"]),
            """
        let targets = Self.targets(in: manifest)
        #expect(targets == ["A": ["B", "CLib"], "B": ["C"], "C": [], "tool": ["A"]])
        #expect(Self.closure(of: "tool", in: targets) == ["A", "B", "C", "CLib"])
    }
}
