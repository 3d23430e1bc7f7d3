import Foundation
import Testing
import TestSupport
@testable import ReconcileCLI

/// The journal catalog (`systemd/reconciled.catalog`) tells operators what to run; every
/// `reconcilectl` command line in it must parse as written.
@Suite("reconcilectl commands in the journal catalog")
struct CatalogCommandTests {
    @Test("every reconcilectl command line in the catalog names a verb and options that exist")
    func commandsParse() throws {
        var checked = 0
        for entry in try JournalCatalog.repositoryCatalog().entries {
            for line in entry.body where line.hasPrefix("    reconcilectl ") {
                // "    reconcilectl retry @ORDER_ID@ --note "why"     (try once more)"
                var command = line.trimmingCharacters(in: .whitespaces)
                if let comment = command.range(of: "  (") { command = String(command[..<comment.lowerBound]) }
                command = command.components(separatedBy: " && ")[0]
                let words = Self.words(command).dropFirst()
                guard let verb = words.first else { continue }
                guard let spec = Reconcilectl.commands.first(where: { $0.name == verb }) else {
                    Issue.record("\(entry.id): no verb '\(verb)' in: \(line)")
                    continue
                }
                do {
                    _ = try ArgumentParser.parse(Array(words.dropFirst()), for: spec)
                } catch {
                    Issue.record("\(entry.id): \(error) in: \(line)")
                }
                checked += 1
            }
        }
        #expect(checked >= 10)
    }

    /// Splits at blanks, keeping "quoted words" together (without the quotes).
    static func words(_ text: String) -> [String] {
        var words: [String] = []
        var current = ""
        var quoted = false
        for character in text {
            if character == "\"" {
                quoted.toggle()
            } else if character == " " && !quoted {
                if !current.isEmpty { words.append(current) }
                current = ""
            } else {
                current.append(character)
            }
        }
        if !current.isEmpty { words.append(current) }
        return words
    }
}
