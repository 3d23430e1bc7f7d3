import ReconcileCore
import ReconcileFoundation

/// `reconciled`'s command line: `[--config PATH] [--log-level LEVEL] [--help] [--version]`.
public struct DaemonCommandLine: Sendable, Hashable {
    public var configPath: String?
    public var logLevel: LogLevel?
    public var action: Action = .run

    /// What the invocation asks for.
    public enum Action: Sendable, Hashable {
        case run
        case help
        case version
    }

    public init(configPath: String? = nil, logLevel: LogLevel? = nil, action: Action = .run) {
        self.configPath = configPath
        self.logLevel = logLevel
        self.action = action
    }

    /// A wrong command line, for `Error:` and exit 64.
    public struct UsageError: Error, Sendable, Hashable, CustomStringConvertible {
        public var message: String
        public var description: String { message }
    }

    public static let usage = "reconciled [--config PATH] [--log-level LEVEL]"

    public static let help = """
        OVERVIEW: Take paid in-app purchase orders from a spool directory into a durable store,
        verify them, and finish them or escalate them to a person.

        USAGE: \(usage)

        OPTIONS:
          -c, --config <path>     Configuration file (default: $RECONCILE_CONFIG, else
                                  /etc/reconciled/reconciled.conf); drop-ins in <path>.d/*.conf.
          --log-level <level>     debug, info, notice, warning or err (default: $RECONCILE_LOG_LEVEL,
                                  else info).
          --version               Show the version.
          -h, --help              Show help information.

        SIGNALS:
          SIGTERM, SIGINT         Stop taking work, let in-flight work finish, exit 0.
          SIGHUP                  Reload the configuration.

        EXIT STATUS:
          0 clean stop; 78 bad configuration; 64 wrong command line; 1 any other start-up failure.

        See docs/operating.md (installed under /usr/local/share/doc/reconcile) and
        `reconcilectl help` for operating the daemon.
        """

    /// Parses the arguments after the program name.
    public static func parse(_ arguments: [String]) throws(UsageError) -> DaemonCommandLine {
        var result = DaemonCommandLine()
        var index = 0
        func value(for option: String, inline: String?) throws(UsageError) -> String {
            if let inline { return inline }
            index += 1
            guard index < arguments.count else { throw UsageError(message: "Missing value for '\(option) <\(option == "--log-level" ? "level" : "path")>'") }
            return arguments[index]
        }
        while index < arguments.count {
            let argument = arguments[index]
            var name = argument
            var inline: String?
            if argument.hasPrefix("--"), let equals = argument.firstIndex(of: "=") {
                name = String(argument[..<equals])
                inline = String(argument[argument.index(after: equals)...])
            }
            switch name {
            case "-c", "--config":
                result.configPath = try value(for: "--config", inline: inline)
            case "--log-level":
                let text = try value(for: "--log-level", inline: inline)
                guard let level = LogLevel(name: text) else {
                    throw UsageError(message: "Invalid value '\(text)' for '--log-level'; use debug, info, notice, warning or err")
                }
                result.logLevel = level
            case "-h", "--help":
                result.action = .help
            case "--version":
                result.action = .version
            default:
                var message = argument.hasPrefix("-") ? "Unknown option '\(name)'" : "Unexpected argument '\(argument)'"
                if argument.hasPrefix("-"),
                    let suggestion = Spelling.closest(to: name, in: ["--config", "--log-level", "--help", "--version"])
                {
                    message += "; did you mean '\(suggestion)'?"
                }
                throw UsageError(message: message)
            }
            index += 1
        }
        return result
    }
}
