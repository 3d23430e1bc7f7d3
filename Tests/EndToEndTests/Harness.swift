import Foundation
import Glibc
import ReconcileCore
import ReconcileFoundation
import ReconcileHTTP
import ReconcileMock
import ReconcileSystem
import TestSupport
@testable import ReconcileStore
@testable import ReconcileSQLite

/// One end-to-end setup in a temporary directory: a `reconcile-mock` process, a configuration,
/// the spool, and the built `reconciled` started and stopped at will.
final class Harness: @unchecked Sendable {
    // @unchecked: used from one test at a time.
    let directory: TemporaryDirectory
    var mock: ChildProcess?
    var mockPort: UInt16 = 0
    let transport = CurlTransport()

    init(_ name: String) {
        directory = TemporaryDirectory(prefix: "e2e-\(name)")
        for folder in ["spool/tmp", "spool/incoming", "bin"] {
            try! FileManager.default.createDirectory(atPath: directory.file(folder), withIntermediateDirectories: true)
        }
    }

    var configPath: String { directory.file("reconciled.conf") }
    var base: String { "http://127.0.0.1:\(mockPort)" }

    // MARK: - Mock

    func startMock(_ arguments: [String] = []) async throws {
        let portFile = directory.file("mock.port")
        let mock = try ChildProcess(
            "reconcile-mock", arguments: ["--port-file", portFile, "--idle-exit", Self.mockSpan(180), "--lifetime", Self.mockSpan(600)] + arguments,
            directory: directory, label: "mock")
        self.mock = mock
        guard await eventually(timeout: .seconds(10), { FileManager.default.fileExists(atPath: portFile) }),
            let text = directory.read("mock.port"), let port = UInt16(text.trimmingCharacters(in: .whitespacesAndNewlines))
        else { throw HarnessError("the mock did not start: \(mock.standardError)") }
        mockPort = port
    }

    /// A span for the mock's own end (`--idle-exit`, `--lifetime`): `seconds`, stretched as the
    /// tests' waits are, so that a slow sanitized test never outlives its mock.
    static func mockSpan(_ seconds: Double) -> String {
        "\(Int(seconds * TestTime.scale))s"
    }

    func mockStats() async throws -> MockStats {
        let result = await transport.send(HTTPRequest(method: "GET", url: base + "/_mock/stats", timeout: TestTime.scaled(.seconds(5))))
        guard let response = result.response else { throw HarnessError("no stats: \(result.outcome)") }
        return MockStats(json: try JSONParser().parse(response.body))
    }

    func configureMock(_ json: String) async throws {
        let result = await transport.send(HTTPRequest(url: base + "/_mock/config", body: Array(json.utf8), timeout: TestTime.scaled(.seconds(5))))
        guard result.response?.status == 200 else { throw HarnessError("mock config refused: \(result.outcome)") }
    }

    // MARK: - Daemon

    /// Writes the configuration: spool, store and socket in the directory, plus `sections`.
    func configure(_ sections: String) {
        directory.write("reconciled.conf", """
            [Spool]
            Directory=spool
            [State]
            Database=state/orders.db
            [Control]
            Socket=run/control.sock
            \(sections)
            """)
    }

    func startDaemon(environment: [String: String] = [:], logLevel: String = "debug") throws -> ChildProcess {
        try ChildProcess("reconciled", arguments: ["--config", configPath, "--log-level", logLevel], environment: environment, directory: directory)
    }

    /// Starts the daemon and waits until it says it has started (its signal handling is in place).
    func startDaemonAndWait(environment: [String: String] = [:], logLevel: String = "debug") async throws -> ChildProcess {
        let daemon = try startDaemon(environment: environment, logLevel: logLevel)
        guard await eventually(timeout: .seconds(20), { daemon.standardError.contains("started:") || !daemon.isRunning }), daemon.isRunning else {
            throw HarnessError("reconciled did not start: \(daemon.standardError)")
        }
        return daemon
    }

    /// Drops an order file the producer's way.
    func drop(_ name: String, _ text: String) {
        let temporary = directory.write("spool/tmp/\(name)", text)
        precondition(rename(temporary, directory.file("spool/incoming/\(name)")) == 0)
    }

    func dropOrder(_ orderID: String, receipt: MockReceipt? = nil, product: String = "gems") {
        drop("\(orderID).json", OrderFixtures.orderJSON(orderID, product: product, receipt: receipt?.base64 ?? "QUJD"))
    }

    // MARK: - reconcilectl

    /// Runs the built `reconcilectl` on this setup's configuration.
    func ctl(_ arguments: [String], wrapper: [String] = [], standardInput: String? = nil) async throws -> (status: Int32?, output: String, error: String) {
        try await ChildProcess.run(
            "reconcilectl", ["--config", configPath] + arguments, directory: directory, wrapper: wrapper, standardInput: standardInput)
    }

    /// The daemon's configuration generation, asked on the socket (`reconcilectl` itself would
    /// stop at a broken configuration file).
    func generation() async throws -> Int {
        let answer = try await askStatus()
        guard case .object(let object)? = try? JSONParser().parse(Array(answer.utf8)),
            let generation = object["status"]?.objectValue?["daemon"]?.objectValue?["generation"]?.int64Value
        else { throw HarnessError("no generation in: \(answer)") }
        return Int(generation)
    }

    /// How long the daemon takes to answer a `status` asked straight on its control socket.
    ///
    /// This times the daemon alone: a `reconcilectl` started for it would add the start of a
    /// process, which under a sanitizer on a loaded machine takes seconds of its own.
    func statusAnswerTime() async throws -> Duration {
        let asked = ContinuousClock.now
        let answer = try await askStatus()
        let took = ContinuousClock.now - asked
        guard answer.contains(#""status""#) else { throw HarnessError("not a status answer: \(answer.prefix(200))") }
        return took
    }

    /// The daemon's answer to `status`, asked straight on its control socket.
    private func askStatus() async throws -> String {
        let socket = directory.file("run/control.sock")
        return try await offPool { try ControlSocketClient.request(#"{"v":1,"op":"status"}"#, path: socket) }
    }

    // MARK: - Store

    func store() throws -> SQLiteOrderStore {
        try SQLiteOrderStore(path: directory.file("state/orders.db"), mode: .readOnly)
    }

    func counts() -> [OrderState: Int] {
        (try? store().countsByState()) ?? [:]
    }

    /// Waits until `count` orders are in `state`.
    func waitFor(_ state: OrderState, count: Int, timeout: Duration = .seconds(30)) async -> Bool {
        await eventually(timeout: timeout, every: .milliseconds(50)) { counts()[state] == count }
    }

    func scalar(_ sql: String) throws -> Int {
        try Int(store().withConnection { try $0.scalar(sql) } ?? 0)
    }
}

struct HarnessError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// A unique Apple-style receipt for an order.
func appleReceipt(_ transactionID: String, environment: String = "Production", product: String = "gems", statuses: [Int] = []) -> MockReceipt {
    MockReceipt(environment: environment, items: [.init(productID: product, transactionID: transactionID)], statuses: statuses)
}

/// Runs a system tool to completion; its exit status.
func runTool(_ path: String, _ arguments: [String]) -> Int32 {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: path)
    process.arguments = arguments
    process.standardOutput = FileHandle.nullDevice
    process.standardError = FileHandle.nullDevice
    guard (try? process.run()) != nil else { return -1 }
    process.waitUntilExit()
    return process.terminationStatus
}
