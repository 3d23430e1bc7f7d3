import Foundation
import ReconcileCore
import ReconcileCrypto
import ReconcileCredentials
import ReconcileFoundation
import ReconcileStore
import ReconcilePostgreSQL
import ReconcileSystem

/// `reconcilectl check-config`: reads the configuration exactly as `reconciled` would — the
/// files, then the secrets, key and certificates they name, through
/// ``ConfiguredCredentials``, as the daemon does — and says what is wrong, or
/// what it means.
enum CheckConfigCommand {
    static var spec: CommandSpec {
        CommandSpec(
            name: "check-config",
            abstract: "Check the configuration the way reconciled reads it.",
            usage: "check-config [--quiet]",
            discussion: """
                Reads the main file and its drop-ins (<path>.d/*.conf), then every secret, key and
                certificate file they name, and reports every problem with its file, line and key.
                Exits 0 when the configuration is usable and 78 when it is not, like reconciled
                itself. A systemd credential (…Credential=) is checked only where
                $CREDENTIALS_DIRECTORY is set, as the service manager sets it for the unit.
                """,
            options: [OptionSpec(long: "quiet", short: "q", valueName: nil, help: "Print nothing when the configuration is valid.")],
            run: run)
    }

    static func run(_ arguments: ParsedArguments, _ context: CommandContext) throws -> Int32 {
        if let extra = arguments.positionals.first {
            throw CommandLineError.usage("Unexpected argument '\(extra)'", command: "check-config")
        }
        let path = context.effectiveConfigPath
        let configuration: Configuration
        do {
            configuration = try ConfigurationLoader.load(path: path)
        } catch {
            for problem in error.problems { context.output.err("\(problem)\n") }
            throw CommandLineError.failure(
                "\(Plural.count(error.problems.count, "problem")) in the configuration", status: ExitStatus.configuration)
        }
        let resources: ConfiguredCredentials
        do {
            resources = try ConfiguredCredentials.read(for: configuration, environment: context.environment, credentials: .optional)
        } catch {
            for problem in error.problems { context.output.err("\(problem)\n") }
            throw CommandLineError.failure(
                "\(Plural.count(error.problems.count, "problem")) in the configuration", status: ExitStatus.configuration)
        }
        for key in resources.unchecked {
            context.output.err(
                "note: \(key) not checked: $CREDENTIALS_DIRECTORY is not set here (the service manager sets it for the unit, from LoadCredential=)\n")
        }
        if !arguments.flag("quiet") {
            context.output.out(summary(configuration, googlePlayAccount: resources.googlePlayAccount))
        }
        return ExitStatus.success
    }

    /// What the configuration means, one line per section.
    static func summary(_ configuration: Configuration, googlePlayAccount: GoogleServiceAccount? = nil) -> String {
        let main = configuration.sourcePaths.first ?? "(none)"
        var lines = ["\(main): configuration OK"]
        func line(_ label: String, _ text: String) {
            lines.append("  " + label.padding(toLength: 11, withPad: " ", startingAt: 0) + text)
        }
        if configuration.sourcePaths.count > 1 {
            line("drop-ins", configuration.sourcePaths.dropFirst().joined(separator: ", "))
        }
        let spool = configuration.spool
        line("spool", "\(spool.directory) (MaxFileSize=\(ByteSize.format(spool.maxFileSize)), rescan \(spool.rescanInterval.map(TimeSpan.format) ?? "off"))")
        let store = StoreBackend(configuration, password: nil).displayName
        line("store", "\(store) (KeepFinished=\(configuration.state.keepFinished.map(TimeSpan.format) ?? "infinity"))")
        let verifier = configuration.verifier
        if configuration.hasVerifier {
            var verifierText = "Kind=\(verifier.kind.rawValue) \(verifier.url.absoluteString)"
            if verifier.kind == .apple {
                verifierText += ", bundle \(verifier.bundleID ?? "?"), sandbox \(verifier.allowSandbox ? "allowed" : "refused")"
            }
            line("verifier", verifierText)
            let rate = verifier.maxRate.map { "\(format($0))/s" } ?? "unlimited"
            line("limits", "\(verifier.maxInFlight) in flight, \(rate) (burst \(verifier.burst)), circuit after \(verifier.circuitThreshold) failures")
        } else {
            line("verifier", "none ([GooglePlay] only: App Store orders wait)")
        }
        if configuration.hasGooglePlay {
            let play = configuration.googlePlay
            let followUp = play.consume ? "consume" : play.acknowledge ? "acknowledge" : "neither acknowledge nor consume"
            line("googleplay", "\(play.packageNames.isEmpty ? "?" : play.packageNames.joined(separator: " ")) at \(play.url.absoluteString), \(followUp) after finishing, test purchases \(play.allowTestPurchases ? "allowed" : "refused")")
            if let account = googlePlayAccount {
                line("", "service account \(account.clientEmail) (key \(account.key.bits) bits), tokens from \(play.tokenURL?.absoluteString ?? account.tokenURI)")
            }
            let rate = play.maxRate.map { "\(format($0))/s" } ?? "unlimited"
            line("", "\(play.maxInFlight) in flight, \(rate) (burst \(play.burst)), circuit after \(play.circuitThreshold) failures")
        } else {
            line("googleplay", "none (Google Play orders \(configuration.hasVerifier && verifier.kind == .http ? "go to the merchant endpoint" : "wait"))")
        }
        line("delivery", merchantEndpoint(configuration.delivery) ?? "none (verified orders finish at once)")
        line("revocation", merchantEndpoint(configuration.revocation) ?? "none (refunds are only logged and recorded)")
        line("proxy", configuration.daemon.proxy?.absoluteString ?? "none (http_proxy and the like are ignored)")
        let retry = configuration.retry
        line(
            "retry",
            "\(TimeSpan.format(retry.initialDelay)) × \(format(retry.multiplier)) up to \(TimeSpan.format(retry.maxDelay)), \(retry.jitter.rawValue) jitter; escalate after \(retry.maxAttempts) attempts or \(TimeSpan.format(retry.maxAge))")
        line("escalation", configuration.escalation.command.map { $0.joined(separator: " ") } ?? "no command (log only)")
        line("control", configuration.control.socket)
        return lines.joined(separator: "\n") + "\n"
    }

    /// `[Delivery]` or `[Revocation]`: its URL, time-out and where its token comes from (the
    /// credential's name or the file's path, never the secret); `nil` without a URL.
    static func merchantEndpoint(_ settings: MerchantEndpointSettings) -> String? {
        guard let url = settings.url else { return nil }
        var text = "\(url.absoluteString) (Timeout=\(TimeSpan.format(settings.timeout))"
        if let token = settings.token { text += ", token from \(token)" }
        if let caFile = settings.caFile { text += ", CAFile=\(caFile)" }
        return text + ")"
    }

    static func format(_ number: Double) -> String {
        number == number.rounded() ? String(Int(number)) : String(number)
    }
}
