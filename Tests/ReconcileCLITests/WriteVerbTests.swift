import Foundation
import Glibc
import ReconcileCore
import ReconcileFoundation
import Testing
import TestSupport
@testable import ReconcileCLI
@testable import ReconcileStore
@testable import ReconcileSQLite

@Suite("reconcilectl write verbs without a daemon", .serialized)
struct WriteVerbTests {
    func store(_ fixture: CLIFixture) throws -> SQLiteOrderStore {
        try SQLiteOrderStore(path: fixture.directory.file("state/orders.db"), mode: .readOnly)
    }

    @Test("hold and release record the operator and the note, and say the daemon picks it up")
    func holdRelease() throws {
        let fixture = try CLIFixture()
        let held = fixture.run(["hold", "O-pending", "--note", "looking into it"], environment: ["SUDO_USER": "alice"])
        #expect(held.status == 0)
        #expect(held.out == "O-pending: pending → held\n")
        #expect(held.err == "reconciled is not running; the change is recorded in the store and picked up at the next start.\n")
        let last = try #require(try store(fixture).history(orderID: "O-pending").last)
        #expect(last.actor == .operator("alice"))
        #expect(last.detail == "looking into it")
        #expect(try store(fixture).order(id: "O-pending")?.resumeState == .pending)
        #expect(fixture.run(["release", "O-pending"]).out == "O-pending: held → pending (due now)\n")
        #expect(try store(fixture).order(id: "O-pending")?.nextAttemptAt == CLIFixture.now)
    }

    @Test("retry grants an attempt now; --reset-attempts restarts the clocks; --state works in bulk")
    func retry() throws {
        let fixture = try CLIFixture()
        #expect(fixture.run(["retry", "O-escalated"]).out == "O-escalated: escalated → pending (due now)\n")
        #expect(try store(fixture).order(id: "O-escalated")?.attempts == 6)
        #expect(fixture.run(["retry", "O-rejected", "--reset-attempts"]).status == 0)
        let reset = try #require(try store(fixture).order(id: "O-rejected"))
        #expect(reset.attempts == 0)
        #expect(reset.receivedAt == CLIFixture.now)
        let bulk = fixture.run(["retry", "--state", "expired"])
        #expect(bulk.status == 0)
        #expect(bulk.out == "O-expired: expired → pending (due now)\n1 of 1 expired order changed\n")
    }

    @Test("bulk verbs take the filters list takes: by state and reason, the first of each kind, then the counts")
    func filters() throws {
        let fixture = try CLIFixture()
        // Two escalated orders: O-escalated (max_attempts) and O-duplicate (duplicate_transaction).
        let cancelled = fixture.run(["cancel", "--state", "escalated", "--reason", "max_attempts", "--note", "refunded by hand"])
        #expect(cancelled.status == 0, "\(cancelled.err)")
        #expect(cancelled.out == "O-escalated: escalated → cancelled\n1 of 1 order changed\n")
        #expect(try store(fixture).order(id: "O-duplicate")?.state == .escalated)

        let held = fixture.run(["hold", "--reason", "refunded"])
        #expect(held.status == 1, "O-revoked cannot be held")
        #expect(held.out == "O-rejected: rejected → held\n1 of 2 orders changed, 1 refused\n")
        #expect(held.err.hasPrefix("O-revoked: cannot hold: the order is revoked"), "\(held.err)")

        let none = fixture.run(["release", "--product", "com.example.none"])
        #expect(none.status == 0)
        #expect(none.out == "0 of 0 orders changed\n")

        let listed = fixture.run(["list", "--reason", "duplicate_transaction", "--json"])
        #expect(listed.out.contains("\"O-duplicate\"") && !listed.out.contains("\"O-escalated\""))
    }

    @Test("--json on write verbs: the counts and each order's result; exit 1 when one was not changed")
    func json() throws {
        let fixture = try CLIFixture()
        let result = fixture.run(["hold", "O-pending", "NOPE", "--json"])
        #expect(result.status == 1)
        let object = try #require(try JSONParser().parse(result.out).objectValue)
        #expect(object["version"]?.int64Value == 1)
        #expect(object["matched"]?.int64Value == 2 && object["changed"]?.int64Value == 1 && object["not_found"]?.int64Value == 1)
        let results = try #require(object["results"]?.arrayValue)
        #expect(results.count == 2)
        #expect(results.first?.objectValue?["order_id"]?.stringValue == "O-pending")
        #expect(results.first?.objectValue?["to"]?.stringValue == "held")
        #expect(results.last?.objectValue?["result"]?.stringValue == "not_found")
        #expect(fixture.run(["resolve", "O-escalated", "--note", "x", "--json"]).out.contains(#""to":"finished""#))
    }

