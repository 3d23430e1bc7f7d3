import Foundation
import Glibc
import ReconcileCore
import ReconcileMock
import ReconcileStore
import ReconcileSQLite
import TestSupport
import Synchronization

/// **e2e**: the request path, each figure beside its ceiling, in one run.
///
/// - `wrk` (when installed) against the server: what loopback HTTP allows with 64 connections;
/// - the raw transport (``RawClient``, `CurlTransport` alone in a process of its own) against the
///   same server, 64 in flight;
/// - `reconciled` (this executable re-run as the daemon; `Kind=http`, `MaxInFlight=64`, no rate
///   limit, `synchronous=FULL`, state on the real disk) verifying a store of due orders, from its
///   first request to its last commit; and the CPU the daemon spent per order;
/// - over TLS (nginx only): the same with a certificate the benchmark makes, trusted through
///   `CAFile=`, on connections kept alive and on a port that closes every connection after one
///   answer, with the handshakes nginx accepted;
/// - at 50 ms of server latency (the mock): orders/s beside the 1,280 that 64 in flight allow.
///
/// The server is nginx when installed (one worker, answering `{"result":"verified"}` at once),
/// otherwise the mock in this process (which then takes a good part of the two cores).
/// `--baseline <reconcile-bench>` measures another build's transport and daemon the same way in
/// the same run, each figure beside this build's.
enum EndToEndScenario {
    static let name = "e2e"
    static let inFlight = 64

    /// A build under test: this executable, or the baseline's.
    struct Build {
        var label: String
        var executable: String
    }

    /// One daemon run's figures.
    struct DaemonRun {
        var rate: Double
        var cpuPerOrder: Double
        var handshakes: Int?
    }

