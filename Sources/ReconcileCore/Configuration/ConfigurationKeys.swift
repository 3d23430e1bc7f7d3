import Foundation
import ReconcileFoundation

/// Every key the configuration knows: its section, name, value grammar and where it lands in
/// ``Configuration``. One table, so that the parser, the documentation in `etc/reconciled.conf`
/// and the tests agree. (Longer than most files on purpose: every key in one list, which
/// `ConfigurationDocumentationTests` compares with the documentation.)
public enum ConfigurationKeys {
    /// A value to apply, with the file that holds it (relative paths resolve against its directory).
    struct Value {
        var text: String
        var path: String
    }

    /// Why a value was refused; the parser adds file, line and key.
    struct Problem: Error {
        var message: String
        init(_ message: String) { self.message = message }
    }

    /// One key of the table.
    struct Key {
        var section: String
        var name: String
        var apply: (inout Configuration, Value) throws(Problem) -> Void
        var reset: (inout Configuration) -> Void
    }

    /// Sections in the order the documentation lists them.
    public static let sectionOrder = ["Spool", "State", "Verifier", "GooglePlay", "Notifications", "Discovery", "Delivery", "Revocation", "Retry", "Escalation", "Control", "Daemon"]

    /// All keys, section by section, in documentation order.
    static var all: [Key] {
        [
        path("Spool", "Directory", \.spool.directory),
        size("Spool", "MaxFileSize", \.spool.maxFileSize, minimum: 64),
        optionalSpan("Spool", "RescanInterval", \.spool.rescanInterval, offWord: "off", minimum: .seconds(1)),

        Key(
            section: "State", name: "Database",
            apply: { configuration, value throws(Problem) in
                // A PostgreSQL connection URI is taken as written; anything else is a path.
                if StateDatabase.isPostgreSQL(value.text) {
                    guard !value.text.contains("\0") else { throw Problem("a connection URI may not contain NUL") }
                    configuration.state.database = value.text
                } else {
                    configuration.state.database = try checkedPath(value)
                }
            },
            reset: { $0.state.database = Configuration().state.database }),
        optionalSpan("State", "KeepFinished", \.state.keepFinished, offWord: "infinity", minimum: .seconds(60)),
        credentialName("State", "PasswordCredential", \.state.password),
        credentialFile("State", "PasswordFile", \.state.password),
        span("State", "LeaseTime", \.state.leaseTime, minimum: .seconds(1)),

        Key(
            section: "Verifier", name: "Kind",
            apply: { configuration, value throws(Problem) in
                guard let kind = VerifierKind(rawValue: value.text) else {
                    throw Problem("\(quote(value.text)) is not a verifier kind; use apple, http or appstore")
                }
                configuration.verifier.kind = kind
            },
            reset: { $0.verifier.kind = Configuration().verifier.kind }),
        url("Verifier", "URL", \.verifier.url),
        optionalURL("Verifier", "SandboxURL", \.verifier.sandboxURL),
        optionalText("Verifier", "BundleID", \.verifier.bundleID, rule: bundleIDRule),
        bool("Verifier", "AllowSandbox", \.verifier.allowSandbox),
        credentialName("Verifier", "SharedSecretCredential", \.verifier.sharedSecret),
        credentialFile("Verifier", "SharedSecretFile", \.verifier.sharedSecret),
        credentialName("Verifier", "TokenCredential", \.verifier.token),
        credentialFile("Verifier", "TokenFile", \.verifier.token),
        optionalText("Verifier", "IssuerID", \.verifier.issuerID, rule: issuerIDRule),
        optionalText("Verifier", "KeyID", \.verifier.keyID, rule: keyIDRule),
        credentialName("Verifier", "PrivateKeyCredential", \.verifier.privateKey),
        credentialFile("Verifier", "PrivateKeyFile", \.verifier.privateKey),
        optionalText("Verifier", "AppAppleID", \.verifier.appAppleID, rule: appAppleIDRule),
        Key(
            section: "Verifier", name: "RootCertificates",
            apply: { configuration, value throws(Problem) in
                let paths = value.text.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
                var resolved: [String] = []
                for path in paths {
                    resolved.append(try checkedPath(Value(text: path, path: value.path)))
                }
                configuration.verifier.rootCertificates = resolved
            },
            reset: { $0.verifier.rootCertificates = Configuration().verifier.rootCertificates }),
        optionalPath("Verifier", "CAFile", \.verifier.caFile),
        span("Verifier", "Timeout", \.verifier.timeout, minimum: .milliseconds(10)),
        integer("Verifier", "MaxInFlight", \.verifier.maxInFlight, range: 1...4096),
        rate("Verifier", "MaxRate", \.verifier.maxRate),
        integer("Verifier", "Burst", \.verifier.burst, range: 1...100_000),
        integer("Verifier", "CircuitThreshold", \.verifier.circuitThreshold, range: 1...100_000),
        span("Verifier", "CircuitCooldown", \.verifier.circuitCooldown, minimum: .milliseconds(10)),
        span("Verifier", "CircuitMaxCooldown", \.verifier.circuitMaxCooldown, minimum: .milliseconds(10)),

        Key(
            section: "GooglePlay", name: "PackageName",
            apply: { configuration, value throws(Problem) in
                // One package, or several separated by spaces; the first is for orders naming none.
                let names = value.text.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
                guard !names.isEmpty else { throw Problem("is empty; name the app's Android package, e.g. com.example.app") }
                var seen: Set<String> = []
                for name in names {
                    if let problem = AndroidPackageName.problem(name) { throw Problem("\(quote(name)) \(problem)") }
                    guard seen.insert(name).inserted else { throw Problem("names \(quote(name)) twice") }
                }
                configuration.googlePlay.packageNames = names
            },
            reset: { $0.googlePlay.packageNames = [] }),
        credentialName("GooglePlay", "ServiceAccountCredential", \.googlePlay.serviceAccount),
        credentialFile("GooglePlay", "ServiceAccountFile", \.googlePlay.serviceAccount),
        url("GooglePlay", "URL", \.googlePlay.url),
        optionalURL("GooglePlay", "TokenURL", \.googlePlay.tokenURL),
        span("GooglePlay", "Timeout", \.googlePlay.timeout, minimum: .milliseconds(10)),
        integer("GooglePlay", "MaxInFlight", \.googlePlay.maxInFlight, range: 1...4096),
        rate("GooglePlay", "MaxRate", \.googlePlay.maxRate),
        integer("GooglePlay", "Burst", \.googlePlay.burst, range: 1...100_000),
        integer("GooglePlay", "CircuitThreshold", \.googlePlay.circuitThreshold, range: 1...100_000),
        span("GooglePlay", "CircuitCooldown", \.googlePlay.circuitCooldown, minimum: .milliseconds(10)),
        span("GooglePlay", "CircuitMaxCooldown", \.googlePlay.circuitMaxCooldown, minimum: .milliseconds(10)),
        optionalPath("GooglePlay", "CAFile", \.googlePlay.caFile),
        bool("GooglePlay", "Acknowledge", \.googlePlay.acknowledge),
        bool("GooglePlay", "Consume", \.googlePlay.consume),
        bool("GooglePlay", "AllowTestPurchases", \.googlePlay.allowTestPurchases),
        optionalText("GooglePlay", "Subscription", \.googlePlay.subscription, rule: subscriptionRule),
        url("GooglePlay", "PubSubURL", \.googlePlay.pubSubURL),

        optionalSpan("Notifications", "Poll", \.notifications.poll, offWord: "off", minimum: .seconds(1)),
        bool("Notifications", "ConsumptionAnswer", \.notifications.consumptionAnswer),
        bool("Notifications", "CustomerConsented", \.notifications.customerConsented),
        bool("Notifications", "SampleContentProvided", \.notifications.sampleContentProvided),
        Key(
            section: "Notifications", name: "RefundPreference",
            apply: { configuration, value throws(Problem) in
                guard let preference = ConsumptionPolicy.RefundPreference(configured: value.text) else {
                    if value.text.uppercased() == "GRANT_PRORATED" {
                        throw Problem(
                            "grant_prorated is for auto-renewable subscriptions only, and Apple refuses an answer about another purchase that carries it; use decline or grant_full (or leave it empty)")
                    }
                    throw Problem("\(quote(value.text)) is not a refund preference; use decline or grant_full (or leave it empty)")
                }
                configuration.notifications.refundPreference = preference
            },
            reset: { $0.notifications.refundPreference = nil }),

        Key(
            section: "Discovery", name: "Mode",
            apply: { configuration, value throws(Problem) in
                guard let mode = DiscoverySettings.Mode(rawValue: value.text) else {
                    throw Problem("\(quote(value.text)) is not a discovery mode; use off, record or deliver")
                }
                configuration.discovery.mode = mode
            },
            reset: { $0.discovery.mode = Configuration().discovery.mode }),
        span("Discovery", "Grace", \.discovery.grace, minimum: .zero),
        Key(
            section: "Discovery", name: "Products",
            apply: { configuration, value throws(Problem) in
                // Shell globs separated by spaces; an empty value admits every product again.
                let words = value.text.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
                guard !words.isEmpty else {
                    configuration.discovery.products = nil
                    return
                }
                var globs: [ShellGlob] = []
                for word in words {
                    do {
                        globs.append(try ShellGlob(word))
                    } catch {
                        throw Problem("\(quote(word)) is not a pattern: it \(error)")
                    }
                }
                configuration.discovery.products = globs
            },
            reset: { $0.discovery.products = nil }),

        ]
        + merchantEndpoint("Delivery", \.delivery)
        + merchantEndpoint("Revocation", \.revocation)
        + [
        span("Retry", "InitialDelay", \.retry.initialDelay, minimum: .milliseconds(1)),
        number("Retry", "Multiplier", \.retry.multiplier, range: 1...100),
        span("Retry", "MaxDelay", \.retry.maxDelay, minimum: .milliseconds(1)),
        Key(
            section: "Retry", name: "Jitter",
            apply: { configuration, value throws(Problem) in
                guard let mode = JitterMode(rawValue: value.text) else {
                    throw Problem("\(quote(value.text)) is not a jitter mode; use full, equal or none")
                }
                configuration.retry.jitter = mode
            },
            reset: { $0.retry.jitter = Configuration().retry.jitter }),
        integer("Retry", "MaxAttempts", \.retry.maxAttempts, range: 1...1_000_000),
        span("Retry", "MaxAge", \.retry.maxAge, minimum: .seconds(1)),

        Key(
            section: "Escalation", name: "Command",
            apply: { configuration, value throws(Problem) in
                let words: [String]
                do {
                    words = try ArgumentSplitter.split(value.text)
                } catch {
                    throw Problem("cannot split the command line: \(error)")
                }
                guard var program = words.first else { throw Problem("the command line is empty") }
                if program.contains("/") && !program.hasPrefix("/") {
                    program = resolve(program, against: value.path)
                }
                configuration.escalation.command = [program] + words.dropFirst()
            },
            reset: { $0.escalation.command = nil }),
        number("Escalation", "CommandRate", \.escalation.commandRate, range: 0.001...1000),
        span("Escalation", "Timeout", \.escalation.timeout, minimum: .milliseconds(10)),

        path("Control", "Socket", \.control.socket),

        span("Daemon", "DrainTimeout", \.daemon.drainTimeout, minimum: .zero),
        optionalPath("Daemon", "MetricsFile", \.daemon.metricsFile),
        optionalText("Daemon", "Node", \.daemon.node, rule: nodeNameRule),
        Key(
            section: "Daemon", name: "Proxy",
            apply: { configuration, value throws(Problem) in
                configuration.daemon.proxy = try checkedProxy(value.text)
            },
            reset: { $0.daemon.proxy = nil }),
        ]
    }

