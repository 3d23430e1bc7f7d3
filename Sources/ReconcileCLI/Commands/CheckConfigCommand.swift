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
            usage: "check-config [--quiet] [--as-service [--unit <unit>]]",
            discussion: """
                Reads the main file and its drop-ins (<path>.d/*.conf), then every secret, key and
                certificate file they name, and reports every problem with its file, line and key.
                Exits 0 when the configuration is usable and 78 when it is not, like reconciled
                itself. It prints every path the configuration resolved (relative ones against
                the file naming them), and warns of what would fail at run time: a metrics file
                whose directory is missing, an escalation command that is not executable. A systemd credential (…Credential=) is checked only where
                $CREDENTIALS_DIRECTORY is set, as the service manager sets it for the unit; with
                --as-service, against the files the unit's LoadCredential= names (asked of
                systemd; the unit is reconciled.service, or reconciled@NAME.service for
                /etc/reconciled/NAME.conf, or --unit).
                """,
            options: [
                OptionSpec(long: "quiet", short: "q", valueName: nil, help: "Print nothing when the configuration is valid."),
                OptionSpec(long: "as-service", short: nil, valueName: nil, help: "Check credentials as the unit's LoadCredential= would provide them."),
                OptionSpec(long: "unit", short: nil, valueName: "unit", help: "With --as-service: the unit (default from the configuration's name)."),
            ],
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
        if arguments.value("unit") != nil && !arguments.flag("as-service") {
            throw CommandLineError.usage("'--unit' goes with '--as-service'", command: "check-config")
        }
        func read(_ environment: [String: String], _ credentials: ConfiguredCredentials.CredentialsDirectory) throws -> ConfiguredCredentials {
            do {
                return try ConfiguredCredentials.read(for: configuration, environment: environment, credentials: credentials)
            } catch {
                for problem in error.problems { context.output.err("\(problem)\n") }
                throw CommandLineError.failure(
                    "\(Plural.count(error.problems.count, "problem")) in the configuration", status: ExitStatus.configuration)
            }
        }
        // Outside the service: the credentials are listed, not read.
        var outside = context.environment
        outside["CREDENTIALS_DIRECTORY"] = nil
        var resources = try read(arguments.flag("as-service") ? outside : context.environment, .optional)
        var loaded: [String] = []
        if arguments.flag("as-service") {
            let service = try ServiceCredentials.of(unit: arguments.value("unit") ?? ServiceCredentials.unit(forConfiguration: path))
            let names = resources.unchecked.compactMap { key -> (key: String, name: String)? in
                key.split(separator: "=", maxSplits: 1).last.map { (key, String($0)) }
            }
            let problems = service.problems(for: names)
            if !problems.isEmpty {
                for problem in problems { context.output.err(problem + "\n") }
                throw CommandLineError.failure("\(Plural.count(problems.count, "problem")) in the credentials", status: ExitStatus.configuration)
            }
            let links = try service.linkDirectory()
            defer { try? FileManager.default.removeItem(atPath: links) }
            var environment = context.environment
            environment["CREDENTIALS_DIRECTORY"] = links
            resources = try read(environment, .required)
            loaded = names.map { "\($0.name) from \(service.sources[$0.name] ?? "?") (\(service.unit))" }
        }
        for key in resources.unchecked {
            context.output.err(
                "note: \(key) not checked: $CREDENTIALS_DIRECTORY is not set here (the service manager sets it for the unit, from LoadCredential=); check-config --as-service reads what the unit would load\n")
        }
        let paths = ConfiguredPaths(configuration)
        for warning in paths.warnings { context.output.err("warning: \(warning)\n") }
        if !arguments.flag("quiet") {
            var text = summary(configuration, googlePlayAccount: resources.googlePlayAccount)
            text += "paths:\n" + paths.lines.joined(separator: "\n") + "\n"
            if !loaded.isEmpty { text += "credentials:\n" + loaded.map { "  " + $0 }.joined(separator: "\n") + "\n" }
            context.output.out(text)
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
