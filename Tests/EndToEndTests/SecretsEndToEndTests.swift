import Foundation
import Glibc
import ReconcileCore
import ReconcileMock
import Testing
import TestSupport
@testable import ReconcileStore
@testable import ReconcileSQLite

/// Receipts, shared secrets and tokens never appear in anything the daemon or the CLI writes
/// (DESIGN §8, issue 6): a whole scenario runs, then every byte they wrote is searched.
@Suite("End to end: secrets stay secret", .serialized)
struct SecretsEndToEndTests {
    static let sharedSecret = "sh4red-SECRET-1b9e"
    static let token = "b3arer-TOKEN-77c2"

    @Test("finished, rejected, escalated, duplicate and malformed orders: no secret, token or receipt in stderr, reasons, store, CLI output or the escalation command's environment")
    func nothingLeaks() async throws {
        let harness = Harness("secrets")
        try await harness.startMock(["--shared-secret", Self.sharedSecret, "--token", Self.token])
        harness.directory.write("shared-secret", Self.sharedSecret + "\n")
        harness.directory.write("delivery-token", Self.token + "\n")
        let captured = harness.directory.file("escalation.env")
        let script = harness.directory.write("bin/page", "#!/bin/sh\nenv >> \(captured)\n")
        chmod(script, 0o755)
        harness.configure("""
            [Verifier]
            Kind=apple
            URL=\(harness.base)/verifyReceipt
            SandboxURL=\(harness.base)/sandbox/verifyReceipt
            BundleID=com.example.app
            SharedSecretFile=shared-secret
            MaxRate=infinity
            [Delivery]
            URL=\(harness.base)/deliver
            TokenFile=delivery-token
            \(VerificationEndToEndTests.quickRetry)
            MaxAttempts=3
            [Escalation]
            Command=bin/page
            CommandRate=100
            """)

        var receipts: [String] = []
        func drop(_ id: String, _ receipt: MockReceipt) {
            receipts.append(receipt.base64)
            harness.dropOrder(id, receipt: receipt)
        }
        drop("F1", appleReceipt("8100001"))  // finished and delivered (or escalated as D1's duplicate)
        drop("F2", appleReceipt("8100002", statuses: [21005, 0]))  // finished after a retry
        drop("R1", appleReceipt("8100003", statuses: [21010]))  // rejected
        drop("E1", appleReceipt("8100004", statuses: [21005]))  // escalated at MaxAttempts
        drop("D1", appleReceipt("8100001"))  // F1's transaction again: duplicate
        drop("B1", MockReceipt(bundleID: "com.other.app", items: [.init(productID: "gems", transactionID: "8100006")]))
        // A malformed file that carries a receipt: rejected to rejected/ with a reason.
        let strayReceipt = appleReceipt("8100007").base64
        receipts.append(strayReceipt)
        harness.drop("bad.json", #"{"v":1,"order_id":"X1","product_id":"gems","receipt":"\#(strayReceipt)","created_at":"yesterday"}"#)

        let daemon = try harness.startDaemon()
        #expect(await eventually(timeout: .seconds(30)) {
            let counts = harness.counts()
            return counts[.finished] == 2 && counts[.rejected] == 1 && counts[.escalated] == 3
        }, "\(harness.counts())")
        #expect(await eventually(timeout: .seconds(10)) { (harness.directory.read("escalation.env") ?? "").components(separatedBy: "RECONCILE_ORDER_ID=").count == 4 })

        // What an operator runs.
        var cliOutput = ""
        for arguments in [["status"], ["status", "--json"], ["list"], ["list", "--json"], ["show", "F1"], ["show", "E1", "--json"], ["show", "D1"], ["check-config"]] {
            let result = try await harness.ctl(arguments)
            cliOutput += result.output + result.error
        }
        daemon.send(SIGTERM)
        #expect(await daemon.wait() == 0)

