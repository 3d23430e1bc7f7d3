import Foundation
import Glibc
import ReconcileCore
import ReconcileDaemon
import ReconcileFoundation

/// Parses the command line and runs the chosen scenarios.
enum BenchmarkMain {
    /// Every scenario, by name, in the order they run.
    static let scenarios: [Scenario] = [
        Scenario(name: IngestScenario.name, run: IngestScenario.run),
        Scenario(name: EndToEndScenario.name, run: EndToEndScenario.run),
        Scenario(name: StoreScenario.name, run: StoreScenario.run),
        Scenario(name: StoreLimitScenario.name, run: StoreLimitScenario.run),
        Scenario(name: PostgreSQLSeedingScenario.name, run: PostgreSQLSeedingScenario.run),
        Scenario(name: PlayScenario.name, run: PlayScenario.run),
        Scenario(name: DiscoveryScenario.name, run: DiscoveryScenario.run),
        Scenario(name: BacklogScenario.name, run: BacklogScenario.run),
        Scenario(name: IdleScenario.name, run: IdleScenario.run),
        Scenario(name: TimerScenario.name, run: TimerScenario.run),
        Scenario(name: DrainScenario.name, run: DrainScenario.run),
        Scenario(name: ClusterScenario.name, run: ClusterScenario.run),
    ]

    static let usage = """
        USAGE: reconcile-bench [<scenario>...] [--quick] [--dir <path>] [--files <n>] [--baseline <reconcile-bench>]

        Scenarios: \(scenarios.map(\.name).joined(separator: ", ")) (default: all)
          --quick        A small run of each scenario (what CI runs): figures printed, not judged.
          --files <n>    ingest: how many files (default 100,000; 5,000 with --quick);
                         backlog: how many orders (default 1,000,000; 20,000 with --quick);
                         idle: how many orders (default 100,000; 10,000 with --quick);
                         timer: how many orders (default 3,000; 300 with --quick);
                         play: how many Google Play orders (default 6,400; 640 with --quick);
                         cluster: orders per node at 50 ms (default 3,000; 300 with
                         --quick) and orders at 0 ms (default 10,000; 1,000 with --quick);
                         e2e: how many orders per daemon run (default 20,000; 2,000 with --quick);
                         store, store-limit: how many orders (default 40,000; 4,000 with
                         --quick);
                         pg-seed: how many orders per round (default 20,000; 4,000 with
                         --quick).
          --dir <path>   Where state and spool live (default: a new directory under /var/tmp,
                         on the real disk, not tmpfs).
          --baseline <reconcile-bench>
                         e2e: also measure another build's transport and daemon (its
                         reconcile-bench executable), each figure beside this build's;
                         store-limit: also run that build's store scenario;
                         pg-seed: also that build's pg-seed, a round after each of ours.
          --perf <dir>   e2e: record each daemon run with `perf record -g` into <dir>.

        e2e uses nginx (TLS too) and wrk when they are installed, and says when they are not.
        """

    static func run(_ arguments: [String]) async -> Int32 {
        // The backlog and idle scenarios re-run this executable as the daemon.
        if arguments.first == "daemon" {
            return await DaemonMain.run(arguments: Array(arguments.dropFirst()), environment: ProcessInfo.processInfo.environment)
        }
        // e2e runs the raw transport in a process of its own, like the daemon.
        if arguments.first == "raw-client" {
            return await RawClient.main(Array(arguments.dropFirst()))
        }
        var names: [String] = []
        var options = BenchmarkOptions()
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            switch argument {
            case "--quick": options.quick = true
            case "--files":
                guard index < arguments.count, let count = Int(arguments[index]), count > 0 else {
                    return usageError("'--files' needs a positive number")
                }
                options.files = count
                index += 1
            case "--dir":
                guard index < arguments.count else { return usageError("Missing value for '--dir <path>'") }
                options.baseDirectory = arguments[index]
                index += 1
            case "--perf":
                guard index < arguments.count else { return usageError("Missing value for '--perf <directory>'") }
                options.profileDirectory = arguments[index]
                index += 1
            case "--baseline":
                guard index < arguments.count else { return usageError("Missing value for '--baseline <reconcile-bench>'") }
                guard access(arguments[index], X_OK) == 0 else { return usageError("'\(arguments[index])' is not an executable") }
                options.baseline = arguments[index]
                index += 1
            case "-h", "--help":
                print(usage)
                return 0
            default:
                guard scenarios.contains(where: { $0.name == argument }) else { return usageError("Unknown scenario '\(argument)'") }
                names.append(argument)
            }
        }
        let chosen = names.isEmpty ? scenarios : scenarios.filter { names.contains($0.name) }
        do {
            let machine = try MachineReport.make(options)
            print(machine.table())
            print(machine.jsonLine())
        } catch {
            FileHandle.standardError.write(Data("Error: cannot use \(options.baseDirectory): \(error)\n".utf8))
            return 1
        }
        for scenario in chosen {
            do {
                let report = try await scenario.run(options)
                print(report.table())
                print(report.jsonLine())
            } catch {
                FileHandle.standardError.write(Data("Error: \(scenario.name): \(error)\n".utf8))
                return 1
            }
        }
        return 0
    }

    static func usageError(_ message: String) -> Int32 {
        FileHandle.standardError.write(Data("Error: \(message)\n\(usage)\n".utf8))
        return 64
    }
}

