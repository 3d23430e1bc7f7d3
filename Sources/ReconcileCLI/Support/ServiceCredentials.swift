import Foundation
import Glibc
import ReconcileFoundation

/// `check-config --as-service`: the credentials a unit's `LoadCredential=` would hand the
/// daemon, asked of systemd over D-Bus, laid out as `$CREDENTIALS_DIRECTORY` would be
/// (a private directory of links to the sources), so that the configuration's `…Credential=`
/// keys are checked against the files the service would get.
struct ServiceCredentials {
    let unit: String
    /// Credential name → source file, as the unit names them.
    let sources: [String: String]

    /// Asks systemd for `unit`'s `LoadCredential=` over D-Bus (`busctl --json`: systemd 252's
    /// `systemctl show` prints that property as "[unprintable]"); throws when systemd cannot tell.
    static func of(unit: String) throws -> ServiceCredentials {
        let manager = ["org.freedesktop.systemd1", "/org/freedesktop/systemd1", "org.freedesktop.systemd1.Manager"]
        let path = try busctl(["call"] + manager + ["LoadUnit", "s", unit], unit: unit)["data"]?.arrayValue?.first?.stringValue
        guard let path else { throw CommandLineError.failure("--as-service: systemd gave no object for \(unit)") }
        let state = try busctl(["get-property", "org.freedesktop.systemd1", path, "org.freedesktop.systemd1.Unit", "LoadState"], unit: unit)
        guard state["data"]?.stringValue == "loaded" else {
            throw CommandLineError.failure("systemd knows no unit \(unit) (LoadState=\(state["data"]?.stringValue ?? "?")); name it with --unit")
        }
        let loaded = try busctl(["get-property", "org.freedesktop.systemd1", path, "org.freedesktop.systemd1.Service", "LoadCredential"], unit: unit)
        return ServiceCredentials(unit: unit, sources: parse(loaded))
    }

    /// `busctl --json=short get-property … LoadCredential`: `{"type":"a(ss)","data":[["name","path"],…]}`.
    static func parse(_ answer: JSONObject) -> [String: String] {
        var sources: [String: String] = [:]
        for pair in answer["data"]?.arrayValue ?? [] {
            guard let items = pair.arrayValue, items.count == 2, let name = items[0].stringValue, let source = items[1].stringValue else { continue }
            sources[name] = source
        }
        return sources
    }

    /// Runs busctl with `--json=short`; its answer as an object.
    private static func busctl(_ arguments: [String], unit: String) throws -> JSONObject {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/busctl")
        process.arguments = ["--json=short"] + arguments
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        do {
            try process.run()
        } catch {
            throw CommandLineError.failure("--as-service asks systemd for \(unit)'s LoadCredential=, and busctl cannot run here: \(error)")
        }
        let text = output.fileHandleForReading.readDataToEndOfFile()
        let problem = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard process.terminationStatus == 0, case .object(let object)? = try? JSONParser().parse(Array(text)) else {
            throw CommandLineError.failure(
                "--as-service asks systemd for \(unit)'s LoadCredential=: \(problem.split(separator: "\n").first.map(String.init) ?? "busctl failed")")
        }
        return object
    }

    /// The unit a configuration file belongs to: `/etc/reconciled/NAME.conf` is
    /// `reconciled@NAME.service`, anything else `reconciled.service`.
    static func unit(forConfiguration path: String) -> String {
        let name = ((path as NSString).lastPathComponent as NSString).deletingPathExtension
        guard (path as NSString).deletingLastPathComponent == "/etc/reconciled", name != "reconciled", !name.isEmpty else {
            return "reconciled.service"
        }
        return "reconciled@\(name).service"
    }

    /// Problems with the credentials `names` (the configuration's `…Credential=` values): one
    /// the unit does not load, or whose source is missing (the start would fail, 243/CREDENTIALS).
    func problems(for names: [(key: String, name: String)]) -> [String] {
        names.compactMap { key, name in
            guard let source = sources[name] else {
                return "\(key): \(unit) has no LoadCredential=\(name):…; add it in a drop-in (systemctl edit \(unit))"
            }
            guard access(source, F_OK) == 0 else {
                return "\(key): \(unit)'s LoadCredential=\(name):\(source): \(source) does not exist; the start would fail (243/CREDENTIALS)"
            }
            return nil
        }
    }

    /// A private directory of links, one per credential, as `$CREDENTIALS_DIRECTORY`.
    func linkDirectory() throws -> String {
        var template = Array((NSTemporaryDirectory() + "/reconcilectl-credentials.XXXXXX").utf8CString)
        guard let made = mkdtemp(&template) else { throw CommandLineError.failure("cannot make a temporary directory: \(String(cString: strerror(errno)))") }
        let directory = String(cString: made)
        for (name, source) in sources where !name.contains("/") {
            symlink(source, directory + "/" + name)
        }
        return directory
    }
}