    /// The keys by section and name.
    static func bySection() -> [String: [String: Key]] {
        Dictionary(grouping: all, by: \.section).mapValues { Dictionary(uniqueKeysWithValues: $0.map { ($0.name, $0) }) }
    }

    /// The `Section.Key` names of every known key, in documentation order.
    public static var names: [String] { all.map { "\($0.section).\($0.name)" } }

    // MARK: - Key builders

    /// The keys of a section naming one of the merchant's endpoints (`[Delivery]`,
    /// `[Revocation]`): `URL=`, `TokenCredential=` / `TokenFile=`, `CAFile=`, `Timeout=`, each
    /// with the same grammar in every such section.
    static func merchantEndpoint(_ section: String, _ keyPath: WritableKeyPath<Configuration, MerchantEndpointSettings>) -> [Key] {
        [
            optionalURL(section, "URL", keyPath.appending(path: \.url)),
            credentialName(section, "TokenCredential", keyPath.appending(path: \.token)),
            credentialFile(section, "TokenFile", keyPath.appending(path: \.token)),
            optionalPath(section, "CAFile", keyPath.appending(path: \.caFile)),
            span(section, "Timeout", keyPath.appending(path: \.timeout), minimum: .milliseconds(10)),
        ]
    }

    static func path(_ section: String, _ name: String, _ keyPath: WritableKeyPath<Configuration, String>) -> Key {
        Key(
            section: section, name: name,
            apply: { configuration, value throws(Problem) in
                configuration[keyPath: keyPath] = try checkedPath(value)
            },
            reset: { $0[keyPath: keyPath] = Configuration()[keyPath: keyPath] })
    }

