import Foundation
import ReconcileFoundation

/// Turns configuration files into a ``Configuration``: every key known, every value checked,
/// every required key present, or a ``ConfigurationError`` listing each problem with its file,
/// line and key.
///
/// Sources are applied in order (main file, then drop-ins): a later assignment overrides an
/// earlier one, and an empty value (`Key=`) resets the key to its default.
public enum ConfigurationParser {
    public static func parse(_ sources: [ConfigurationSource]) throws(ConfigurationError) -> Configuration {
        var configuration = Configuration()
        configuration.sourcePaths = sources.map(\.path)
        var problems: [ConfigurationProblem] = []
        var assigned: [String: ConfigurationAssignment] = [:]
        let knownKeys = ConfigurationKeys.bySection()

        for source in sources {
            let document: INIDocument
            do {
                document = try INIParser.parse(source)
            } catch {
                problems += error.problems
                continue
            }
            for section in document.sections where knownKeys[section.name] == nil {
                problems.append(
                    ConfigurationProblem(
                        path: section.path, line: section.line, section: section.name,
                        message: "unknown section; known sections are "
                            + ConfigurationKeys.sectionOrder.map { "[\($0)]" }.joined(separator: ", ")))
            }
            for assignment in document.assignments {
                // Keys of an unknown section were reported with the section.
                guard let keys = knownKeys[assignment.section] else { continue }
                guard let key = keys[assignment.key] else {
                    var message = "unknown key"
                    if let suggestion = Spelling.closest(to: assignment.key, in: Array(keys.keys)) {
                        message += "; did you mean \(suggestion)=?"
                    }
                    problems.append(
                        ConfigurationProblem(
                            path: assignment.path, line: assignment.line, section: assignment.section,
                            key: assignment.key, message: message))
                    continue
                }
                let id = "\(assignment.section).\(assignment.key)"
                if assignment.value.isEmpty {
                    key.reset(&configuration)
                    assigned[id] = nil
                    continue
                }
                do {
                    try key.apply(&configuration, ConfigurationKeys.Value(text: assignment.value, path: assignment.path))
                    assigned[id] = assignment
                } catch {
                    problems.append(
                        ConfigurationProblem(
                            path: assignment.path, line: assignment.line, section: assignment.section,
                            key: assignment.key, message: error.message))
                }
            }
        }
        configuration.keyLocations = KeyLocations(assigned)
        configuration.hasGooglePlay = assigned.keys.contains { $0.hasPrefix("GooglePlay.") }
        configuration.hasVerifier = assigned["Verifier.Kind"] != nil || !configuration.hasGooglePlay
        if problems.isEmpty {
            problems += crossChecks(configuration, assigned: assigned, mainPath: sources.first?.path ?? "(none)")
        }
        if configuration.verifier.kind == .appstore && assigned["Verifier.URL"] == nil {
            configuration.verifier.url = Configuration.VerifierSettings.appStoreProductionURL
        }
        if !problems.isEmpty {
            // In file order, then line order, as an editor would walk them.
            let order = Dictionary(sources.enumerated().map { ($1.path, $0) }, uniquingKeysWith: { first, _ in first })
            let sorted = problems.enumerated().sorted { a, b in
                let left = (order[a.element.path] ?? 0, a.element.line ?? Int.max, a.offset)
                let right = (order[b.element.path] ?? 0, b.element.line ?? Int.max, b.offset)
                return left < right
            }
            throw ConfigurationError(problems: sorted.map(\.element))
        }
        return configuration
    }