        // Everything written: stderr at debug, reasons in rejected/, the escalation environment,
        // the CLI's output, and the store except the columns that hold the order's own proof.
        var written: [(String, String)] = [("stderr", daemon.standardError), ("reconcilectl", cliOutput)]
        written.append(("escalation environment", harness.directory.read("escalation.env") ?? ""))
        let rejected = harness.directory.file("spool/rejected")
        for name in try FileManager.default.contentsOfDirectory(atPath: rejected) where name.hasSuffix(".reason") {
            written.append(("rejected/\(name)", harness.directory.read("spool/rejected/\(name)") ?? ""))
        }
        #expect(written.count >= 4, "no reason file in rejected/")
        let store = try harness.store()
        for table in ["orders", "attempts", "transitions", "claims"] {
            let columns = try store.withConnection { try $0.query("SELECT name FROM pragma_table_info('\(table)')") { $0.string(0) } }
            let proof: Set<String> = ["receipt", "raw", "signed_transaction"]
            for column in columns where !(table == "orders" && proof.contains(column)) {
                let values = try store.withConnection { try $0.query("SELECT CAST(\(column) AS TEXT) FROM \(table)") { $0.optionalString(0) ?? "" } }
                written.append(("store \(table).\(column)", values.joined(separator: "\n")))
            }
        }
        // F1 and D1 race for one transaction: either may be the one finished.
        #expect(daemon.standardError.contains(" finished (delivered"), "the scenario did not run: \(daemon.standardError.suffix(400))")
        for (place, text) in written {
            #expect(!text.contains(Self.sharedSecret), "the shared secret is in \(place)")
            #expect(!text.contains(Self.token), "the bearer token is in \(place)")
            for receipt in receipts {
                // A copy of its start or of its end (where the transaction differs) gives a receipt away.
                #expect(!text.contains(receipt.prefix(32)), "the start of a receipt is in \(place)")
                #expect(!text.contains(receipt.suffix(32)), "the end of a receipt is in \(place)")
            }
        }
    }

    @Test("Google Play: the service account's private_key, the JWT grant, the access token and the purchase tokens appear nowhere the daemon or the CLI writes, nor in any store column but the order's own token")
    func playNothingLeaks() async throws {
        let harness = Harness("secrets-play")
        let account = try await harness.startPlayMock()
        let tokens = (1...5).map { playToken("S\($0)") }
        try await harness.registerPurchases([
            (tokens[0], "gems", "\"orderId\":\"GPA.7001\""),
            (tokens[1], "gems", "\"status\":410"),
            (tokens[2], "gems", "\"orderId\":\"GPA.7003\",\"obfuscatedExternalAccountId\":\"someone-else\""),
            (tokens[3], "gems", "\"orderId\":\"GPA.7004\",\"purchaseType\":0"),
        ])
        let captured = harness.directory.file("escalation.env")
        let script = harness.directory.write("bin/page", "#!/bin/sh\nenv >> \(captured)\n")
        chmod(script, 0o755)
        harness.configure("""
            \(harness.playSection())
            \(VerificationEndToEndTests.quickRetry)
            MaxAttempts=3
            [Escalation]
            Command=bin/page
            CommandRate=100
            """)
        for (index, token) in tokens.enumerated() { harness.dropPlayOrder("S\(index + 1)", token: token, extra: "\"user_id\":\"user-7\"") }
        // The access token is refused once mid-run: the daemon asks for another.
        let daemon = try harness.startDaemon()
        #expect(await harness.waitFor(.finished, count: 1), "\(harness.counts())")
        try await harness.postMock("/_mock/googleplay/revoke-tokens", "{}")
        harness.dropPlayOrder("S6", token: tokens[0])
        #expect(await eventually(timeout: .seconds(30)) {
            let counts = harness.counts()
            return counts[.rejected] == 3 && counts[.escalated] == 2
        }, "410, a test purchase and an unknown token rejected, an account mismatch and a replayed token escalated: \(harness.counts())")
        #expect(await eventually(timeout: .seconds(10)) { (harness.directory.read("escalation.env") ?? "").components(separatedBy: "RECONCILE_ORDER_ID=").count >= 3 })
        var cliOutput = ""
        for arguments in [["status"], ["status", "--json"], ["list"], ["list", "--json"], ["list", "--store", "google_play", "--json"], ["list", "--actions-due", "--json"],
                          ["show", "S1"], ["show", "S1", "--json"], ["show", "S3", "--json"], ["show", "S6"], ["check-config"]] {
            let result = try await harness.ctl(arguments)
            cliOutput += result.output + result.error
        }
        daemon.send(SIGTERM)
        #expect(await daemon.wait() == 0)
        let play = try await harness.playStats()
        #expect(play.tokensIssued == 2 && play.unauthorized >= 1, "the access token was not refreshed: the test proves less than it says")

        var written: [(String, String)] = [("stderr", daemon.standardError), ("reconcilectl", cliOutput)]
        written.append(("escalation environment", harness.directory.read("escalation.env") ?? ""))
        let store = try harness.store()
        let tables = try store.withConnection { try $0.query("SELECT name FROM sqlite_master WHERE type = 'table'") { $0.string(0) } }
        #expect(tables.contains("outbox"))
        for table in tables {
            let columns = try store.withConnection { try $0.query("SELECT name FROM pragma_table_info('\(table)')") { $0.string(0) } }
            // The order's own proof: its token, and the order file as it came.
            for column in columns where !((table == "orders" && column == "purchase_token") || (table == "order_proofs" && column == "raw")) {
                let values = try store.withConnection { try $0.query("SELECT CAST(\(column) AS TEXT) FROM \(table)") { $0.optionalString(0) ?? "" } }
                written.append(("store \(table).\(column)", values.joined(separator: "\n")))
            }
        }
        #expect(daemon.standardError.contains("finished"), "the scenario did not run: \(daemon.standardError.suffix(400))")
        let key = account.keyBody
        // A JWT signed with RS256 starts with this header, whatever its claims.
        let jwtHeader = "eyJhbGciOiJSUzI1NiIs"
        for (place, text) in written {
            for start in stride(from: 0, to: key.count - 32, by: 256) {
                let slice = key.dropFirst(start).prefix(32)
                #expect(!text.contains(slice), "part of the private key is in \(place)")
            }
            #expect(!text.contains("PRIVATE KEY"), "a PEM key is in \(place)")
            #expect(!text.contains(jwtHeader), "a JWT is in \(place)")
            #expect(!text.contains("ya29.mock-"), "an access token is in \(place)")
            for token in tokens {
                #expect(!text.contains(token.prefix(24)), "the start of a purchase token is in \(place)")
                #expect(!text.contains(token.suffix(24)), "the end of a purchase token is in \(place)")
            }
        }
    }

    @Test("a spool file swapped for a symlink to a secret, again and again while the daemon ingests: the secret is never read")
    func symlinkSwaps() async throws {
        let harness = Harness("swaps")
        try await harness.startMock()
        harness.configure(SystemdEndToEndTests.merchant(harness))
        // A file only root should read, shaped as an order so that reading it would show.
        let secret = harness.directory.write("secret.json", OrderFixtures.orderJSON("SECRET1", product: "gems", receipt: "U0VDUkVU"))
        let daemon = try await harness.startDaemonAndWait()
        let spool = harness.directory.file("spool")
        let swaps = try await offPool {
            var swaps = 0
            for round in 0..<400 {
                let name = "swap-\(round % 20).json"
                let regular = "\(spool)/tmp/r-\(round)"
                let link = "\(spool)/tmp/l-\(round)"
                try OrderFixtures.orderJSON("S\(round)", product: "gems", receipt: "QUJD").write(toFile: regular, atomically: false, encoding: .utf8)
                guard symlink(secret, link) == 0 else { throw HarnessError("symlink: \(errno)") }
                rename(regular, "\(spool)/incoming/\(name)")
                if rename(link, "\(spool)/incoming/\(name)") == 0 { swaps += 1 }
                unlink(link)
                sched_yield()  // the daemon's turn to look
            }
            return swaps
        }
        #expect(swaps > 300)
        #expect(await eventually(timeout: .seconds(20)) {
            ((try? FileManager.default.contentsOfDirectory(atPath: "\(spool)/incoming")) ?? ["?"]).isEmpty
        })
        daemon.send(SIGTERM)
        #expect(await daemon.wait() == 0)
        #expect(try harness.store().order(id: "SECRET1") == nil, "the symlink's target was read")
        #expect(daemon.standardError.contains("symlink"), "no symlink was refused: \(daemon.standardError.suffix(300))")
        // What was moved to rejected/ is the links themselves or real order files, never a copy of the target.
        let rejected = "\(spool)/rejected"
        for name in try FileManager.default.contentsOfDirectory(atPath: rejected) {
            var info = stat()
            #expect(lstat("\(rejected)/\(name)", &info) == 0)
            if (info.st_mode & S_IFMT) == S_IFREG {
                #expect(!(harness.directory.read("spool/rejected/\(name)") ?? "").contains("SECRET1"), "\(name) holds the secret")
            }
        }
    }
}