    @Sendable static func run(_ options: BenchmarkOptions) async throws -> BenchmarkReport {
        let root = try options.makeDirectory(name)
        defer { try? FileManager.default.removeItem(atPath: root) }
        var builds = [Build(label: "", executable: "/proc/self/exe")]
        if let baseline = options.baseline { builds.append(Build(label: " [baseline]", executable: baseline)) }

        let service = MockService()
        let mock = try MockHTTPServer { service.handle($0) }
        defer { mock.stop() }
        let nginx: NginxPeer? = NginxPeer.installed == nil ? nil : try await NginxPeer(directory: try makeSubdirectory(root, "nginx"))
        defer { nginx?.stop() }
        let plainURL = nginx.map { $0.url($0.plainPort) } ?? "http://127.0.0.1:\(mock.port)/merchant/verify"

        var report = BenchmarkReport(scenario: name)
        report.notes.append("server: " + (nginx.map { "\($0.version), one worker, answering at once" } ?? "the mock in this process (nginx is not installed)"))
        let rawCount = options.quick ? 2_000 : 40_000
        let orderCount = options.files ?? (options.quick ? 2_000 : 20_000)

        // wrk: the ceiling of loopback HTTP with these connections.
        var wrk: Double?
        if WrkPeer.installed != nil {
            wrk = try WrkPeer.requestsPerSecond(
                url: plainURL, connections: inFlight, duration: options.quick ? .seconds(2) : .seconds(5),
                body: RawClient.body(orderID: "WRK1"), directory: root)
            report.add("wrk, \(inFlight) connections", wrk!, "requests/s")
        } else {
            report.notes.append("wrk is not installed: no reference figure (apt-get install wrk)")
        }

        // Plain HTTP at 0 ms.
        for build in builds {
            let raw = try RawClient.run(executable: build.executable, url: plainURL, count: rawCount, inFlight: inFlight, caFile: nil, directory: root)
            report.add("raw transport\(build.label)", raw.rate, "requests/s")
            report.add("raw transport CPU\(build.label)", raw.cpuSeconds / Double(rawCount) * 1e6, "us/request")
            if let wrk { report.add("raw / wrk\(build.label)", raw.rate / wrk * 100, "%", target: options.quick || !build.label.isEmpty ? "" : ">= 25 %") }
            let e2e = try await daemonRun(options, build: build, url: plainURL, caFile: nil, count: orderCount, nginx: nil)
            report.add("e2e, 0 ms\(build.label)", e2e.rate, "orders/s", target: options.quick || !build.label.isEmpty ? "" : ">= 10,000")
            report.add("e2e daemon CPU\(build.label)", e2e.cpuPerOrder, "us/order")
            report.add("e2e / raw\(build.label)", e2e.rate / raw.rate * 100, "%", target: options.quick || !build.label.isEmpty ? "" : ">= 80 %")
            if let wrk { report.add("e2e / wrk\(build.label)", e2e.rate / wrk * 100, "%") }

            // TLS, kept connections and a connection per request.
            if let nginx {
                let caFile = nginx.certificates.authority
                let tlsRaw = try RawClient.run(
                    executable: build.executable, url: nginx.url(nginx.tlsPort, tls: true), count: rawCount, inFlight: inFlight, caFile: caFile,
                    directory: root)
                report.add("TLS raw transport, kept\(build.label)", tlsRaw.rate, "requests/s")
                let kept = try await daemonRun(
                    options, build: build, url: nginx.url(nginx.tlsPort, tls: true), caFile: caFile, count: orderCount, nginx: nginx)
                report.add("TLS e2e, kept connections\(build.label)", kept.rate, "orders/s")
                report.add("TLS e2e, kept: handshakes\(build.label)", Double(kept.handshakes ?? -1), "", target: "<= \(inFlight * 2)")
                report.add("TLS e2e, kept / plain e2e\(build.label)", kept.rate / e2e.rate * 100, "%", target: options.quick || !build.label.isEmpty ? "" : ">= 60 %")
                let freshCount = options.quick ? 500 : 2_000
                let fresh = try await daemonRun(
                    options, build: build, url: nginx.url(nginx.tlsFreshPort, tls: true), caFile: caFile, count: freshCount, nginx: nginx)
                report.add("TLS e2e, connection per request\(build.label)", fresh.rate, "orders/s")
                report.add("TLS e2e, per request: handshakes\(build.label)", Double(fresh.handshakes ?? -1), "", target: "\(BenchmarkReport.format(Double(freshCount))) orders")
                report.add("TLS e2e, kept / per request\(build.label)", kept.rate / fresh.rate, "x")
            }
        }
        if nginx == nil { report.notes.append("nginx is not installed: no TLS figures (apt-get install nginx-light)") }

        // 50 ms of latency (the mock: nginx cannot wait).
        var faults = MockFaults()
        faults.latency = .milliseconds(50)
        service.setFaults(faults)
        let slowCount = options.quick ? 500 : 6_000
        let ideal = Double(inFlight) / 0.05
        for build in builds {
            let slow = try await daemonRun(
                options, build: build, url: "http://127.0.0.1:\(mock.port)/merchant/verify", caFile: nil, count: slowCount, nginx: nil)
            report.add("e2e, 50 ms (mock)\(build.label)", slow.rate, "orders/s")
            report.add("e2e / ideal, 50 ms\(build.label)", slow.rate / ideal * 100, "%", target: options.quick || !build.label.isEmpty ? "" : ">= 90 % of 1,280")
        }
        report.notes.append("MaxInFlight=\(inFlight), MaxRate=infinity, synchronous=FULL, \(RawClient.receipt.count)-character receipts")
        report.notes.append("raw: \(BenchmarkReport.format(Double(rawCount))) requests; e2e: \(BenchmarkReport.format(Double(orderCount))) orders, from the first attempt to the last commit (the store's times)")
        report.notes.append("wrk -t1 -c\(inFlight), the same POST; raw and daemon are processes of their own; CPU per order is the daemon's user + system time")
        return report
    }

    /// A file name for a run's profile: which build, which server.
    static func profileLabel(url: String, build: Build) -> String {
        let port = url.split(separator: ":").last?.split(separator: "/").first ?? "0"
        return (build.label.isEmpty ? "this" : "baseline") + "-" + (url.hasPrefix("https") ? "tls" : "http") + "-\(port)"
    }

