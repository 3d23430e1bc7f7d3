import Foundation
import ReconcileCore
import ReconcileFoundation

/// Finds and reads the configuration files: the main file and its drop-in directory
/// (`reconciled.conf.d/*.conf`, lexical order), then hands the text to the pure
/// ``ConfigurationParser``.
public enum ConfigurationLoader {
    /// Where the configuration lives unless `--config` or `RECONCILE_CONFIG` says otherwise.
    public static let defaultPath = "/etc/reconciled/reconciled.conf"

    /// The path to use: `--config` first, then `RECONCILE_CONFIG`, then the default.
    public static func path(commandLine: String?, environment: [String: String]) -> String {
        if let commandLine, !commandLine.isEmpty { return commandLine }
        if let variable = environment["RECONCILE_CONFIG"], !variable.isEmpty { return variable }
        return defaultPath
    }

    /// Reads and parses the main file and its drop-ins.
    ///
    /// - Throws: ``ConfigurationError`` for an unreadable file as much as for a bad line.
    public static func load(path: String) throws(ConfigurationError) -> Configuration {
        try ConfigurationParser.parse(try sources(path: path))
    }

    /// The texts of the main file and its drop-ins, in the order they apply.
    public static func sources(path: String) throws(ConfigurationError) -> [ConfigurationSource] {
        let main = absolute(path)
        var sources = [try read(main)]
        let dropInDirectory = main + ".d"
        if let names = try? FileSystem.listDirectory(dropInDirectory) {
            for name in names.filter({ $0.hasSuffix(".conf") && !$0.hasPrefix(".") }).sorted() {
                sources.append(try read("\(dropInDirectory)/\(name)"))
            }
        }
        return sources
    }

    static func read(_ path: String) throws(ConfigurationError) -> ConfigurationSource {
        let bytes: [UInt8]
        do {
            // Regular files only, opened without blocking: a FIFO among the drop-ins would
            // otherwise hang the daemon's start, a reload and every reconcilectl verb.
            bytes = try FileSystem.readRegularFile(path, limit: 1024 * 1024)
        } catch {
            if error.errno == EINVAL, error.operation.hasPrefix("not a regular file") {
                throw ConfigurationError(ConfigurationProblem(path: path, message: "\(error.operation); only regular files are read"))
            }
            throw ConfigurationError(ConfigurationProblem(path: path, message: "cannot read the file: \(Self.reason(error))"))
        }
        if let offset = UTF8Validation.firstInvalidOffset(in: bytes) {
            throw ConfigurationError(ConfigurationProblem(path: path, message: "not UTF-8 text (invalid byte at offset \(offset))"))
        }
        return ConfigurationSource(path: path, text: String(decoding: bytes, as: UTF8.self))
    }

    static func reason(_ error: SystemError) -> String {
        error.errno == EFBIG ? "larger than 1 MiB" : String(cString: strerror(error.errno))
    }

    /// `path` made absolute against the working directory, so that relative paths inside the
    /// file resolve the same wherever the daemon later changes to.
    public static func absolute(_ path: String) -> String {
        if path.hasPrefix("/") { return ConfigurationKeys.resolve(path, against: "/") }
        let cwd = FileManager.default.currentDirectoryPath
        return ConfigurationKeys.resolve(path, against: cwd + "/")
    }
}
