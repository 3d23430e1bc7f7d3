import Foundation
import ReconcileCore
import Testing
import TestSupport
@testable import ReconcileCLI
import ReconcileFoundation
import ReconcileSQLite
import ReconcileStore

@Suite("reconcilectl read verbs against a store with every state", .serialized)
struct ReadVerbTests {
    @Test("list: the table and its JSON", arguments: [[], ["--state", "pending", "--state", "escalated"], ["--limit", "3"], ["--older-than", "1h30min"], ["--product", "com.example.gems.3"]])
    func list(filters: [String]) throws {
        let fixture = try CLIFixture()
        let name = "list" + filters.joined(separator: "_").replacingOccurrences(of: "-", with: "")
        let table = fixture.run(["list"] + filters)
        #expect(table.status == 0)
        #expect(table.err.isEmpty)
        #expect(table.out.split(separator: "\n").allSatisfy { $0.count <= 80 })
        #expect(matchesSnapshot(table.out, name), "\(table.out)")
        let json = fixture.run(["list", "--json"] + filters)
        #expect(json.status == 0)
        #expect(matchesSnapshot(json.out, name + "_json"), "\(json.out)")
        let parsed = try JSONParser().parse(json.out.trimmingCharacters(in: .newlines))
        for order in parsed["orders"]?.arrayValue ?? [] {
            #expect(order.objectValue?.keys == ["order_id", "product_id", "state", "attempts", "next_attempt", "received_at", "updated_at", "reason"])
        }
    }

    @Test("shape: the orders still in play by age, by state, product or endpoint; text in 80 columns, JSON; a wrong --by is a usage error")
    func shape() throws {
        let fixture = try CLIFixture()
        // One order in each state that is not terminal, and O-duplicate, escalated too.
        let states = OrderState.allCases.filter { !$0.isTerminal }.count
        let live = states + 1
        let text = fixture.run(["shape"])
        #expect(text.status == 0 && text.err.isEmpty)
        let lines = text.out.split(separator: "\n").map(String.init)
        #expect(lines.allSatisfy { $0.count <= 80 }, "\(text.out)")
        #expect(lines.first?.hasSuffix("T 5 10 20 40 80 160 320 640 1280 1280+") == true, "\(text.out)")
        // Every fixture order was received 110 to 120 minutes ago: all in the 160 column.
        #expect(lines[1].split(separator: " ").map(String.init) == ["TOTAL", "\(live)", "0", "0", "0", "0", "0", "\(live)", "0", "0", "0", "0"], "\(text.out)")
        #expect(lines.count == 2 + states && lines[2].hasPrefix("escalated") && !text.out.contains("finished") && !text.out.contains("cancelled"))
        let json = fixture.run(["shape", "--json"])
        let parsed = try #require(try JSONParser().parse(json.out.trimmingCharacters(in: .newlines)).objectValue)
        #expect(parsed["by"]?.stringValue == "state" && parsed["total"]?["total"]?.int64Value == Int64(live))
        #expect(parsed["rows"]?.arrayValue?.count == states)
        let byEndpoint = fixture.run(["shape", "--by", "endpoint", "--json"])
        let rows = try #require(try JSONParser().parse(byEndpoint.out.trimmingCharacters(in: .newlines))["rows"]?.arrayValue)
        #expect(rows.compactMap { $0["name"]?.stringValue } == ["production", "delivery"])
        let later = fixture.run(["shape", "--by", "product"], now: CLIFixture.now.addingTimeInterval(86_400))
        #expect(later.out.split(separator: "\n")[1].hasSuffix(" \(live)"), "\(later.out)")
        let wrong = fixture.run(["shape", "--by", "colour"])
        #expect(wrong.status == 64 && wrong.err.contains("'colour' is not a grouping; use one of state, product, endpoint"), "\(wrong.err)")
    }

    @Test("show: every state, as text and as JSON; receipts only as length and hash", arguments: OrderState.allCases)
    func show(state: OrderState) throws {
        let fixture = try CLIFixture()
        let text = fixture.run(["show", "O-\(state.rawValue)"])
        #expect(text.status == 0)
        #expect(matchesSnapshot(text.out, "show_\(state.rawValue)"), "\(text.out)")
        #expect(!text.out.contains("QUJDREVG"))
        let json = fixture.run(["show", "O-\(state.rawValue)", "--json"])
        #expect(matchesSnapshot(json.out, "show_\(state.rawValue)_json"), "\(json.out)")
        #expect(!json.out.contains("QUJDREVG"))
        let parsed = try JSONParser().parse(json.out.trimmingCharacters(in: .newlines))
        #expect(parsed["history"]?.arrayValue?.first?.objectValue?.keys.starts(with: ["at", "actor", "from", "to", "reason"]) == true)
    }

