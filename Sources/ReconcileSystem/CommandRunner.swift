import Foundation
import Glibc

/// Runs an operator's command (the escalation hook): argv as given, no shell, a clean
/// environment, standard input from /dev/null, killed when it runs too long.
public enum CommandRunner {
    /// How a run ended.
    public enum Outcome: Sendable, Hashable, CustomStringConvertible {
        case exited(Int32)
        case signalled(Int32)
        case timedOut
        case couldNotStart(String)

        public var succeeded: Bool { self == .exited(0) }

        public var description: String {
            switch self {
            case .exited(let status): "exited with status \(status)"
            case .signalled(let signal): "killed by signal \(signal)"
            case .timedOut: "timed out and was killed"
            case .couldNotStart(let reason): "could not start: \(reason)"
            }
        }
    }

    /// The environment a command gets besides its own variables.
    public static let baseEnvironment = ["PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8"]

    /// Runs `arguments` with `environment` added to the base environment; the first line of its
    /// standard error (at most 200 bytes) comes back for the log.
    public static func run(_ arguments: [String], environment: [String: String], timeout: Duration) async -> (Outcome, String?) {
        guard let program = arguments.first else { return (.couldNotStart("empty command"), nil) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: program.contains("/") ? program : (search(program) ?? program))
        process.arguments = Array(arguments.dropFirst())
        process.environment = baseEnvironment.merging(environment) { $1 }
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        let errors = Pipe()
        process.standardError = errors
        do {
            try process.run()
        } catch {
            return (.couldNotStart(String(describing: error)), nil)
        }
        let deadline = ContinuousClock.now + timeout
        var timedOut = false
        while process.isRunning {
            if ContinuousClock.now > deadline {
                timedOut = true
                kill(process.processIdentifier, SIGTERM)
                try? await Task.sleep(for: .seconds(2))
                if process.isRunning { kill(process.processIdentifier, SIGKILL) }
                process.waitUntilExit()
                break
            }
            try? await Task.sleep(for: .milliseconds(20))
        }
        let data = (try? errors.fileHandleForReading.readToEnd()) ?? Data()
        let firstLine = String(decoding: data.prefix(200), as: UTF8.self).split(separator: "\n").first.map(String.init)
        if timedOut { return (.timedOut, firstLine) }
        switch process.terminationReason {
        case .exit: return (.exited(process.terminationStatus), firstLine)
        case .uncaughtSignal: return (.signalled(process.terminationStatus), firstLine)
        @unknown default: return (.exited(process.terminationStatus), firstLine)
        }
    }

    static func search(_ name: String) -> String? {
        for directory in baseEnvironment["PATH"]!.split(separator: ":") {
            let candidate = "\(directory)/\(name)"
            if access(candidate, X_OK) == 0 { return candidate }
        }
        return nil
    }
}
