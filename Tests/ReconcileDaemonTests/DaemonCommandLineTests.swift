import ReconcileCore
import Testing
@testable import ReconcileDaemon
import ReconcileFoundation

@Suite("reconciled command line")
struct DaemonCommandLineTests {
    @Test("options in both spellings")
    func options() throws {
        #expect(try DaemonCommandLine.parse([]) == DaemonCommandLine())
        #expect(try DaemonCommandLine.parse(["--config", "/a.conf"]).configPath == "/a.conf")
        #expect(try DaemonCommandLine.parse(["--config=/a.conf"]).configPath == "/a.conf")
        #expect(try DaemonCommandLine.parse(["-c", "/a.conf", "--log-level=debug"]) == DaemonCommandLine(configPath: "/a.conf", logLevel: .debug))
        #expect(try DaemonCommandLine.parse(["--help"]).action == .help)
        #expect(try DaemonCommandLine.parse(["-h"]).action == .help)
        #expect(try DaemonCommandLine.parse(["--version"]).action == .version)
    }

    @Test(
        "usage errors say what is wrong",
        arguments: [
            (["--config"], "Missing value for '--config <path>'"),
            (["--log-level", "loud"], "Invalid value 'loud' for '--log-level'; use debug, info, notice, warning or err"),
            (["--verison"], "Unknown option '--verison'; did you mean '--version'?"),
            (["start"], "Unexpected argument 'start'"),
        ])
    func errors(arguments: [String], message: String) {
        #expect(throws: DaemonCommandLine.UsageError(message: message)) { try DaemonCommandLine.parse(arguments) }
    }
}