    @Test("show and list of an order the phone never sent name its origin; the phone's own never do (DESIGN §5b)")
    func origin() throws {
        let fixture = try CLIFixture()
        do {
            let store = try SQLiteOrderStore(path: fixture.directory.file("state/orders.db"), mode: .owner)
            defer { store.close() }
            for (orderID, origin) in [("apple:2000000123", OrderOrigin.store), ("apple:2000000124", .operator)] {
                let bytes = Array(OrderFixtures.orderJSON(orderID, transactionID: String(orderID.dropFirst(6))).utf8)
                let candidate = IngestCandidate(
                    submission: try OrderFileParser().parse(bytes), raw: bytes, contentHash: "h-\(orderID)", fileName: "a purchase the store reported (history)",
                    origin: origin)
                _ = try store.ingest([candidate], verifierKind: .appstore, now: CLIFixture.now)
            }
        }
        let text = fixture.run(["show", "apple:2000000123"])
        #expect(text.status == 0)
        #expect(text.out.contains("  origin         store (a purchase the store reported, made an order after its grace)\n"), "\(text.out)")
        #expect(text.out.contains("from a purchase the store reported (history)"), "the history names the source, not a spool file")
        #expect(fixture.run(["show", "apple:2000000124"]).out.contains("  origin         operator (reconcilectl recover)\n"))
        #expect(!fixture.run(["show", "O-pending"]).out.contains("origin"))
        let shown = try JSONParser().parse(fixture.run(["show", "apple:2000000123", "--json"]).out.trimmingCharacters(in: .newlines))
        #expect(shown["origin"] == .string("store"))
        let listed = try JSONParser().parse(fixture.run(["list", "--json"]).out.trimmingCharacters(in: .newlines))
        let origins = Dictionary(uniqueKeysWithValues: (listed["orders"]?.arrayValue ?? []).compactMap { order -> (String, JSONValue?)? in
            guard case .string(let id)? = order["order_id"] else { return nil }
            return (id, order["origin"])
        })
        #expect(origins["apple:2000000123"] == .some(.string("store")) && origins["apple:2000000124"] == .some(.string("operator")))
        #expect(origins["O-pending"] == .some(nil), "the phone's own orders have no origin key")
    }

