import Foundation
import Glibc

/// A built executable of this package, run as a child process with its output captured in
/// files (so that a chatty child never blocks on a full pipe).
public final class ChildProcess: @unchecked Sendable {
    // @unchecked: `process` is only touched from the test that owns this value.
    public let process = Process()
    public let outputPath: String
    public let errorPath: String

    /// The directory holding the package's built products (`.build/<triple>/debug`).
    public static var productsDirectory: URL {
        let bundle = Bundle.main.bundleURL
        return bundle.pathExtension == "xctest" ? bundle.deletingLastPathComponent() : bundle
    }

    /// The path of a built executable of this package.
    public static func executable(_ name: String) -> String {
        productsDirectory.appendingPathComponent(name).path
    }

    /// Starts `name` (a product of this package) with `arguments`, through `wrapper` when given
    /// (`["/usr/bin/setpriv", "--reuid=…", …]` runs it as another user).
    public init(
        _ name: String, arguments: [String], environment: [String: String] = [:], directory: TemporaryDirectory,
        label: String? = nil, wrapper: [String] = [], standardInput: String? = nil
    ) throws {
        let label = label ?? name
        outputPath = directory.file("\(label).\(UUID().uuidString.prefix(6)).out")
        errorPath = directory.file("\(label).\(UUID().uuidString.prefix(6)).err")
        for path in [outputPath, errorPath] {
            precondition(FileManager.default.createFile(atPath: path, contents: nil), "cannot create \(path)")
        }
        if let command = wrapper.first {
            process.executableURL = URL(fileURLWithPath: command)
            process.arguments = wrapper.dropFirst() + [Self.executable(name)] + arguments
        } else {
            process.executableURL = URL(fileURLWithPath: Self.executable(name))
            process.arguments = arguments
        }
        var base = ProcessInfo.processInfo.environment
        for key in ["NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID", "JOURNAL_STREAM", "LISTEN_FDS", "RECONCILE_CONFIG"] {
            base[key] = nil
        }
        process.environment = base.merging(environment) { $1 }
        process.standardInput = standardInput.flatMap { FileHandle(forReadingAtPath: $0) } ?? FileHandle.nullDevice
        process.standardOutput = FileHandle(forWritingAtPath: outputPath)
        process.standardError = FileHandle(forWritingAtPath: errorPath)
        try process.run()
    }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }

    public var pid: Int32 { process.processIdentifier }
    public var isRunning: Bool { process.isRunning }

    public func send(_ signal: Int32) {
        kill(process.processIdentifier, signal)
    }

    /// Waits for the process to end; returns its exit status, or `nil` on time-out (the process
    /// is then killed). The time-out stretches as `eventually`'s does (`PatientDeadline`).
    public func wait(timeout: Duration = .seconds(30)) async -> Int32? {
        var deadline = PatientDeadline(timeout)
        while process.isRunning {
            if deadline.hasPassed {
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
                return nil
            }
            await deadline.sleep(.milliseconds(20))
        }
        return process.terminationReason == .exit ? process.terminationStatus : 128 + process.terminationStatus
    }

    public var standardOutput: String { (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? "" }
    public var standardError: String { (try? String(contentsOfFile: errorPath, encoding: .utf8)) ?? "" }

    /// Runs a product to completion.
    public static func run(
        _ name: String, _ arguments: [String], environment: [String: String] = [:], directory: TemporaryDirectory,
        timeout: Duration = .seconds(60), wrapper: [String] = [], standardInput: String? = nil
    ) async throws -> (status: Int32?, output: String, error: String) {
        let child = try ChildProcess(
            name, arguments: arguments, environment: environment, directory: directory, wrapper: wrapper, standardInput: standardInput)
        let status = await child.wait(timeout: timeout)
        return (status, child.standardOutput, child.standardError)
    }
}

/// Polls until `condition` holds or `timeout` passes; returns whether it held. The time-out is
/// stretched by `TestTime.scale` under the sanitizers, and by the time its task waited for a
/// thread (`PatientDeadline`).
public func eventually(
    timeout: Duration = .seconds(30), every interval: Duration = .milliseconds(25), _ condition: () async throws -> Bool
) async rethrows -> Bool {
    var deadline = PatientDeadline(timeout)
    while !deadline.hasPassed {
        if try await condition() { return true }
        await deadline.sleep(interval)
    }
    return try await condition()
}