    static func optionalPath(
        _ section: String, _ name: String, _ keyPath: WritableKeyPath<Configuration, String?>
    ) -> Key {
        Key(
            section: section, name: name,
            apply: { configuration, value throws(Problem) in
                configuration[keyPath: keyPath] = try checkedPath(value)
            },
            reset: { $0[keyPath: keyPath] = nil })
    }

    static func checkedPath(_ value: Value) throws(Problem) -> String {
        guard !value.text.contains("\0") else { throw Problem("a path may not contain NUL") }
        return resolve(value.text, against: value.path)
    }

    static func optionalText(
        _ section: String, _ name: String, _ keyPath: WritableKeyPath<Configuration, String?>,
        rule: @escaping (String) -> String?
    ) -> Key {
        Key(
            section: section, name: name,
            apply: { configuration, value throws(Problem) in
                if let problem = rule(value.text) { throw Problem(problem) }
                configuration[keyPath: keyPath] = value.text
            },
            reset: { $0[keyPath: keyPath] = nil })
    }

    static func bool(_ section: String, _ name: String, _ keyPath: WritableKeyPath<Configuration, Bool>) -> Key {
        Key(
            section: section, name: name,
            apply: { configuration, value throws(Problem) in
                switch value.text.lowercased() {
                case "yes", "true", "on", "1": configuration[keyPath: keyPath] = true
                case "no", "false", "off", "0": configuration[keyPath: keyPath] = false
                default: throw Problem("\(quote(value.text)) is not a boolean; use yes or no")
                }
            },
            reset: { $0[keyPath: keyPath] = Configuration()[keyPath: keyPath] })
    }

