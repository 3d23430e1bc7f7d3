import Foundation
import Testing
import TestSupport
@testable import ReconcileCore
import ReconcileFoundation

/// `systemd/reconciled.catalog` against the MESSAGE_IDs the daemon logs (DESIGN §8).
@Suite("Journal message catalog")
struct MessageCatalogTests {
    /// Fields an entry may substitute: the ones the daemon sets on its records.
    static let knownFields: Set<String> = [
        LogField.orderID, .orderState, .productID, .transactionID, .attempt, .nextAttempt, .verifierStatus, .endpoint,
        .reason, .spoolFile, .count, .errno, .httpStatus, .path, .actor, .action, .suppressedMessageID, .suppressedCodeFile, .suppressedCodeLine,
    ].reduce(into: []) { $0.insert($1.rawValue) }

    @Test("every MessageID has exactly one entry, and every entry a known MessageID")
    func oneEntryPerID() throws {
        let catalog = try JournalCatalog.repositoryCatalog()
        let ids = catalog.entries.map(\.id)
        for id in MessageID.all {
            #expect(ids.filter { $0 == id.rawValue }.count == 1, "\(id.name) (\(id.rawValue)) needs exactly one entry")
        }
        let known = Set(MessageID.all.map(\.rawValue))
        for entry in catalog.entries {
            #expect(known.contains(entry.id), "line \(entry.line): \(entry.id) is not a MessageID")
            #expect(entry.locale == nil, "line \(entry.line): only the untranslated entry is written")
        }
        #expect(MessageID.all.count == Set(MessageID.all.map(\.rawValue)).count)
    }

    @Test("each entry has a subject, who defined it, documentation and text")
    func entriesAreComplete() throws {
        for entry in try JournalCatalog.repositoryCatalog().entries {
            let name = MessageID.catalogued(entry.id)?.name ?? entry.id
            #expect(!(entry.header("Subject") ?? "").isEmpty, "\(name): no Subject")
            #expect(entry.header("Defined-By") == "reconciled", "\(name): Defined-By must be reconciled")
            #expect(entry.header("Documentation") != nil, "\(name): no Documentation")
            for (key, _) in entry.headers {
                #expect(["Subject", "Defined-By", "Support", "Documentation"].contains(key), "\(name): unknown header \(key)")
            }
            let words = entry.body.joined(separator: " ").split(separator: " ")
            #expect(words.count >= 20, "\(name): the text should say what happened and what to do")
            for line in entry.body {
                #expect(line.count <= 76, "\(name): longer than 76 columns: \(line)")
                #expect(line == line.trimmingCharacters(in: .whitespaces) || line.hasPrefix("    "), "\(name): stray blanks: '\(line)'")
            }
        }
    }

    @Test("@FIELD@ substitutions name journal fields the daemon sets")
    func substitutions() throws {
        var used = 0
        for entry in try JournalCatalog.repositoryCatalog().entries {
            let name = MessageID.catalogued(entry.id)?.name ?? entry.id
            for field in entry.substitutions {
                used += 1
                #expect(LogField.isValidName(field), "\(name): @\(field)@ is not a valid journal field name")
                // journalctl replaces only @[A-Z_]+@ (systemd's replace_var()).
                #expect(field.unicodeScalars.allSatisfy { ("A"..."Z").contains($0) || $0 == "_" }, "\(name): journalctl would not replace @\(field)@")
                #expect(Self.knownFields.contains(field), "\(name): the daemon never sets \(field)")
            }
        }
        #expect(used > 0)
    }

    @Test("the parser reads systemd's format")
    func parser() throws {
        let catalog = try JournalCatalog(text: """
            # comment
            -- 0123456789abcdef0123456789abcdef
            Subject: Order @ORDER_ID@ done
            Defined-By: reconciled

            Text about @ORDER_ID@ and a@b.c.

            -- fedcba9876543210fedcba9876543210 de
            Subject: x

            y
            """)
        #expect(catalog.entries.map(\.id) == ["0123456789abcdef0123456789abcdef", "fedcba9876543210fedcba9876543210"])
        #expect(catalog.entries[0].body == ["Text about @ORDER_ID@ and a@b.c."])
        #expect(catalog.entries[0].substitutions == ["ORDER_ID", "ORDER_ID"])
        #expect(catalog.entries[1].locale == "de")
        #expect(throws: JournalCatalog.ParseError.self) { try JournalCatalog(text: "-- 0123456789abcdef0123456789abcdef\nno colon\n") }
    }
}
