import Foundation
import TestSupport

/// A program of the system's (bash, promtool, script(1)) run to completion off the cooperative
/// pool, its standard output and error captured together.
enum ToolProcess {
    static func run(_ path: String, _ arguments: [String], in directory: String? = nil) async throws -> (status: Int32, output: String) {
        try await offPool {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: path)
            process.arguments = arguments
            if let directory { process.currentDirectoryURL = URL(fileURLWithPath: directory) }
            let pipe = Pipe()
            process.standardOutput = pipe
            process.standardError = pipe
            process.standardInput = FileHandle.nullDevice
            try process.run()
            let data = pipe.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            return (process.terminationStatus, String(decoding: data, as: UTF8.self))
        }
    }

    /// Runs a shell command line in a pseudo-terminal that script(1) makes, as an operator at a
    /// terminal would (what reconcilectl shows only on one: progress, `status --watch`);
    /// interrupted (SIGINT, as Ctrl-C) after `interruptAfter` seconds when given.
    static func onTerminal(_ command: String, interruptAfter seconds: Double? = nil) async throws -> (status: Int32, output: String) {
        let script = ["/usr/bin/script", "-qec", command, "/dev/null"]
        guard let seconds else { return try await run(script[0], Array(script.dropFirst())) }
        return try await run("/usr/bin/timeout", ["-s", "INT", String(seconds)] + script)
    }
}
