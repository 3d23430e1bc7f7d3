import Foundation
import Testing
import TestSupport
@testable import ReconcileCore

/// The configuration keys the parser knows are the keys the documentation lists: every key of
/// ``ConfigurationKeys`` appears in `etc/reconciled.conf` (as `Key=` or `#Key=` under its section)
/// and in the configuration reference's table (`docs/configuration.md`), and neither lists a key
/// the parser does not know.
@Suite("Configuration documentation")
struct ConfigurationDocumentationTests {
    static var known: Set<String> { Set(ConfigurationKeys.all.map { "\($0.section).\($0.name)" }) }

    func read(_ path: String) throws -> String {
        try String(contentsOfFile: Fixtures.repositoryRoot + "/" + path, encoding: .utf8)
    }

    /// `[Section]` headers, then `Key=` or `#Key=` lines (prose comments start with `# `).
    static func keys(inExample text: String) -> Set<String> {
        var section = ""
        var keys = Set<String>()
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("["), line.hasSuffix("]") {
                section = String(line.dropFirst().dropLast())
                continue
            }
            let body = line.hasPrefix("#") ? line.dropFirst() : line[...]
            guard let equals = body.firstIndex(of: "="), let first = body.first, first.isUppercase else { continue }
            let name = body[..<equals]
            if name.allSatisfy({ $0.isLetter }) { keys.insert("\(section).\(name)") }
        }
        return keys
    }

    /// The reference's table under "| key | default | meaning |": a row starts with
    /// `**[Section]** Key` or `Key`, and `A / B` names two keys.
    static func keys(inReference text: String) -> Set<String> {
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        guard let header = lines.firstIndex(of: "| key | default | meaning |") else { return [] }
        var section = ""
        var keys = Set<String>()
        for line in lines[(header + 2)...] {
            guard line.hasPrefix("|") else { break }
            var cell = line.dropFirst().prefix { $0 != "|" }.trimmingCharacters(in: .whitespaces)
            if cell.hasPrefix("**["), let end = cell.range(of: "]**") {
                section = String(cell[cell.index(cell.startIndex, offsetBy: 3)..<end.lowerBound])
                cell = cell[end.upperBound...].trimmingCharacters(in: .whitespaces)
            }
            for name in cell.components(separatedBy: " / ") {
                keys.insert("\(section).\(name.trimmingCharacters(in: .whitespaces))")
            }
        }
        return keys
    }

    @Test("etc/reconciled.conf lists every key the parser knows, and no other")
    func example() throws {
        let listed = Self.keys(inExample: try read("etc/reconciled.conf"))
        #expect(Self.known.subtracting(listed).sorted() == [], "keys missing from etc/reconciled.conf")
        #expect(listed.subtracting(Self.known).sorted() == [], "keys in etc/reconciled.conf the parser does not know")
    }

    @Test("docs/configuration.md's table lists every key the parser knows, and no other")
    func reference() throws {
        let listed = Self.keys(inReference: try read("docs/configuration.md"))
        #expect(!listed.isEmpty, "no configuration table found")
        #expect(Self.known.subtracting(listed).sorted() == [], "keys missing from docs/configuration.md's table")
        #expect(listed.subtracting(Self.known).sorted() == [], "keys in docs/configuration.md's table the parser does not know")
    }

    @Test("the readers find what they should: a key added to a copy of the documents is noticed")
    func readersWork() {
        #expect(Self.keys(inExample: "[Spool]\n# prose: Directory= here\nDirectory=/x\n#RescanInterval=1min\n") == ["Spool.Directory", "Spool.RescanInterval"])
        let table = "| key | default | meaning |\n|---|---|---|\n| **[Verifier]** Kind | x | y |\n| TokenCredential / TokenFile | | |\n\nafter"
        #expect(Self.keys(inReference: table) == ["Verifier.Kind", "Verifier.TokenCredential", "Verifier.TokenFile"])
    }
}
