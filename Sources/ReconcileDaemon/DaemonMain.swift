import Foundation
import Glibc
import ReconcileCore
import ReconcileFoundation
import ReconcileSystem

/// `reconciled`'s entry point: parses the command line, sets up logging and signals, starts the
/// ``Daemon`` and returns its exit status.
public enum DaemonMain {
    public static func run(arguments: [String], environment: [String: String]) async -> Int32 {
        let commandLine: DaemonCommandLine
        do {
            commandLine = try DaemonCommandLine.parse(arguments)
        } catch {
            FileHandle.standardError.write(
                Data("Error: \(error)\nUsage: \(DaemonCommandLine.usage)\n  See 'reconciled --help' for more information.\n".utf8))
            return ExitStatus.usage
        }
        switch commandLine.action {
        case .help:
            print(DaemonCommandLine.help)
            return ExitStatus.success
        case .version:
            print(ReconcileVersion.current)
            return ExitStatus.success
        case .run:
            break
        }

        // Signals first, so that a SIGTERM during start-up is not lost; a closed pipe is an
        // error to handle, never a reason to die.
        signal(SIGPIPE, SIG_IGN)
        let signals = SignalStream([SIGTERM, SIGINT, SIGHUP])

        let level = commandLine.logLevel ?? environment["RECONCILE_LOG_LEVEL"].flatMap(LogLevel.init(name:)) ?? .info
        let (handler, journalMissing) = logHandler(environment: environment)
        let clock = SystemClock()
        let rateLimiter = RateLimitingLogHandler(wrapping: handler, clock: clock)
        let logger = Logger(handler: rateLimiter, minimumLevel: level)
        defer { rateLimiter.flush() }
        if journalMissing {
            logger.warning("stderr is the journal's stream but \(JournalLogHandler.socketPath) is missing; logging to stderr without structured fields")
        }

        let notifier = SystemdNotifier(environment: environment)
        let configPath = ConfigurationLoader.path(commandLine: commandLine.configPath, environment: environment)
        let daemon: Daemon
        do {
            daemon = try Daemon(configPath: configPath, environment: environment, logger: logger, notifier: notifier, clock: clock)
        } catch {
            logger.critical("cannot start: \(error.message)", id: .startFailed, [.errno: error.errno.map(String.init)])
            notifier.failed(status: "cannot start: \(error.message)", errno: error.errno)
            return error.status
        }
        return await daemon.run(signals: signals)
    }

    /// The journal's native protocol when stderr is the journal stream systemd connected and
    /// its socket is there; otherwise lines on stderr (DESIGN §8). The flag says the journal
    /// stream was found without its socket, which is worth a warning.
    static func logHandler(environment: [String: String]) -> (any LogHandler, journalMissing: Bool) {
        let style = StderrLogHandler.detectStyle(environment: environment)
        let lines = StderrLogHandler(style: style)
        guard style == .journalStream else { return (lines, false) }
        guard JournalLogHandler.socketExists() else { return (lines, true) }
        return (JournalLogHandler(fallback: lines), false)
    }
}
