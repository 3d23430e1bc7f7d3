import Foundation
import Glibc
import ReconcileCore
import Testing
import TestSupport
@testable import ReconcileStore

/// Field limits count bytes, not characters (issue 13, item 6): a product id of "z" and 400,000
/// combining marks is one `Character` and 800 KB — it would make 1.2 MB log lines and an
/// escalation command that fails with E2BIG. A right-to-left override in an id would spoof
/// `reconcilectl list`.
@Suite("End to end: field limits", .serialized)
struct FieldLimitsEndToEndTests {
    @Test("a 400,000-mark product id and a bidi override are quarantined with a bounded reason; submit refuses them; nothing stored")
    func hostileFields() async throws {
        let harness = Harness("limits")
        harness.configure("[Verifier]\nKind=http\nURL=http://127.0.0.1:9/verify\n")
        let zalgo = "z" + String(repeating: "\u{0301}", count: 400_000)
        let zalgoJSON = OrderFixtures.orderJSON("ZALGO", product: zalgo)
        let spoofJSON = OrderFixtures.orderJSON("SPOOF", product: "gems\u{202E}001.mobc")
        harness.directory.write("zalgo.json", zalgoJSON)
        harness.directory.write("spoof.json", spoofJSON)

        // The CLI says what is wrong, in a line of bounded length, and writes nothing.
        for (file, expected) in [
            ("zalgo.json", "\"product_id\" is 800001 bytes long (UTF-8); at most 255 are allowed"),
            ("spoof.json", "\"product_id\" contains format character U+202E at position 5"),
        ] {
            let submitted = try await harness.ctl(["submit", harness.directory.file(file)])
            #expect(submitted.status != 0)
            #expect(submitted.error.contains(expected), "\(submitted.error.prefix(300))")
            #expect(submitted.error.utf8.count < 2_000)
        }
        #expect(harness.directory.list("spool/incoming").isEmpty)

        harness.drop("zalgo.json", zalgoJSON)
        harness.drop("spoof.json", spoofJSON)
        harness.dropOrder("GOOD")
        let daemon = try harness.startDaemon()
        #expect(await eventually(timeout: .seconds(20)) { harness.directory.list("spool/incoming").isEmpty })
        daemon.send(SIGTERM)
        #expect(await daemon.wait() == 0)

        let reasons = harness.directory.list("spool/rejected").filter { $0.hasSuffix(".reason") }
            .compactMap { harness.directory.read("spool/rejected/\($0)") }
        #expect(reasons.count == 2)
        #expect(reasons.contains { $0.contains("reason: invalid_field") && $0.contains("800001 bytes long") })
        #expect(reasons.contains { $0.contains("reason: invalid_field") && $0.contains("U+202E") })
        #expect(reasons.allSatisfy { $0.utf8.count < 4_000 && !$0.unicodeScalars.contains("\u{202E}") })
        // No log line carries the marks or the override.
        let longest = daemon.standardError.split(separator: "\n").map(\.utf8.count).max() ?? 0
        #expect(longest < 4_000, "a log line of \(longest) bytes")
        #expect(!daemon.standardError.unicodeScalars.contains("\u{202E}"))
        let store = try harness.store()
        #expect(try store.order(id: "ZALGO") == nil && store.order(id: "SPOOF") == nil)
        #expect(try store.order(id: "GOOD") != nil)
    }
}
