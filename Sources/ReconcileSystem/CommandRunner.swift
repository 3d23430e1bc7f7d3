import CLinux
import Foundation
import Glibc

/// Runs an operator's command (the escalation hook): argv as given, no shell, a clean
/// environment, standard input and output /dev/null, no descriptor of the daemon's.
///
/// The command leads a session, so a process group, of its own. It is done when it exits: what
/// it started in the background is neither waited for nor read from (a `sleep 120 &` holding
/// standard error open does not hold up the next command), only reported. When it runs too long
/// its whole group is stopped: SIGTERM, then SIGKILL after a grace period.
public enum CommandRunner {
    /// How a run ended.
    public enum Outcome: Sendable, Hashable, CustomStringConvertible {
        case exited(Int32)
        case signalled(Int32)
        /// Still running at the time-out: its process group was sent SIGTERM, then SIGKILL.
        case timedOut
        case couldNotStart(String)
        /// It ended, but something else in the process reaped it first.
        case endedUnknown

        public var succeeded: Bool { self == .exited(0) }

        public var description: String {
            switch self {
            case .exited(let status): "exited with status \(status)"
            case .signalled(let signal): "was killed by \(SignalStream.name(of: signal))"
            case .timedOut: "timed out; its process group was killed"
            case .couldNotStart(let reason): "could not start: \(reason)"
            case .endedUnknown: "ended (its exit status was collected elsewhere)"
            }
        }
    }

    /// What a run came to.
    public struct Result: Sendable, Hashable {
        public var outcome: Outcome
        /// The first line of its standard error (at most 200 bytes), for the log.
        public var firstErrorLine: String?
        /// Its process group (its pid), 0 when it did not start.
        public var processGroup: pid_t
        /// Whether processes it started were still running in its group after it exited.
        public var leftRunning: Bool
    }

    /// The environment a command gets besides its own variables.
    public static let baseEnvironment = ["PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8"]

    /// How often a running command is looked at.
    static let pollInterval: Duration = .milliseconds(10)

    /// Runs `arguments` with `environment` added to the base environment.
    ///
    /// - Parameter grace: after SIGTERM to a timed-out group, how long before SIGKILL.
    public static func run(
        _ arguments: [String], environment: [String: String], timeout: Duration, grace: Duration = .seconds(2)
    ) async -> Result {
        guard let program = arguments.first else { return Result(outcome: .couldNotStart("empty command"), processGroup: 0, leftRunning: false) }
        let path = program.contains("/") ? program : (search(program) ?? program)
        var descriptors: [Int32] = [-1, -1]
        guard pipe2(&descriptors, O_CLOEXEC) == 0 else {
            return Result(outcome: .couldNotStart("pipe: \(String(cString: strerror(errno)))"), processGroup: 0, leftRunning: false)
        }
        let (reader, writer) = (descriptors[0], descriptors[1])
        defer { close(reader) }
        let pid: pid_t
        let started = spawn(path, arguments, environment: baseEnvironment.merging(environment) { $1 }, standardError: writer)
        close(writer)
        switch started {
        case .success(let child): pid = child
        case .failure(let error): return Result(outcome: .couldNotStart("\(path): \(error)"), processGroup: 0, leftRunning: false)
        }
        _ = reconcile_fcntl_setfl(reader, reconcile_fcntl_getfl(reader) | O_NONBLOCK)

        var errors = ErrorOutput()
        let deadline = ContinuousClock.now + timeout
        var outcome: Outcome?
        while outcome == nil {
            errors.drain(reader)
            if let status = reap(pid) {
                outcome = status
            } else if ContinuousClock.now >= deadline {
                await stop(group: pid, leader: pid, grace: grace)
                outcome = .timedOut
            } else {
                try? await Task.sleep(for: pollInterval)
            }
        }
        // What the command itself wrote before it ended; not what its background children
        // write later, nor their end of the pipe.
        errors.drain(reader)
        let leftRunning = outcome != .timedOut && kill(-pid, 0) == 0
        return Result(outcome: outcome!, firstErrorLine: errors.firstLine, processGroup: pid, leftRunning: leftRunning)
    }

    /// The start of what a command writes to standard error, read without ever blocking.
    struct ErrorOutput {
        private(set) var kept: [UInt8] = []
        static let limit = 200

        /// Reads what is there; keeps the first `limit` bytes, drops the rest (so that the
        /// command never blocks on a full pipe).
        mutating func drain(_ descriptor: Int32) {
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else { return }
                kept += buffer.prefix(min(count, Self.limit - kept.count))
            }
        }

        var firstLine: String? {
            String(decoding: kept, as: UTF8.self).split(separator: "\n").first.map(String.init)
        }
    }

    /// How the process ended, once it has (reaped); `nil` while it runs.
    static func reap(_ pid: pid_t) -> Outcome? {
        var status: Int32 = 0
        let result = waitpid(pid, &status, WNOHANG)
        if result == 0 || (result < 0 && errno == EINTR) { return nil }
        guard result == pid else { return .endedUnknown }  // ECHILD: reaped by someone else
        if reconcile_exited(status) != 0 { return .exited(reconcile_exit_status(status)) }
        if reconcile_signalled(status) != 0 { return .signalled(reconcile_termination_signal(status)) }
        return nil
    }

    /// Stops a whole process group: SIGTERM, up to `grace` for the leader to end, then SIGKILL to
    /// whatever is left; the leader is reaped.
    static func stop(group: pid_t, leader: pid_t, grace: Duration) async {
        kill(-group, SIGTERM)
        let deadline = ContinuousClock.now + grace
        var killed = false
        while reap(leader) == nil {
            if !killed && ContinuousClock.now >= deadline {
                kill(-group, SIGKILL)
                killed = true
            }
            try? await Task.sleep(for: pollInterval)
        }
        if !killed { kill(-group, SIGKILL) }  // what the leader left behind
    }

    /// posix_spawn in a session of its own, standard error to `standardError`.
    static func spawn(
        _ path: String, _ arguments: [String], environment: [String: String], standardError: Int32
    ) -> Swift.Result<pid_t, SpawnError> {
        func cStrings(_ strings: [String]) -> [UnsafeMutablePointer<CChar>?] {
            strings.map { strdup($0) } + [nil]
        }
        let argv = cStrings(arguments)
        let envp = cStrings(environment.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" })
        defer {
            for pointer in argv + envp { free(pointer) }
        }
        var pid: pid_t = 0
        let error = reconcile_spawn_session(&pid, path, argv, envp, standardError)
        guard error == 0 else { return .failure(SpawnError(errno: error)) }
        return .success(pid)
    }

    /// Why posix_spawn failed (the program is missing, not executable, …).
    struct SpawnError: Error, CustomStringConvertible {
        var errno: Int32
        var description: String { String(cString: strerror(errno)) }
    }

    static func search(_ name: String) -> String? {
        for directory in baseEnvironment["PATH"]!.split(separator: ":") {
            let candidate = "\(directory)/\(name)"
            if access(candidate, X_OK) == 0 { return candidate }
        }
        return nil
    }
}
