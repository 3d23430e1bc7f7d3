import Foundation
import Glibc
import ReconcileCore
import ReconcilePostgreSQL

/// Every path a configuration resolves to (relative ones against the file that names them),
/// for `check-config`, with what would fail at run time that the parser cannot see: a
/// `MetricsFile=` whose directory is missing (the daemon makes its store's and socket's
/// directories, not that one), an escalation command that is not an executable file.
struct ConfiguredPaths {
    struct Entry: Equatable {
        var label: String
        var path: String
    }

    var entries: [Entry] = []
    /// Problems the daemon would meet when it runs, each naming the key and the path.
    var warnings: [String] = []

    init(_ configuration: Configuration) {
        func directoryOf(_ path: String) -> String { (path as NSString).deletingLastPathComponent }
        func isDirectory(_ path: String) -> Bool {
            var info = stat()
            return stat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFDIR
        }
        for (index, path) in configuration.sourcePaths.enumerated() { entries.append(Entry(label: index == 0 ? "configuration" : "drop-in", path: path)) }
        entries.append(Entry(label: "spool", path: configuration.spool.directory))
        switch StoreBackend(configuration, password: nil) {
        case .sqlite(let path):
            entries.append(Entry(label: "store", path: path))
        case .postgresql:
            break
        }
        entries.append(Entry(label: "socket", path: configuration.control.socket))
        if let metrics = configuration.daemon.metricsFile {
            entries.append(Entry(label: "metrics", path: metrics))
            if !isDirectory(directoryOf(metrics)) {
                warnings.append(
                    "[Daemon] MetricsFile=\(metrics): the directory \(directoryOf(metrics)) does not exist; the daemon would warn and write no metrics")
            }
        }
        if let program = configuration.escalation.command?.first {
            entries.append(Entry(label: "escalation", path: program))
            if program.hasPrefix("/") && access(program, X_OK) != 0 {
                warnings.append("[Escalation] Command=\(program): not an executable file here; escalations would be logged only")
            }
        }
        if configuration.hasVerifier {
            if configuration.verifier.kind == .appstore {
                for root in configuration.verifier.rootCertificates { entries.append(Entry(label: "root", path: root)) }
            }
            if let caFile = configuration.verifier.caFile { entries.append(Entry(label: "CA file", path: caFile)) }
        }
    }

    /// The `paths` block of check-config's summary.
    var lines: [String] {
        entries.map { "  " + $0.label.padding(toLength: 14, withPad: " ", startingAt: 0) + $0.path }
    }
}