    @Test(
        "forbidden actions are refused with the order's state named",
        arguments: [
            (["retry", "O-finished"], "O-finished: cannot retry: the order is finished, and no follow-up of it is escalated\n"),
            (["retry", "O-revoked"], "O-revoked: cannot retry: the order is revoked, and no follow-up of it is escalated\n"),
            (["cancel", "O-verified", "--note", "x"], "O-verified: cannot cancel: the order is verified (granted; delivery not yet acknowledged)\n"),
            (["release", "O-pending"], "O-pending: cannot release: the order is pending (waiting for its next attempt)\n"),
            (["hold", "O-cancelled"], "O-cancelled: cannot hold: the order is cancelled (cancelled by an operator)\n"),
            (["retry", "O-waiting"], "O-waiting: cannot retry: the order is waiting (stored without proof the verifier can use)\n"),
            (["retry", "O-duplicate"], "O-duplicate: the order was escalated as a duplicate (transaction 7777 is claimed by order O-finished); retry with --force to verify it again\n"),
            (["resolve", "O-escalated", "--note", "paid by hand", "--transaction-id", "7777"], "O-escalated: transaction 7777 is already claimed by order O-finished\n"),
            (["hold", "NOPE"], "NOPE: no such order\n"),
        ])
    func forbidden(arguments: [String], message: String) throws {
        let fixture = try CLIFixture()
        let result = fixture.run(arguments)
        #expect(result.status == 1)
        #expect(result.err == message)
    }

    @Test("--force retries a duplicate; resolve claims its transaction; cancel records the note")
    func forceResolveCancel() throws {
        let fixture = try CLIFixture()
        #expect(fixture.run(["retry", "O-duplicate", "--force"]).status == 0)
        #expect(fixture.run(["resolve", "O-escalated", "--note", "refunded by hand", "--transaction-id", "555"]).out == "O-escalated: escalated → finished\n")
        let resolved = try #require(try store(fixture).order(id: "O-escalated"))
        #expect(resolved.finishedBy == .operator)
        #expect(resolved.verifiedTransactionID == "555")
        #expect(try store(fixture).history(orderID: "O-escalated").last?.detail == "transaction 555 claimed; refunded by hand")
        #expect(fixture.run(["cancel", "O-held", "--note", "customer gone"]).out == "O-held: held → cancelled\n")
        #expect(try store(fixture).history(orderID: "O-held").last?.reason == "cancel")
    }

    @Test("an order whose attempt is in flight gets the action when the attempt ends")
    func deferred() throws {
        let fixture = try CLIFixture()
        let result = fixture.run(["hold", "O-verifying"])
        #expect(result.out == "O-verifying: verifying; hold applies when its attempt in flight ends\n")
        #expect(try store(fixture).order(id: "O-verifying")?.state == .verifying)
    }

    @Test("submit validates exactly as the daemon and places the file atomically")
    func submit() throws {
        let fixture = try CLIFixture()
        let good = fixture.directory.write("good.json", OrderFixtures.orderJSON("S1"))
        let result = fixture.run(["submit", good])
        #expect(result.status == 0)
        #expect(result.out.hasPrefix("submitted order S1 as <dir>/spool/incoming/order-S1."))
        #expect(fixture.directory.list("spool/incoming").count == 1)
        #expect(fixture.directory.list("spool/tmp").isEmpty)
        let bad = fixture.directory.write("bad.json", "{\"order_id\":\"S 2\",\"product_id\":\"p\"}")
        #expect(fixture.run(["submit", bad]) == (1, "", "Error: <dir>/bad.json: \"order_id\" contains U+0020 (space) at position 2; only A-Z a-z 0-9 . _ : - are allowed (invalid_field); nothing was submitted\n"))
        #expect(fixture.directory.list("spool/incoming").count == 1)
        #expect(fixture.run(["submit", fixture.directory.file("none.json")]).err.contains("No such file or directory"))
    }