    static func integer(
        _ section: String, _ name: String, _ keyPath: WritableKeyPath<Configuration, Int>,
        range: ClosedRange<Int>
    ) -> Key {
        Key(
            section: section, name: name,
            apply: { configuration, value throws(Problem) in
                guard let number = Int(value.text) else {
                    throw Problem("\(quote(value.text)) is not a whole number")
                }
                guard range.contains(number) else {
                    throw Problem("\(number) is out of range; use \(range.lowerBound)–\(range.upperBound)")
                }
                configuration[keyPath: keyPath] = number
            },
            reset: { $0[keyPath: keyPath] = Configuration()[keyPath: keyPath] })
    }

    static func number(
        _ section: String, _ name: String, _ keyPath: WritableKeyPath<Configuration, Double>,
        range: ClosedRange<Double>
    ) -> Key {
        Key(
            section: section, name: name,
            apply: { configuration, value throws(Problem) in
                guard let number = parseDecimal(value.text) else {
                    throw Problem("\(quote(value.text)) is not a number")
                }
                guard range.contains(number) else {
                    throw Problem("\(value.text) is out of range; use \(format(range.lowerBound))–\(format(range.upperBound))")
                }
                configuration[keyPath: keyPath] = number
            },
            reset: { $0[keyPath: keyPath] = Configuration()[keyPath: keyPath] })
    }

    static func rate(_ section: String, _ name: String, _ keyPath: WritableKeyPath<Configuration, Double?>) -> Key {
        Key(
            section: section, name: name,
            apply: { configuration, value throws(Problem) in
                if value.text == "infinity" {
                    configuration[keyPath: keyPath] = nil
                    return
                }
                // At least 0.001: the scheduler sleeps 1/rate seconds for a token, and a rate of
                // 1e-20 made that a Duration beyond what Duration holds (a trap, found by the
                // configuration fuzz target).
                guard let number = parseDecimal(value.text), number >= 0.001, number <= 1_000_000 else {
                    throw Problem("\(quote(value.text)) is not a rate; use 0.001–1000000 requests per second (e.g. 50, 0.5) or infinity")
                }
                configuration[keyPath: keyPath] = number
            },
            reset: { $0[keyPath: keyPath] = Configuration()[keyPath: keyPath] })
    }

    static func span(
        _ section: String, _ name: String, _ keyPath: WritableKeyPath<Configuration, Duration>,
        minimum: Duration
    ) -> Key {
        Key(
            section: section, name: name,
            apply: { configuration, value throws(Problem) in
                configuration[keyPath: keyPath] = try parseSpan(value.text, minimum: minimum)
            },
            reset: { $0[keyPath: keyPath] = Configuration()[keyPath: keyPath] })
    }