    @Test("discovered: each purchase with its status, the order or the grace's end; JSON with every field; never the signed transaction")
    func discovered() throws {
        let fixture = try CLIFixture()
        #expect(fixture.run(["discovered"]).out == "no purchases discovered\n")
        let signed = "eyJhbGciOiJFUzI1NiJ9.c2VjcmV0LXRyYW5zYWN0aW9u.c2ln"
        do {
            let store = try SQLiteOrderStore(path: fixture.directory.file("state/orders.db"), mode: .owner)
            defer { store.close() }
            func purchase(_ id: String, account: String?) -> DiscoveredPurchase {
                DiscoveredPurchase(
                    store: .appStore, transactionKey: id, productID: "gems", purchasedAt: CLIFixture.now - 60, environment: "Production",
                    accountToken: account, proof: OrderProof(transactionID: id, signedTransaction: signed), via: .file)
            }
            let deliver = DiscoverySettings(mode: .deliver, grace: .seconds(600))
            _ = try store.recordDiscovered([purchase("2000000301", account: "acct-1"), purchase("2000000302", account: nil)], settings: deliver, now: CLIFixture.now - 900)
            _ = try store.settleDiscovered(
                settings: deliver, verifiers: ConfiguredVerifiers(kind: .appstore), now: CLIFixture.now - 200, limit: 10, digest: { _ in "h" })
            _ = try store.recordDiscovered([purchase("2000000303", account: "acct-3")], settings: deliver, now: CLIFixture.now)
        }
        let table = fixture.run(["discovered"])
        #expect(table.status == 0 && table.err.isEmpty)
        let lines = table.out.split(separator: "\n").map(String.init)
        #expect(lines.count == 4 && lines.allSatisfy { $0.count <= 80 }, "\(table.out)")
        #expect(lines[0].hasPrefix("DISCOVERED") && lines[1].contains("2000000303") && lines[1].contains("waiting"), "\(table.out)")
        #expect(lines[1].hasSuffix("in 10m"), "\(table.out)")
        #expect(table.out.contains("became_order") && table.out.contains("apple:2000000301") && table.out.contains("no_account"))
        let json = fixture.run(["discovered", "--json"])
        let parsed = try JSONParser().parse(json.out.trimmingCharacters(in: .newlines))
        let list = try #require(parsed["discovered"]?.arrayValue)
        #expect(list.count == 3)
        #expect(list.first?.objectValue?.keys == [
            "store", "transaction_key", "product_id", "purchased_at", "environment", "application_username", "user_id", "revoked_at", "via",
            "status", "order_id", "grace_until", "discovered_at", "updated_at",
        ])
        #expect(list.map { $0["status"] } == [.string("waiting"), .string("no_account"), .string("became_order")])
        #expect(list[2]["order_id"] == .string("apple:2000000301") && list[0]["grace_until"] == .string(RFC3339.format(CLIFixture.now + 600)))
        #expect(!table.out.contains("eyJ") && !json.out.contains("eyJ"))
        #expect(fixture.run(["discovered", "--limit", "1", "--json"]).out.components(separatedBy: "transaction_key").count == 2)
        // status counts those waiting and those left for a person (the others need nothing).
        let status = fixture.run(["status"])
        #expect(status.out.contains("1 waiting for the phone's order") && status.out.contains("1 no_account (reconcilectl discovered)"), "\(status.out)")
        let statusJSON = try JSONParser().parse(fixture.run(["status", "--json"]).out.trimmingCharacters(in: .newlines))
        #expect(DiscoverySummary(json: statusJSON["discovered"]) == DiscoverySummary(waiting: 1, oldestWaitingDiscoveredAt: CLIFixture.now, noAccount: 1))
        let bad = fixture.run(["discovered", "--limit", "0"])
        #expect(bad.status == 64 && bad.err.contains("Invalid value '0' for '--limit <n>'"))
    }

    @Test("status without a daemon: the store's counts, exit 3")
    func status() throws {
        let fixture = try CLIFixture()
        let text = fixture.run(["status"])
        #expect(text.status == 3)
        #expect(matchesSnapshot(text.out, "status_not_running"), "\(text.out)")
        let json = fixture.run(["status", "--json"])
        #expect(json.status == 3)
        #expect(matchesSnapshot(json.out, "status_not_running_json"), "\(json.out)")
    }

    @Test("a next attempt already past is due now, not \"ago\" (issue 23, item 16)")
    func nextAttemptPast() throws {
        let now = CLIFixture.now
        #expect(RelativeTime.due(now.addingTimeInterval(-46), now: now) == "due now, for 46s (\(RFC3339.format(now.addingTimeInterval(-46))))")
        #expect(RelativeTime.due(now.addingTimeInterval(30), now: now) == "in 30s (\(RFC3339.format(now.addingTimeInterval(30))))")
        #expect(RelativeTime.due(now, now: now) == "now (\(RFC3339.format(now)))")
        // status 76 s on: the fixture's next attempt (due in 30 s) has waited 46 s (held back by
        // a circuit, say).
        let fixture = try CLIFixture()
        let late = fixture.run(["status"], now: now.addingTimeInterval(76))
        #expect(late.out.contains("next attempt   due now, for 46s (2026-11-30T07:26:36Z)"), "\(late.out)")
        #expect(!late.out.contains("ago (2026-11-30T07:26:36Z)"))
    }

    @Test("show of an unknown order and a store that is not there")
    func missing() throws {
        let fixture = try CLIFixture()
        #expect(fixture.run(["show", "NOPE"]) == (1, "", "Error: no order NOPE in <dir>/state/orders.db\n"))
        let empty = try CLIFixture(populate: false)
        try FileManager.default.removeItem(atPath: empty.directory.file("state/orders.db"))
        #expect(empty.run(["list"]) == (1, "", "Error: no store at <dir>/state/orders.db; reconciled creates it when it first starts\n"))
        // status still says what it knows, and why the counts are missing.
        let status = empty.run(["status"])
        #expect(status.status == 3)
        #expect(status.out.hasPrefix("reconciled is not running (nothing answers on <dir>/run/control.sock)\n  orders         none\n"))
        #expect(status.err == "cannot read the store: no store at <dir>/state/orders.db; reconciled creates it when it first starts\n")
    }

    @Test("colour only on a terminal, and never with NO_COLOR")
    func colour() throws {
        let fixture = try CLIFixture()
        func run(terminal: Bool, environment: [String: String]) -> String {
            let output = CapturedOutput(isTerminal: terminal)
            _ = Reconcilectl.main(arguments: ["--config", fixture.configPath, "list"], environment: environment, output: output, now: { CLIFixture.now })
            return output.standardOutput
        }
        #expect(run(terminal: true, environment: [:]).contains("\u{1B}["))
        #expect(!run(terminal: true, environment: ["NO_COLOR": "1"]).contains("\u{1B}["))
        #expect(!run(terminal: false, environment: [:]).contains("\u{1B}["))
    }
}