    @Test("backup writes a consistent copy and never overwrites")
    func backup() throws {
        let fixture = try CLIFixture()
        let target = fixture.directory.file("copy.db")
        let result = fixture.run(["backup", target])
        #expect(result.status == 0)
        #expect(result.out.hasPrefix("backed up \(OrderState.allCases.count + 1) orders to <dir>/copy.db ("))
        let copy = try SQLiteOrderStore(path: target, mode: .readOnly)
        #expect(try copy.countsByState().values.reduce(0, +) == OrderState.allCases.count + 1)
        var info = stat()
        #expect(stat(target, &info) == 0)
        #expect(info.st_mode & 0o777 == 0o600)  // it holds every receipt, whatever the umask
        #expect(fixture.run(["backup", target]) == (1, "", "Error: <dir>/copy.db exists; choose a new name\n"))
    }

    @Test("reload needs a running daemon")
    func reloadWithoutDaemon() throws {
        let fixture = try CLIFixture()
        #expect(fixture.run(["reload", "--wait"]) == (1, "", "Error: reconciled is not running (nothing answers on <dir>/run/control.sock)\n"))
    }

    @Test(
        "usage errors: stderr, usage, exit 64",
        arguments: [
            (["show"], "Error: Missing expected argument '<order-id>'"),
            (["show", "A", "B"], "Error: Unexpected argument 'B'"),
            (["list", "--state", "pendng"], "Error: Invalid value 'pendng' for '--state <state>'; did you mean 'pending'?"),
            (["list", "--limit", "0"], "Error: Invalid value '0' for '--limit <n>'; use a number from 1 to 1000000"),
            (["list", "--older-than", "soon"], "Error: Invalid value 'soon' for '--older-than <span>'; use e.g. 30min, 1h, 3d"),
            (["list", "--jsn"], "Error: Unknown option '--jsn'; did you mean '--json'?"),
            (["retry"], "Error: Missing expected argument '<order-id>' (or '-', or a filter such as --state)"),
            (["retry", "A1", "--state", "escalated"], "Error: Give order ids, '-' or filters, not more than one of them"),
            (["hold", "-", "A1"], "Error: '-' reads the order ids from standard input; give no others beside it"),
            (["hold", "--store", "play"], "Error: Invalid value 'play' for '--store <store>'; use app_store or google_play"),
            (["hold", "bad id"], "Error: 'bad id' is not an order id (1–128 of A-Z a-z 0-9 . _ : -)"),
            (["resolve", "A1"], "Error: Missing expected argument '--note <text>'"),
            (["resolve", "O-escalated", "--note", "x", "--transaction-id", ""], "Error: '--transaction-id' must not be empty"),
            (["resolve", "A1", "A2", "--note", "x"], "Error: resolve takes one order"),
            (["cancel", "--state", "escalated"], "Error: Missing expected argument '--note <text>'"),
            (["submit"], "Error: Missing expected argument '<file>'"),
            (["backup"], "Error: Missing expected argument '<file>'"),
            (["reload", "now"], "Error: Unexpected argument 'now'"),
            (["status", "--all"], "Error: Unknown option '--all'"),
        ])
    func usage(arguments: [String], message: String) throws {
        let fixture = try CLIFixture()
        let result = fixture.run(arguments)
        #expect(result.status == 64)
        #expect(result.out.isEmpty)
        #expect(result.err.hasPrefix(message + "\nUsage: reconcilectl "), "\(result.err)")
        #expect(result.err.hasSuffix("--help' for more information.\n"))
    }

    @Test("without a daemon, a user who does not own the store is told what to run instead")
    func notOwner() throws {
        guard geteuid() == 0 else { return }  // needs to chown the store
        let fixture = try CLIFixture()
        let path = fixture.directory.file("state/orders.db")
        #expect(chown(path, 65534, 65534) == 0)
        let result = fixture.run(["hold", "O-pending"])
        #expect(result.status == 1)
        #expect(result.err.contains("belongs to nobody; run as its owner:\n  sudo -u nobody reconcilectl"))
    }
}
