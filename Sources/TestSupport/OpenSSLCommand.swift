import Foundation

/// Runs `/usr/bin/openssl` for tests: to make keys and certificates, and to check our output
/// against the reference implementation's command line.
public enum OpenSSLCommand {
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// Runs `openssl arguments…` in `directory` and returns its standard output; throws with its
    /// standard error when it fails. Output goes through files, so a chatty openssl never blocks
    /// on a full pipe.
    /// Off the cooperative pool (a test that waits for a process there stalls every other test
    /// on a 2-core machine).
    @discardableResult
    public static func run(_ arguments: [String], in directory: URL) async throws -> [UInt8] {
        try await offPool { try runBlocking(arguments, in: directory) }
    }

    /// ``run(_:in:)`` on the calling thread, for code already off the pool.
    @discardableResult
    static func runBlocking(_ arguments: [String], in directory: URL) throws -> [UInt8] {
        let outputURL = directory.appendingPathComponent("openssl-\(UUID().uuidString.prefix(8)).out")
        let errorURL = directory.appendingPathComponent("openssl-\(UUID().uuidString.prefix(8)).err")
        defer {
            try? FileManager.default.removeItem(at: outputURL)
            try? FileManager.default.removeItem(at: errorURL)
        }
        for url in [outputURL, errorURL] {
            guard FileManager.default.createFile(atPath: url.path, contents: nil) else {
                throw Failure(description: "cannot create \(url.path)")
            }
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = arguments
        process.currentDirectoryURL = directory
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = try FileHandle(forWritingTo: outputURL)
        process.standardError = try FileHandle(forWritingTo: errorURL)
        try process.run()
        process.waitUntilExit()
        let output = try read(outputURL)
        guard process.terminationReason == .exit, process.terminationStatus == 0 else {
            let errors = String(decoding: (try? read(errorURL)) ?? Data(), as: UTF8.self)
            throw Failure(description: "openssl \(arguments.joined(separator: " ")) failed (\(process.terminationStatus)): \(errors)")
        }
        return Array(output)
    }

    /// A file's bytes. (Through FileHandle: FileManager.contents(atPath:) leaks its buffer for an
    /// empty file in this toolchain's FoundationEssentials, which LeakSanitizer reports.)
    private static func read(_ url: URL) throws -> Data {
        let handle = try FileHandle(forReadingFrom: url)
        defer { try? handle.close() }
        return try handle.readToEnd() ?? Data()
    }

    /// A fresh directory under the temporary directory; the caller removes it.
    public static func temporaryDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("reconcile-crypto-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }
}