    static func makeSubdirectory(_ root: String, _ name: String) throws -> String {
        let path = root + "/" + name
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    /// `count` orders due now in a fresh store, verified by `build`'s daemon at `url`.
    static func daemonRun(
        _ options: BenchmarkOptions, build: Build, url: String, caFile: String?, count: Int, nginx: NginxPeer?
    ) async throws -> DaemonRun {
        let root = try options.makeDirectory(name + "-daemon")
        defer { try? FileManager.default.removeItem(atPath: root) }
        var verifier = "MaxInFlight=\(inFlight)\nMaxRate=infinity"
        if let caFile { verifier += "\nCAFile=\(caFile)" }
        let config = try DaemonProcess.writeConfiguration(in: root, url: url, verifier: verifier)
        if build.label.isEmpty {
            let store = try SQLiteOrderStore(path: root + "/orders.db", mode: .owner)
            try Seeding.insertOrders(into: store, count: count, at: Date().addingTimeInterval(-60), receipt: RawClient.receipt)
            store.close()
        } else {
            // The baseline's daemon makes its store in its own schema, then stops; the orders go
            // in with SQL, in that schema's layout.
            // (Its notify socket in a directory of its own: closing it unlinks its path.)
            do {
                let maker = try DaemonProcess(
                    configPath: config, directory: try makeSubdirectory(root, "maker"), executable: build.executable)
                _ = try await maker.waitUntilReady()
                guard await maker.stop() == 0 else { throw BenchmarkError("the baseline's reconciled did not stop cleanly after making its store") }
            }
            try Seeding.insertRawOrders(path: root + "/orders.db", count: count, at: Date().addingTimeInterval(-60), receipt: RawClient.receipt)
        }
        let acceptedBefore = try nginx?.acceptedConnections()
        let daemon = try DaemonProcess(configPath: config, directory: root, executable: build.executable)
        _ = try await daemon.waitUntilReady()
        let cpu = daemon.cpuSeconds
        let profile = try options.profileDirectory.map { directory in
            try Profiler(pid: daemon.pid, output: "\(directory)/e2e-\(profileLabel(url: url, build: build)).perf.data")
        }
        let reader = try SQLiteConnection(path: root + "/orders.db", mode: .readOnly)
        let deadline = ContinuousClock.now + .seconds(120 + Double(count) / 20)
        while try reader.scalar("SELECT count(*) FROM orders WHERE state = 'finished'") ?? 0 < count {
            guard daemon.process.isRunning else { throw BenchmarkError("reconciled stopped while verifying") }
            guard ContinuousClock.now < deadline else { throw BenchmarkError("reconciled did not finish \(count) orders at \(url) in time") }
            try await Task.sleep(for: .milliseconds(50))
        }
        let usedCPU = daemon.cpuSeconds - cpu
        profile?.stop()
        let acceptedAfter = try nginx?.acceptedConnections()
        let first = try reader.scalar("SELECT min(started_at) FROM attempts") ?? 0
        let last = try reader.scalar("SELECT max(updated_at) FROM orders WHERE state = 'finished'") ?? 0
        let attempts = try reader.scalar("SELECT count(*) FROM attempts") ?? 0
        reader.close()
        let status = await daemon.stop()
        guard status == 0 else { throw BenchmarkError("reconciled exited with \(status)") }
        guard attempts == count else { throw BenchmarkError("\(attempts) attempts for \(count) orders at \(url): some failed") }
        let seconds = max(0.001, Double(last - first) / 1000)
        let handshakes = acceptedBefore.flatMap { before in acceptedAfter.map { $0 - before } }
        return DaemonRun(rate: Double(count) / seconds, cpuPerOrder: usedCPU / Double(count) * 1e6, handshakes: handshakes)
    }
}

/// A shared counter for the benchmark's workers.
final class Counter: Sendable {
    let value = Atomic<Int>(0)
}
