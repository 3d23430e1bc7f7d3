import Foundation
import Glibc
import Synchronization

/// A `reconciled` started for a benchmark: this very executable re-run as the daemon
/// (`reconcile-bench daemon --config …`), so that `swift run reconcile-bench` needs no other
/// product, with a notify socket to time `READY=1` and `/proc` to read its memory and CPU.
final class DaemonProcess {
    let process = Process()
    let notify: NotifyListener
    let started = ContinuousClock.now

    /// - Parameter executable: the `reconcile-bench` to run as the daemon: this one, or another
    ///   build's (`--baseline`).
    init(configPath: String, directory: String, environment: [String: String] = [:], executable: String = "/proc/self/exe") throws {
        notify = try NotifyListener(path: directory + "/notify.sock")
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = ["daemon", "--config", configPath, "--log-level", "notice"]
        var base = ProcessInfo.processInfo.environment
        for key in ["WATCHDOG_USEC", "WATCHDOG_PID", "JOURNAL_STREAM"] { base[key] = nil }
        base["NOTIFY_SOCKET"] = notify.path
        process.environment = base.merging(environment) { $1 }
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle(forWritingAtPath: "/dev/null")
        try process.run()
    }

    var pid: Int32 { process.processIdentifier }

    /// Writes `root/reconciled.conf`: spool, store and socket in `root`, `Kind=http` at `url`,
    /// plus `verifier` lines for `[Verifier]`. Returns its path.
    static func writeConfiguration(in root: String, url: String, verifier: String = "") throws -> String {
        let path = root + "/reconciled.conf"
        try """
            [Spool]
            Directory=\(root)/spool
            [State]
            Database=\(root)/orders.db
            [Control]
            Socket=\(root)/control.sock
            [Verifier]
            Kind=http
            URL=\(url)
            \(verifier)
            """.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    deinit {
        // A scenario that failed half-way leaves no daemon behind.
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        notify.close()
    }

    /// Time from start to `READY=1`.
    func waitUntilReady(timeout: Duration = .seconds(120)) async throws -> Duration {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let ready = notify.firstReady { return ready - started }
            guard process.isRunning else { throw BenchmarkError("reconciled exited with status \(process.terminationStatus) before READY=1") }
            try await Task.sleep(for: .milliseconds(2))
        }
        throw BenchmarkError("no READY=1 within \(timeout)")
    }

    /// Resident memory in MiB (`VmRSS`).
    var residentMiB: Double {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
            let kilobytes = Double(line.split(separator: " ").dropFirst().first ?? "")
        else { return .nan }
        return kilobytes / 1024
    }

    /// User + system CPU time so far, in seconds.
    var cpuSeconds: Double {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return .nan }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        // After the command: state is field 3, utime 14, stime 15 (1-based in proc(5)).
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return .nan }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// Context switches so far of each thread, keyed by "tid name": each is a wake-up (or a
    /// preemption).
    var contextSwitches: [String: Int] {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        var counts: [String: Int] = [:]
        for task in tasks {
            guard let status = try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/status", encoding: .utf8) else { continue }
            let name = status.split(separator: "\n").first { $0.hasPrefix("Name:") }.map { $0.dropFirst(5).trimmingCharacters(in: .whitespaces) } ?? "?"
            for line in status.split(separator: "\n") where line.contains("ctxt_switches:") {
                counts["\(task) \(name)", default: 0] += Int(line.split(separator: "\t").last?.trimmingCharacters(in: .whitespaces) ?? "") ?? 0
            }
        }
        return counts
    }

    /// Wake-ups between two samples of ``contextSwitches``: the growth of each thread that is
    /// still there, everything of a thread started since, and one for each that ended.
    static func wakeUps(from before: [String: Int], to after: [String: Int]) -> Int {
        var total = 0
        for (thread, count) in after { total += count - (before[thread] ?? 0) }
        total += before.keys.filter { after[$0] == nil }.count
        return total
    }

    /// The threads (keys as in ``contextSwitches``) now waiting in `epoll_wait`: libdispatch's
    /// event thread, which also runs its worker-pool monitor once a second on Linux.
    var dispatchEventThreads: Set<String> {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        var found: Set<String> = []
        for task in tasks {
            guard let syscall = try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/syscall", encoding: .utf8),
                let number = Int(syscall.split(separator: " ").first ?? ""),
                [232, 281, 441].contains(number),  // epoll_wait, epoll_pwait, epoll_pwait2 (x86-64)
                let name = try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/comm", encoding: .utf8)
            else { continue }
            found.insert("\(task) \(name.trimmingCharacters(in: .whitespacesAndNewlines))")
        }
        return found
    }

    /// The threads that woke between two samples, busiest first: "name ×count".
    static func wakingThreads(from before: [String: Int], to after: [String: Int]) -> [String] {
        after.map { thread, count in (thread, count - (before[thread] ?? 0)) }
            .filter { $0.1 > 0 }
            .sorted { $0.1 > $1.1 }
            .map { "\($0.0.split(separator: " ", maxSplits: 1).last ?? "?") ×\($0.1)" }
    }

    /// SIGTERM, then waits for the exit status.
    func stop() async -> Int32 {
        kill(pid, SIGTERM)
        while process.isRunning { try? await Task.sleep(for: .milliseconds(10)) }
        notify.close()
        return process.terminationStatus
    }
}

/// The notify socket: notes when `READY=1` arrives.
final class NotifyListener: Sendable {
    let path: String
    private let descriptor: Int32
    private let ready = Mutex<ContinuousClock.Instant?>(nil)
    private let closed = Atomic<Bool>(false)

    init(path: String) throws {
        self.path = path
        unlink(path)
        let descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard descriptor >= 0, bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { throw BenchmarkError("cannot make \(path)") }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0 else {
            Glibc.close(descriptor)
            throw BenchmarkError("cannot bind \(path)")
        }
        var timeout = timeval(tv_sec: 0, tv_usec: 100_000)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        self.descriptor = descriptor
        Thread { [self] in self.collect() }.start()
    }

    private func collect() {
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !closed.load(ordering: .relaxed) {
            let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { continue }
            let now = ContinuousClock.now
            if String(decoding: buffer[0..<count], as: UTF8.self).split(separator: "\n").contains("READY=1") {
                ready.withLock { $0 = $0 ?? now }
            }
        }
        Glibc.close(descriptor)
        unlink(path)
    }

    var firstReady: ContinuousClock.Instant? { ready.withLock { $0 } }

    func close() { closed.store(true, ordering: .relaxed) }
}

/// A benchmark that could not run.
struct BenchmarkError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