    static func optionalSpan(
        _ section: String, _ name: String, _ keyPath: WritableKeyPath<Configuration, Duration?>,
        offWord: String, minimum: Duration
    ) -> Key {
        Key(
            section: section, name: name,
            apply: { configuration, value throws(Problem) in
                if value.text == offWord {
                    configuration[keyPath: keyPath] = nil
                } else {
                    configuration[keyPath: keyPath] = try parseSpan(value.text, minimum: minimum, offWord: offWord)
                }
            },
            reset: { $0[keyPath: keyPath] = Configuration()[keyPath: keyPath] })
    }

    static func parseSpan(_ text: String, minimum: Duration, offWord: String? = nil) throws(Problem) -> Duration {
        guard let span = TimeSpan.parse(text) else {
            var message = "\(quote(text)) is not a time span; use \(TimeSpan.acceptedUnitsDescription)"
            if let offWord { message += " or \(offWord)" }
            throw Problem(message)
        }
        guard span >= minimum else {
            throw Problem("\(quote(text)) is too short; the minimum is \(TimeSpan.format(minimum))")
        }
        return span
    }

    static func size(
        _ section: String, _ name: String, _ keyPath: WritableKeyPath<Configuration, Int>, minimum: Int
    ) -> Key {
        Key(
            section: section, name: name,
            apply: { configuration, value throws(Problem) in
                guard let bytes = ByteSize.parse(value.text) else {
                    throw Problem("\(quote(value.text)) is not a size; use \(ByteSize.acceptedSuffixesDescription)")
                }
                guard bytes >= minimum else { throw Problem("\(quote(value.text)) is too small; the minimum is \(minimum) bytes") }
                configuration[keyPath: keyPath] = bytes
            },
            reset: { $0[keyPath: keyPath] = Configuration()[keyPath: keyPath] })
    }

    static func url(_ section: String, _ name: String, _ keyPath: WritableKeyPath<Configuration, URL>) -> Key {
        Key(
            section: section, name: name,
            apply: { configuration, value throws(Problem) in
                configuration[keyPath: keyPath] = try checkedURL(value.text)
            },
            reset: { $0[keyPath: keyPath] = Configuration()[keyPath: keyPath] })
    }

    static func optionalURL(_ section: String, _ name: String, _ keyPath: WritableKeyPath<Configuration, URL?>) -> Key {
        Key(
            section: section, name: name,
            apply: { configuration, value throws(Problem) in
                configuration[keyPath: keyPath] = try checkedURL(value.text)
            },
            reset: { $0[keyPath: keyPath] = nil })
    }

