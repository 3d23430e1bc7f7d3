import Testing
@testable import ReconcileCLI

/// What `reconcilectl __complete` offers, worked out from the verbs' specs.
@Suite("Completion")
struct CompletionTests {
    /// Answers order ids from a fixed list, and records the prefixes it was asked for.
    final class OrderIDs: @unchecked Sendable {
        // @unchecked: used from one test at a time.
        var asked: [String] = []
        let ids = ["A1", "A2", "B1"]
        func callAsFunction(_ prefix: String) -> [String] {
            asked.append(prefix)
            return ids.filter { $0.hasPrefix(prefix) }
        }
    }

    func reply(_ words: [String], _ ids: OrderIDs = OrderIDs()) -> Completion.Reply {
        Completion.reply(to: words, commands: Reconcilectl.commands, globalOptions: Reconcilectl.globalOptions) { ids($0) }
    }

    func words(_ words: [String], _ ids: OrderIDs = OrderIDs()) -> [String] {
        guard case .words(let list) = reply(words, ids) else { return ["<files>"] }
        return list
    }

    @Test("the first word offers every verb, and not the hidden one")
    func verbs() {
        let offered = words([""])
        #expect(offered == Reconcilectl.commands.map(\.name))
        #expect(offered.contains("shape") && offered.contains("copy-store") && !offered.contains(CompletionCommand.name))
        #expect(words(["--config", "/etc/x.conf", ""]) == offered, "a global option's value is skipped")
    }

    @Test("a dash offers the verb's own options, or the global ones before a verb")
    func options() {
        #expect(words(["-"]) == ["--config", "--help", "--version"])
        let list = words(["list", "--"])
        #expect(list.contains("--state") && list.contains("--older-than") && list.contains("--json") && !list.contains("--by"))
        #expect(words(["shape", "-"]) == ["--by", "--json", "--help"])
    }

    @Test("option values: states, stores, groupings; a path option completes files")
    func values() {
        #expect(words(["list", "--state", ""]) == ["waiting", "pending", "verifying", "verified", "finished", "rejected", "escalated", "held", "cancelled", "expired", "revoked"])
        #expect(words(["list", "-s", "p"]).contains("pending"))
        #expect(words(["list", "--store", ""]) == ["app_store", "google_play"])
        #expect(words(["shape", "--by", ""]) == ["state", "product", "endpoint"])
        #expect(words(["list", "--limit", ""]) == [], "a number has no list")
        #expect(reply(["--config", ""]) == .files)
        #expect(reply(["-c", "/etc/rec"]) == .files)
    }

    @Test("order ids come from the store, by the typed prefix, for every verb that takes one")
    func orderIDs() {
        let ids = OrderIDs()
        #expect(words(["show", "A"], ids) == ["A1", "A2"])
        #expect(ids.asked == ["A"])
        #expect(words(["hold", "A1", ""]) == ["A1", "A2", "B1"], "hold takes many")
        #expect(words(["retry", "--note", "x", "B"]) == ["B1"], "an option's value is not an order")
        #expect(words(["show", "A1", ""]) == [], "show takes one")
        #expect(words(["status", ""]) == [])
        let none = OrderIDs()
        _ = words(["list", "--state", "held", ""], none)
        #expect(none.asked.isEmpty, "list takes no order ids: the store is not read")
    }

    @Test("files for submit, backup and restore; verbs for help; nothing after an unknown verb")
    func others() {
        #expect(reply(["submit", "ord"]) == .files)
        #expect(reply(["backup", ""]) == .files)
        #expect(words(["help", "sh"]).contains("show"))
        #expect(words(["frobnicate", ""]) == [])
    }
}
