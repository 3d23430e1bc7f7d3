import ReconcileFoundation

/// Where each key of a configuration was set (file and line), so that a value checked only after
/// parsing — a secret file that cannot be read, a `CAFile=` that is not PEM — is reported like
/// any other configuration problem.
///
/// Not part of what a configuration means: two configurations with the same values are equal,
/// wherever their keys were written.
public struct KeyLocations: Sendable, Hashable {
    /// The assignment in effect per `Section.Key`.
    var assignments: [String: ConfigurationAssignment]

    public init(_ assignments: [String: ConfigurationAssignment] = [:]) {
        self.assignments = assignments
    }

    /// A problem with `id` (`Section.Key`) at the line that set it; in `mainPath`, without a
    /// line, when the key was not set (its default is in force).
    public func problem(_ id: String, _ message: String, mainPath: String) -> ConfigurationProblem {
        if let assignment = assignments[id] {
            return ConfigurationProblem(
                path: assignment.path, line: assignment.line, section: assignment.section, key: assignment.key, message: message)
        }
        let parts = id.split(separator: ".", maxSplits: 1).map(String.init)
        return ConfigurationProblem(path: mainPath, section: parts.first, key: parts.count > 1 ? parts[1] : nil, message: message)
    }

    public static func == (_: KeyLocations, _: KeyLocations) -> Bool { true }

    public func hash(into hasher: inout Hasher) {}
}