    /// Rules between keys: required keys, exclusive pairs, ordering of limits.
    static func crossChecks(
        _ configuration: Configuration, assigned: [String: ConfigurationAssignment], mainPath: String
    ) -> [ConfigurationProblem] {
        var problems: [ConfigurationProblem] = []
        func missing(_ section: String, _ key: String, _ why: String) {
            problems.append(ConfigurationProblem(path: mainPath, section: section, key: key, message: why))
        }
        func at(_ id: String, _ message: String) {
            if let assignment = assigned[id] {
                problems.append(
                    ConfigurationProblem(
                        path: assignment.path, line: assignment.line, section: assignment.section,
                        key: assignment.key, message: message))
            } else {
                let parts = id.split(separator: ".")
                missing(String(parts[0]), String(parts[1]), message)
            }
        }

        // [Verifier] may be left out when [GooglePlay] verifies (a Google Play-only daemon); a
        // [Verifier] with keys but no Kind= is still incomplete.
        let verifierKeys = assigned.keys.filter { $0.hasPrefix("Verifier.") }
        let verifierWanted = !configuration.hasGooglePlay || !verifierKeys.isEmpty
        if assigned["Verifier.Kind"] == nil && verifierWanted {
            missing(
                "Verifier", "Kind",
                configuration.hasGooglePlay
                    ? "required when [Verifier] is there (apple, http or appstore); a Google Play-only daemon leaves the section out"
                    : "required key is missing (apple, http or appstore), or configure [GooglePlay] for a Google Play-only daemon")
        }
        if assigned["Verifier.URL"] == nil && configuration.verifier.kind != .appstore && verifierWanted {
            missing("Verifier", "URL", "required key is missing")
        }
        if configuration.hasGooglePlay {
            if configuration.googlePlay.packageName == nil {
                missing("GooglePlay", "PackageName", "required for [GooglePlay] (the app's Android package name, e.g. com.example.app)")
            }
            if configuration.googlePlay.serviceAccount == nil {
                missing(
                    "GooglePlay", "ServiceAccountCredential",
                    "[GooglePlay] needs the service account's JSON key: set ServiceAccountCredential= or ServiceAccountFile=")
            }
        }
        for (credential, file) in [
            ("Verifier.SharedSecretCredential", "Verifier.SharedSecretFile"),
            ("Verifier.TokenCredential", "Verifier.TokenFile"),
            ("Delivery.TokenCredential", "Delivery.TokenFile"),
            ("Revocation.TokenCredential", "Revocation.TokenFile"),
            ("Verifier.PrivateKeyCredential", "Verifier.PrivateKeyFile"),
            ("GooglePlay.ServiceAccountCredential", "GooglePlay.ServiceAccountFile"),
            ("State.PasswordCredential", "State.PasswordFile"),
        ] where assigned[credential] != nil && assigned[file] != nil {
            let fileKey = file.split(separator: ".")[1]
            let credentialKey = credential.split(separator: ".")[1]
            at(file, "set either \(credentialKey)= or \(fileKey)=, not both")
        }
        let verifier = configuration.verifier
        if assigned["Verifier.Kind"] != nil {
            switch verifier.kind {
            case .apple:
                if verifier.bundleID == nil {
                    missing("Verifier", "BundleID", "required for Kind=apple (the app's bundle id)")
                }
                if verifier.sharedSecret == nil {
                    missing(
                        "Verifier", "SharedSecretCredential",
                        "Kind=apple needs the app's shared secret: set SharedSecretCredential= or SharedSecretFile=")
                }
                if verifier.token != nil {
                    at(assigned["Verifier.TokenCredential"] != nil ? "Verifier.TokenCredential" : "Verifier.TokenFile",
                       "a bearer token is used only with Kind=http")
                }
            case .http:
                if verifier.sharedSecret != nil {
                    at(assigned["Verifier.SharedSecretCredential"] != nil
                        ? "Verifier.SharedSecretCredential" : "Verifier.SharedSecretFile",
                       "a shared secret is used only with Kind=apple")
                }
                if configuration.delivery.url != nil && !configuration.hasGooglePlay {
                    at(
                        "Delivery.URL",
                        "delivery is used with Kind=apple, Kind=appstore and [GooglePlay], not Kind=http alone: the merchant endpoint grants in the same step")
                }
            case .appstore:
                let required: [(String, Bool, String)] = [
                    ("BundleID", verifier.bundleID == nil, "required for Kind=appstore (the app's bundle id)"),
                    ("IssuerID", verifier.issuerID == nil, "required for Kind=appstore (App Store Connect > Users and Access > Integrations)"),
                    ("KeyID", verifier.keyID == nil, "required for Kind=appstore (the In-App Purchase key's id)"),
                    ("PrivateKeyCredential", verifier.privateKey == nil,
                     "Kind=appstore needs the In-App Purchase key: set PrivateKeyCredential= or PrivateKeyFile="),
                    ("AppAppleID", verifier.appAppleID == nil, "required for Kind=appstore (production answers are checked against it)"),
                ]
                for (key, isMissing, why) in required where isMissing { missing("Verifier", key, why) }
                if verifier.rootCertificates.isEmpty {
                    missing("Verifier", "RootCertificates", "Kind=appstore needs at least one root certificate")
                }
                for (credential, file, what) in [
                    ("Verifier.SharedSecretCredential", "Verifier.SharedSecretFile", "a shared secret is used only with Kind=apple"),
                    ("Verifier.TokenCredential", "Verifier.TokenFile", "a bearer token is used only with Kind=http"),
                ] where assigned[credential] != nil || assigned[file] != nil {
                    at(assigned[credential] != nil ? credential : file, what)
                }
            }
        }
        if assigned["Verifier.Kind"] != nil && verifier.kind != .appstore {
            // RootCertificates= also verifies App Store notifications (DESIGN §5a), whatever the Kind=.
            for key in ["IssuerID", "KeyID", "PrivateKeyCredential", "PrivateKeyFile", "AppAppleID"]
            where assigned["Verifier.\(key)"] != nil {
                at("Verifier.\(key)", "used only with Kind=appstore")
            }
        }
        if verifier.circuitCooldown > verifier.circuitMaxCooldown {
            at("Verifier.CircuitCooldown", "must not be longer than CircuitMaxCooldown= (\(TimeSpan.format(verifier.circuitMaxCooldown)))")
        }
        // Send Consumption Information is signed with Kind=appstore's key (DESIGN §5a).
        if configuration.notifications.consumptionAnswer && !(configuration.hasVerifier && assigned["Verifier.Kind"] != nil && verifier.kind == .appstore) {
            let kind = configuration.hasVerifier && assigned["Verifier.Kind"] != nil ? "not Kind=\(verifier.kind.rawValue)" : "and there is none"
            at("Notifications.ConsumptionAnswer", "on needs [Verifier] Kind=appstore (its key signs the App Store Server API's token), \(kind)")
        }
        let play = configuration.googlePlay
        if assigned["GooglePlay.PubSubURL"] != nil && play.subscription == nil {
            at("GooglePlay.PubSubURL", "used only with Subscription= (the Pub/Sub subscription to pull)")
        }
        if play.circuitCooldown > play.circuitMaxCooldown {
            at("GooglePlay.CircuitCooldown", "must not be longer than CircuitMaxCooldown= (\(TimeSpan.format(play.circuitMaxCooldown)))")
        }
        if !configuration.state.isShared {
            for key in ["PasswordCredential", "PasswordFile", "LeaseTime"] where assigned["State.\(key)"] != nil {
                at("State.\(key)", "used only with a PostgreSQL store (Database=postgresql://…)")
            }
        }
        // An attempt renews its lease at half of it: the longest request of any configured
        // section must fit.
        var timeouts = [("[Verifier]", configuration.verifier.timeout)]
        if configuration.delivery.url != nil { timeouts.append(("[Delivery]", configuration.delivery.timeout)) }
        if configuration.revocation.url != nil { timeouts.append(("[Revocation]", configuration.revocation.timeout)) }
        if configuration.hasGooglePlay { timeouts.append(("[GooglePlay]", configuration.googlePlay.timeout)) }
        if configuration.state.isShared, let longest = timeouts.max(by: { $0.1 < $1.1 }), configuration.state.leaseTime < longest.1 * 2 {
            at("State.LeaseTime", "must be at least twice \(longest.0) Timeout= (\(TimeSpan.format(longest.1))): an attempt renews its lease at half of it")
        }
        // An order made from a discovered purchase carries the store's own proof: a signed
        // transaction only Kind=appstore verifies, or a Play purchase token (DESIGN §5b).
        let appStore = configuration.hasVerifier && assigned["Verifier.Kind"] != nil && verifier.kind == .appstore
        if configuration.discovery.mode == .deliver && !appStore && !configuration.hasGooglePlay {
            at("Discovery.Mode", "deliver makes orders that carry the store's signed transaction, which only [Verifier] Kind=appstore verifies; use record, or Kind=appstore")
        }
        let retry = configuration.retry
        if retry.initialDelay > retry.maxDelay {
            at("Retry.InitialDelay", "must not be longer than MaxDelay= (\(TimeSpan.format(retry.maxDelay)))")
        }
        return problems
    }
}