/// What every scenario gets.
struct BenchmarkOptions: Sendable {
    var quick = false
    var baseDirectory = "/var/tmp"
    /// Overrides a scenario's file or order count.
    var files: Int?
    /// Another build's `reconcile-bench`, measured beside this one (e2e, store-limit).
    var baseline: String?
    /// Where e2e's daemon runs are profiled to (`perf record -g`), if anywhere.
    var profileDirectory: String?

    init(quick: Bool = false, baseDirectory: String = "/var/tmp", files: Int? = nil) {
        self.quick = quick
        self.baseDirectory = baseDirectory
        self.files = files
    }

    /// A fresh directory for one scenario.
    func makeDirectory(_ name: String) throws -> String {
        let path = "\(baseDirectory)/reconcile-bench-\(name)-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }
}

/// One benchmark scenario: a name and what it runs.
struct Scenario: Sendable {
    var name: String
    var run: @Sendable (BenchmarkOptions) async throws -> BenchmarkReport
}

/// A scenario's figures: a readable table and a JSON line.
struct BenchmarkReport {
    var scenario: String
    /// (name, value, unit, target) rows, in order.
    var rows: [(name: String, value: Double, unit: String, target: String)] = []
    var notes: [String] = []

    mutating func add(_ name: String, _ value: Double, _ unit: String, target: String = "") {
        rows.append((name, value, unit, target))
    }

    func table() -> String {
        var lines = ["== \(scenario)"]
        let width = max(24, (rows.map(\.name.count).max() ?? 0) + 2)
        for row in rows {
            let value = Self.format(row.value)
            var line = row.name.padding(toLength: width, withPad: " ", startingAt: 0)
            line += String(repeating: " ", count: max(1, 14 - value.count)) + value + " " + row.unit
            if !row.target.isEmpty { line = line.padding(toLength: width + 28, withPad: " ", startingAt: 0) + "target " + row.target }
            lines.append(line)
        }
        lines += notes.map { "   " + $0 }
        return lines.joined(separator: "\n")
    }

    /// Runs another build's `reconcile-bench` (`command`: its path and arguments) and reads the
    /// numbers of `scenario`'s JSON line (``jsonLine()``), by key.
    static func figures(ofChild command: [String], scenario: String) throws -> [String: Double] {
        let log = "/tmp/reconcile-bench-baseline-\(scenario)-\(getpid()).log"
        defer { unlink(log) }
        let (status, _) = try StoreLimitPostgreSQL.spawnSampling(command, log: log) { ProcessCPU(seconds: [:]) }
        let output = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        guard status == 0,
            let line = output.split(separator: "\n").first(where: { $0.hasPrefix("{\"scenario\":\"\(scenario)\"") }),
            case .object(let object)? = try? JSONParser().parse(String(line))
        else { throw BenchmarkError("the baseline's \(scenario) scenario gave no figures (exit \(status)): \(output.suffix(500))") }
        var figures: [String: Double] = [:]
        for member in object.members {
            if case .number(let text) = member.value, let number = Double(text) { figures[member.key] = number }
        }
        return figures
    }

    func jsonLine() -> String {
        var object = JSONObject()
        object["scenario"] = .string(scenario)
        for row in rows {
            let key = row.name.lowercased().map { $0.isLetter || $0.isNumber ? String($0) : "_" }.joined()
            object[key] = .number(Self.format(row.value, grouping: false))
        }
        return JSONWriter.string(.object(object))
    }

    static func format(_ value: Double, grouping: Bool = true) -> String {
        let rounded = value >= 100 ? value.rounded() : (value * 100).rounded() / 100
        if !grouping || value < 10_000 {
            return rounded == rounded.rounded() ? String(Int(rounded)) : String(rounded)
        }
        let digits = String(Int(rounded))
        var output = ""
        for (index, character) in digits.reversed().enumerated() {
            if index > 0 && index % 3 == 0 { output.append(",") }
            output.append(character)
        }
        return String(output.reversed())
    }
}
