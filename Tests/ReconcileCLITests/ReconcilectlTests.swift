import Foundation
import ReconcileCore
import ReconcileFoundation
import Testing
import TestSupport
@testable import ReconcileCLI

/// Runs `reconcilectl` in-process with captured output.
func reconcilectl(_ arguments: [String], environment: [String: String] = [:]) -> (status: Int32, out: String, err: String) {
    let output = CapturedOutput()
    let status = Reconcilectl.main(arguments: arguments, environment: environment, output: output)
    return (status, output.standardOutput, output.standardError)
}

@Suite("reconcilectl: help, version and usage errors")
struct ReconcilectlTests {
    @Test("no verb, --help and help print the same overview on stdout")
    func rootHelp() {
        let none = reconcilectl([])
        #expect(none.status == 0)
        #expect(none.out == reconcilectl(["--help"]).out)
        #expect(none.out == reconcilectl(["help"]).out)
        #expect(none.err.isEmpty)
        #expect(none.out == """
            OVERVIEW: Inspect and steer reconciled, the in-app purchase reconciliation daemon.

            USAGE: reconcilectl [--config <path>] <subcommand>

            OPTIONS:
              -c, --config <path>     Configuration file (default: $RECONCILE_CONFIG, else
                                      /etc/reconciled/reconciled.conf).
              --version               Show the version.
              -h, --help              Show help information.

            SUBCOMMANDS:
              status                  Show whether reconciled runs, the orders by state and
                                      the circuits.
              list                    List orders, soonest next attempt first.
              shape                   Count the orders still in play by age, as Postfix's
                                      qshape: by state, product or endpoint.
              show                    Show an order: its fields, next attempt and whole
                                      history.
              circuit                 Show the daemon's circuits, or steer one: probe it
                                      now, or close it.
              notifications           List the store notifications taken in (refunds,
                                      revocations), newest first.
              discovered              List the purchases the stores reported that no phone
                                      order carried, newest first.
              lookup                  Ask the store about a customer's order id, and which
                                      stored order holds each purchase.
              recover                 Make orders for a customer's store order's purchases
                                      that no stored order holds.
              retry                   Make orders due now, granting at least one more
                                      attempt.
              hold                    Keep orders from being attempted until released.
              release                 Return held orders to the state they were held in.
              resolve                 Finish an order by hand.
              cancel                  Give up on an order for good.
              submit                  Validate an order file and place it in the spool.
              reload                  Make reconciled re-read its configuration.
              backup                  Write a consistent copy of the store to a new file.
              restore                 Replace the store with a backup (reconciled stopped).
              copy-store              Copy the SQLite store into an empty PostgreSQL
                                      database.
              check-config            Check the configuration the way reconciled reads it.
              help                    Show help for reconcilectl or one of its subcommands.

              See 'reconcilectl help <subcommand>' for detailed help.

            """)
    }

    @Test("verb help three ways")
    func verbHelp() {
        let help = reconcilectl(["help", "check-config"])
        #expect(help.status == 0)
        #expect(help.out == reconcilectl(["check-config", "--help"]).out)
        #expect(help.out == reconcilectl(["check-config", "-h"]).out)
        #expect(help.out.hasPrefix("OVERVIEW: Check the configuration the way reconciled reads it.\n"))
        #expect(help.out.contains("USAGE: reconcilectl check-config [--quiet] [--as-service [--unit <unit>]]\n"))
        #expect(help.out.contains("  -q, --quiet             Print nothing when the configuration is valid.\n"))
    }

    @Test("--version prints the bare version")
    func version() {
        #expect(reconcilectl(["--version"]) == (0, ReconcileVersion.current + "\n", ""))
    }

    @Test(
        "usage errors: stderr, usage, a hint, exit 64",
        arguments: [
            (["chek-config"], "Error: Unknown subcommand 'chek-config'; did you mean 'check-config'?\nUsage: reconcilectl [--config <path>] <subcommand>\n  See 'reconcilectl --help' for more information.\n"),
            (["check-config", "--quite"], "Error: Unknown option '--quite'; did you mean '--quiet'?\nUsage: reconcilectl check-config [--quiet] [--as-service [--unit <unit>]]\n  See 'reconcilectl check-config --help' for more information.\n"),
            (["check-config", "extra"], "Error: Unexpected argument 'extra'\nUsage: reconcilectl check-config [--quiet] [--as-service [--unit <unit>]]\n  See 'reconcilectl check-config --help' for more information.\n"),
            (["check-config", "--quiet=yes"], "Error: '--quiet' does not take a value\nUsage: reconcilectl check-config [--quiet] [--as-service [--unit <unit>]]\n  See 'reconcilectl check-config --help' for more information.\n"),
            (["--config"], "Error: Missing value for '--config <path>'\nUsage: reconcilectl [--config <path>] <subcommand>\n  See 'reconcilectl --help' for more information.\n"),
            (["--verbose"], "Error: Unknown option '--verbose'\nUsage: reconcilectl [--config <path>] <subcommand>\n  See 'reconcilectl --help' for more information.\n"),
            (["help", "nope"], "Error: Unknown subcommand 'nope'\nUsage: reconcilectl [--config <path>] <subcommand>\n  See 'reconcilectl --help' for more information.\n"),
        ])
    func usageErrors(arguments: [String], expected: String) {
        let result = reconcilectl(arguments)
        #expect(result.status == 64)
        #expect(result.out.isEmpty)
        #expect(result.err == expected)
    }
}

@Suite("reconcilectl check-config")
struct CheckConfigTests {
    let directory = TemporaryDirectory(prefix: "ctl-config")

    @Test("a valid configuration: a summary on stdout, exit 0; --quiet prints nothing")
    func valid() {
        directory.write("secret", "s3cret\n")
        let path = directory.write(
            "r.conf", "[Verifier]\nKind=apple\nURL=https://buy.itunes.apple.com/verifyReceipt\nBundleID=com.example.app\nSharedSecretFile=secret\n")
        let result = reconcilectl(["--config", path, "check-config"])
        #expect(result.status == 0)
        #expect(result.err.isEmpty)
        #expect(result.out.hasPrefix("\(path): configuration OK\n"))
        #expect(result.out.contains("  verifier   Kind=apple https://buy.itunes.apple.com/verifyReceipt, bundle com.example.app, sandbox refused\n"))
        #expect(result.out.contains("  retry      30s × 2 up to 1h, full jitter; escalate after 20 attempts or 3d\n"))
        #expect(result.out.contains("paths:\n  configuration \(path)\n  spool         /var/spool/reconciled\n  store         /var/lib/reconciled/orders.db\n  socket        /run/reconciled/control.sock\n"), "\(result.out)")
        #expect(reconcilectl(["check-config", "--quiet", "--config=\(path)"]) == (0, "", ""))
        #expect(reconcilectl(["check-config", "-q"], environment: ["RECONCILE_CONFIG": path]) == (0, "", ""))
    }

    @Test("paths resolve against the drop-in that names them; a metrics directory that is missing, or an escalation command that cannot run, is a warning that names the key")
    func pathsAndWarnings() throws {
        directory.write("secret", "s3cret\n")
        let path = directory.write(
            "r.conf", "[Verifier]\nKind=apple\nURL=https://buy.itunes.apple.com/verifyReceipt\nBundleID=com.example.app\nSharedSecretFile=secret\n")
        try FileManager.default.createDirectory(atPath: directory.file("r.conf.d"), withIntermediateDirectories: true)
        directory.write("r.conf.d/metrics.conf", "[Daemon]\nMetricsFile=textfile/reconciled.prom\n[Escalation]\nCommand=/nonexistent/page-oncall --now\n")
        let result = reconcilectl(["--config", path, "check-config"])
        #expect(result.status == 0, "warnings, not problems: the daemon runs")
        let metrics = directory.file("r.conf.d/textfile/reconciled.prom")
        #expect(result.out.contains("  metrics       \(metrics)\n"), "\(result.out)")
        #expect(result.out.contains("  escalation    /nonexistent/page-oncall\n"), "\(result.out)")
        #expect(result.err == """
            warning: [Daemon] MetricsFile=\(metrics): the directory \(directory.file("r.conf.d/textfile")) does not exist; the daemon would warn and write no metrics
            warning: [Escalation] Command=/nonexistent/page-oncall: not an executable file here; escalations would be logged only

            """, "\(result.err)")
        try FileManager.default.createDirectory(atPath: directory.file("r.conf.d/textfile"), withIntermediateDirectories: true)
        directory.write("r.conf.d/metrics.conf", "[Daemon]\nMetricsFile=textfile/reconciled.prom\n")
        #expect(reconcilectl(["--config", path, "check-config", "-q"]) == (0, "", ""))
    }

    @Test("--as-service reads systemd's answer: credentials the unit does not load, or whose source is missing, are problems; otherwise the links are checked")
    func asService() throws {
        let answer = #"{"type":"a(ss)","data":[["shared-secret","/etc/reconciled/shared-secret"],["token","/nowhere/token"]]}"#
        let object = try #require(try JSONParser().parse(Array(answer.utf8)).objectValue)
        let service = ServiceCredentials(unit: "reconciled.service", sources: ServiceCredentials.parse(object))
        #expect(service.sources == ["shared-secret": "/etc/reconciled/shared-secret", "token": "/nowhere/token"])
        #expect(service.problems(for: [("[Verifier] SharedSecretCredential=other", "other"), ("[Delivery] TokenCredential=token", "token")]) == [
            "[Verifier] SharedSecretCredential=other: reconciled.service has no LoadCredential=other:…; add it in a drop-in (systemctl edit reconciled.service)",
            "[Delivery] TokenCredential=token: reconciled.service's LoadCredential=token:/nowhere/token: /nowhere/token does not exist; the start would fail (243/CREDENTIALS)",
        ])
        #expect(ServiceCredentials.unit(forConfiguration: "/etc/reconciled/shop2.conf") == "reconciled@shop2.service")
        #expect(ServiceCredentials.unit(forConfiguration: "/etc/reconciled/reconciled.conf") == "reconciled.service")
        #expect(ServiceCredentials.unit(forConfiguration: "/srv/r.conf") == "reconciled.service")
        let links = try service.linkDirectory()
        defer { try? FileManager.default.removeItem(atPath: links) }
        #expect((try? FileManager.default.destinationOfSymbolicLink(atPath: links + "/token")) == "/nowhere/token")
    }

    @Test("[Revocation] and [Delivery]: URL, time-out and where the token comes from, never the token; a missing token file or CAFile named by line and key")
    func merchantEndpoints() {
        directory.write("secret", "s3cret\n")
        directory.write("revocation-token", "REVOCATION-SECRET-9\n")
        let base = "[Verifier]\nKind=apple\nURL=https://buy.itunes.apple.com/verifyReceipt\nBundleID=com.example.app\nSharedSecretFile=secret\n"
        let none = reconcilectl(["--config", directory.write("none.conf", base), "check-config"])
        #expect(none.out.contains("  delivery   none (verified orders finish at once)\n"))
        #expect(none.out.contains("  revocation none (refunds are only logged and recorded)\n"))

        let path = directory.write(
            "r.conf", base + "[Delivery]\nURL=https://backend.example/iap/deliver\n[Revocation]\nURL=https://backend.example/iap/revoke\nTokenFile=revocation-token\nTimeout=3s\n")
        let result = reconcilectl(["--config", path, "check-config"])
        #expect(result.status == 0, "\(result.err)")
        #expect(result.out.contains("  delivery   https://backend.example/iap/deliver (Timeout=10s)\n"))
        #expect(result.out.contains("  revocation https://backend.example/iap/revoke (Timeout=3s, token from file \(directory.file("revocation-token")))\n"))
        #expect(!result.out.contains("REVOCATION-SECRET") && !result.err.contains("REVOCATION-SECRET"))

        let broken = directory.write(
            "broken.conf", base + "[Revocation]\nURL=https://backend.example/iap/revoke\nTokenFile=no-such-token\nCAFile=no-such-ca.pem\n")
        let refused = reconcilectl(["--config", broken, "check-config"])
        #expect(refused.status == 78)
        #expect(refused.err.contains("\(broken):8: [Revocation] TokenFile=: "), "\(refused.err)")
        #expect(refused.err.contains("\(broken):9: [Revocation] CAFile=: "), "\(refused.err)")
    }

    @Test("an invalid configuration: every problem on stderr, exit 78")
    func invalid() {
        let path = directory.write("r.conf", "[Verifier]\nKind=apple\nTimeout=soon\n[Nope]\n")
        let result = reconcilectl(["-c", path, "check-config"])
        #expect(result.status == 78)
        #expect(result.out.isEmpty)
        #expect(result.err == """
            \(path):3: [Verifier] Timeout=: "soon" is not a time span; use us, ms, s, min, h, d, w, M, y (e.g. 500ms, 30s, 5min, 1h 30min, 3d)
            \(path):4: [Nope]: unknown section; known sections are [Spool], [State], [Verifier], [GooglePlay], [Notifications], [Discovery], [Delivery], [Revocation], [Retry], [Escalation], [Control], [Daemon]
            Error: 2 problems in the configuration

            """)
    }

    @Test("a missing file is named")
    func missing() {
        let result = reconcilectl(["--config", directory.file("none.conf"), "check-config"])
        #expect(result.status == 78)
        #expect(result.err.hasPrefix("\(directory.file("none.conf")): cannot read the file: No such file or directory\n"))
    }
}
