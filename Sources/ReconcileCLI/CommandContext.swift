import Foundation
import ReconcileCore
import ReconcileSystem

/// What a verb may use: where to write, the environment, the configuration path and the clock.
/// Tests give it buffers and a fixed clock; `main` gives it the process's own.
struct CommandContext {
    var output: any CommandOutput
    var environment: [String: String]
    /// `--config`, if given.
    var configPath: String?
    var now: () -> Date

    /// The configuration file in effect: `--config`, then `RECONCILE_CONFIG`, then the default.
    var effectiveConfigPath: String {
        ConfigurationLoader.path(commandLine: configPath, environment: environment)
    }
}