    /// An `https://` URL, or `http://` to a loopback address only (DESIGN §5).
    static func checkedURL(_ text: String) throws(Problem) -> URL {
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), let host = url.host, !host.isEmpty else {
            throw Problem("\(quote(text)) is not an absolute URL")
        }
        guard url.user == nil, url.password == nil else {
            throw Problem("credentials may not be written into a URL; use a credential file")
        }
        switch scheme {
        case "https":
            return url
        case "http":
            guard LoopbackAddress.isLoopback(host: host) else {
                throw Problem("http:// is allowed only to loopback addresses (127.0.0.1, ::1, localhost); use https://")
            }
            return url
        default:
            throw Problem("\(quote(text)) must be an https:// URL")
        }
    }

    /// A proxy's URL: `http://`, `https://`, `socks5://` or `socks5h://`, a host, no credentials.
    static func checkedProxy(_ text: String) throws(Problem) -> URL {
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), let host = url.host, !host.isEmpty else {
            throw Problem("\(quote(text)) is not a proxy URL (e.g. http://proxy.example:3128)")
        }
        guard ["http", "https", "socks5", "socks5h"].contains(scheme) else {
            throw Problem("\(quote(text)) is not a proxy URL: use http://, https://, socks5:// or socks5h://")
        }
        guard url.user == nil, url.password == nil else {
            throw Problem("credentials may not be written into a URL")
        }
        guard url.path.isEmpty || url.path == "/", url.query == nil, url.fragment == nil else {
            throw Problem("\(quote(text)) is not a proxy URL: give only the scheme, host and port")
        }
        return url
    }

    static func credentialName(
        _ section: String, _ name: String, _ keyPath: WritableKeyPath<Configuration, CredentialSource?>
    ) -> Key {
        Key(
            section: section, name: name,
            apply: { configuration, value throws(Problem) in
                guard !value.text.contains("/"), value.text != ".", value.text != ".." else {
                    throw Problem("\(quote(value.text)) is not a credential name (a file name in $CREDENTIALS_DIRECTORY, without '/')")
                }
                configuration[keyPath: keyPath] = .credential(value.text)
            },
            reset: { $0[keyPath: keyPath] = nil })
    }

    static func credentialFile(
        _ section: String, _ name: String, _ keyPath: WritableKeyPath<Configuration, CredentialSource?>
    ) -> Key {
        Key(
            section: section, name: name,
            apply: { configuration, value throws(Problem) in
                configuration[keyPath: keyPath] = .file(try checkedPath(value))
            },
            reset: { $0[keyPath: keyPath] = nil })
    }

    // MARK: - Value helpers

    static func bundleIDRule(_ text: String) -> String? {
        let allowed = text.unicodeScalars.allSatisfy {
            ("A"..."Z").contains($0) || ("a"..."z").contains($0) || ("0"..."9").contains($0) || $0 == "." || $0 == "-"
        }
        return allowed && text.count <= 155 ? nil : "\(quote(text)) is not a bundle id (letters, digits, '.' and '-')"
    }

    /// A node name: what `reconcilectl status` lists and leases are owned by.
    /// A Pub/Sub subscription's full name, as the Cloud console shows it.
    static func subscriptionRule(_ text: String) -> String? {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.~+%")
        guard parts.count == 4, parts[0] == "projects", parts[2] == "subscriptions", !parts[1].isEmpty, !parts[3].isEmpty,
            parts[1].allSatisfy(allowed.contains), parts[3].allSatisfy(allowed.contains)
        else {
            return "\(quote(text)) is not a subscription name; write projects/PROJECT/subscriptions/SUBSCRIPTION"
        }
        return nil
    }

    static func nodeNameRule(_ text: String) -> String? {
        let allowed = text.unicodeScalars.allSatisfy {
            ("A"..."Z").contains($0) || ("a"..."z").contains($0) || ("0"..."9").contains($0) || $0 == "." || $0 == "-" || $0 == "_" || $0 == "@"
        }
        return allowed && !text.isEmpty && text.utf8.count <= 100
            ? nil : "\(quote(text)) is not a node name (1–100 of letters, digits, '.', '-', '_' and '@')"
    }

    static func issuerIDRule(_ text: String) -> String? {
        UUID(uuidString: text) == nil ? "\(quote(text)) is not an issuer id (a UUID, from App Store Connect > Users and Access > Integrations)" : nil
    }

    static func keyIDRule(_ text: String) -> String? {
        let allowed = !text.isEmpty && text.count <= 64 && text.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) }
        return allowed ? nil : "\(quote(text)) is not a key id (letters and digits, as App Store Connect shows it, e.g. 2X9R4HXF34)"
    }

    static func appAppleIDRule(_ text: String) -> String? {
        let allowed = !text.isEmpty && text.count <= 20 && text.allSatisfy { $0.isASCII && $0.isNumber }
        return allowed ? nil : "\(quote(text)) is not an Apple id (digits: App Store Connect > App Information > Apple ID)"
    }

    static func parseDecimal(_ text: String) -> Double? {
        guard !text.isEmpty, text.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == ".") }) else { return nil }
        return Double(text)
    }

    static func format(_ number: Double) -> String {
        number == number.rounded() ? String(Int(number)) : String(number)
    }

    static func quote(_ text: String) -> String {
        INIParser.quote(text)
    }

    /// Resolves `path` against the directory of the configuration file `file`, and tidies `.`
    /// and `..` components.
    public static func resolve(_ path: String, against file: String) -> String {
        let joined: String
        if path.hasPrefix("/") {
            joined = path
        } else {
            let directory = file.contains("/") ? String(file[..<file.lastIndex(of: "/")!]) : "."
            joined = (directory.isEmpty ? "/" : directory) + "/" + path
        }
        var components: [Substring] = []
        for component in joined.split(separator: "/", omittingEmptySubsequences: true) {
            switch component {
            case ".": continue
            case "..": if !components.isEmpty && components.last != ".." { components.removeLast() } else if !joined.hasPrefix("/") { components.append(component) }
            default: components.append(component)
            }
        }
        let body = components.joined(separator: "/")
        return joined.hasPrefix("/") ? "/" + body : body
    }
}
