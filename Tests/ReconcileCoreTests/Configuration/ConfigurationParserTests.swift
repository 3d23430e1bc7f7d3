import Foundation
import Testing
@testable import ReconcileCore
import ReconcileFoundation

@Suite("Configuration parser")
struct ConfigurationParserTests {
    static let path = "/etc/reconciled/reconciled.conf"
    static let minimalApple = """
        [Verifier]
        Kind=apple
        URL=https://buy.itunes.apple.com/verifyReceipt
        BundleID=com.example.app
        SharedSecretCredential=shared-secret
        """

    func parse(_ text: String, dropIns: [String] = []) throws(ConfigurationError) -> Configuration {
        var sources = [ConfigurationSource(path: Self.path, text: text)]
        for (index, dropIn) in dropIns.enumerated() {
            sources.append(ConfigurationSource(path: "\(Self.path).d/\(index)0-local.conf", text: dropIn))
        }
        return try ConfigurationParser.parse(sources)
    }

    func problems(_ text: String, dropIns: [String] = []) -> [String] {
        do {
            _ = try parse(text, dropIns: dropIns)
            return []
        } catch {
            return error.problems.map(\.description)
        }
    }

    @Test("defaults of every key, as documented")
    func defaults() throws {
        let configuration = try parse(Self.minimalApple)
        #expect(configuration.spool.directory == "/var/spool/reconciled")
        #expect(configuration.spool.maxFileSize == 1_048_576)
        #expect(configuration.spool.rescanInterval == nil)
        #expect(configuration.state.database == "/var/lib/reconciled/orders.db")
        #expect(configuration.state.keepFinished == .seconds(90 * 86_400))
        #expect(configuration.verifier.kind == .apple)
        #expect(configuration.verifier.effectiveSandboxURL?.absoluteString == "https://sandbox.itunes.apple.com/verifyReceipt")
        #expect(configuration.verifier.allowSandbox == false)
        #expect(configuration.verifier.sharedSecret == .credential("shared-secret"))
        #expect(configuration.verifier.timeout == .seconds(10))
        #expect(configuration.verifier.maxInFlight == 16)
        #expect(configuration.verifier.maxRate == 50)
        #expect(configuration.verifier.burst == 10)
        #expect(configuration.verifier.circuitThreshold == 10)
        #expect(configuration.verifier.circuitCooldown == .seconds(5))
        #expect(configuration.verifier.circuitMaxCooldown == .seconds(300))
        #expect(configuration.delivery.url == nil)
        #expect(configuration.delivery.timeout == .seconds(10))
        #expect(configuration.retry.initialDelay == .seconds(30))
        #expect(configuration.retry.multiplier == 2)
        #expect(configuration.retry.maxDelay == .seconds(3600))
        #expect(configuration.retry.jitter == .full)
        #expect(configuration.retry.maxAttempts == 20)
        #expect(configuration.retry.maxAge == .seconds(3 * 86_400))
        #expect(configuration.escalation.command == nil)
        #expect(configuration.escalation.commandRate == 1)
        #expect(configuration.escalation.timeout == .seconds(30))
        #expect(configuration.control.socket == "/run/reconciled/control.sock")
        #expect(configuration.daemon.drainTimeout == .seconds(15))
        #expect(configuration.daemon.metricsFile == nil)
        #expect(configuration.sourcePaths == [Self.path])
    }

    @Test("the DESIGN example parses to its values")
    func designExample() throws {
        let configuration = try parse(
            """
            [Spool]
            Directory=/var/spool/reconciled
            MaxFileSize=1M
            # RescanInterval=1min   (only for filesystems without inotify)

            [State]
            Database=/var/lib/reconciled/orders.db
            KeepFinished=90d

            [Verifier]
            # apple | http | appstore
            Kind=apple
            URL=https://buy.itunes.apple.com/verifyReceipt
            SandboxURL=https://sandbox.itunes.apple.com/verifyReceipt
            BundleID=com.example.app
            AllowSandbox=no
            SharedSecretCredential=shared-secret
            Timeout=10s
            MaxInFlight=16
            MaxRate=50
            Burst=10
            CircuitThreshold=10
            CircuitCooldown=5s
            CircuitMaxCooldown=5min

            [Delivery]
            # URL=https://backend.example/iap/deliver
            Timeout=10s

            [Retry]
            InitialDelay=30s
            Multiplier=2
            MaxDelay=1h
            Jitter=full
            MaxAttempts=20
            MaxAge=3d

            [Escalation]
            # Command=/usr/local/bin/page-oncall --service reconciled
            CommandRate=1
            Timeout=30s

            [Control]
            Socket=/run/reconciled/control.sock

            [Daemon]
            DrainTimeout=15s
            """)
        var expected = try parse(Self.minimalApple)
        expected.verifier.sandboxURL = URL(string: "https://sandbox.itunes.apple.com/verifyReceipt")
        #expect(configuration == expected)
    }

    @Test("every value kind")
    func valueKinds() throws {
        let configuration = try parse(
            """
            [Spool]
            Directory=spool
            MaxFileSize=512K
            RescanInterval=1min 30s
            [State]
            Database=../state/orders.db
            KeepFinished=infinity
            [Verifier]
            Kind=http
            URL=http://127.0.0.1:8080/verify
            TokenFile=secrets/token
            CAFile=/etc/ssl/ca.pem
            AllowSandbox=yes
            Timeout=500ms
            MaxRate=infinity
            MaxInFlight=64
            [Retry]
            Multiplier=1.5
            Jitter=equal
            [Escalation]
            Command=bin/page "on call" --why='two words' a\\ b
            CommandRate=0.5
            [Daemon]
            MetricsFile=/var/lib/prometheus/reconciled.prom
            """)
        #expect(configuration.spool.directory == "/etc/reconciled/spool")
        #expect(configuration.spool.maxFileSize == 512 * 1024)
        #expect(configuration.spool.rescanInterval == .seconds(90))
        #expect(configuration.state.database == "/etc/state/orders.db")
        #expect(configuration.state.keepFinished == nil)
        #expect(configuration.verifier.kind == .http)
        #expect(configuration.verifier.url.absoluteString == "http://127.0.0.1:8080/verify")
        #expect(configuration.verifier.token == .file("/etc/reconciled/secrets/token"))
        #expect(configuration.verifier.caFile == "/etc/ssl/ca.pem")
        #expect(configuration.verifier.allowSandbox)
        #expect(configuration.verifier.timeout == .milliseconds(500))
        #expect(configuration.verifier.maxRate == nil)
        #expect(configuration.verifier.maxInFlight == 64)
        #expect(configuration.retry.multiplier == 1.5)
        #expect(configuration.retry.jitter == .equal)
        #expect(configuration.escalation.command == ["/etc/reconciled/bin/page", "on call", "--why=two words", "a b"])
        #expect(configuration.escalation.commandRate == 0.5)
        #expect(configuration.daemon.metricsFile == "/var/lib/prometheus/reconciled.prom")
    }

    @Test("[Daemon] Proxy=: http, https or SOCKS 5, a host, nothing else; none by default")
    func proxy() throws {
        #expect(try parse(Self.minimalApple).daemon.proxy == nil)
        #expect(try parse(Self.minimalApple + "\n[Daemon]\nProxy=http://proxy.example:3128").daemon.proxy?.absoluteString == "http://proxy.example:3128")
        #expect(try parse(Self.minimalApple + "\n[Daemon]\nProxy=socks5h://10.0.0.1:1080/").daemon.proxy?.host == "10.0.0.1")
        #expect(problems(Self.minimalApple + "\n[Daemon]\nProxy=ftp://proxy.example") == [
            "\(Self.path):7: [Daemon] Proxy=: \"ftp://proxy.example\" is not a proxy URL: use http://, https://, socks5:// or socks5h://"
        ])
        #expect(problems(Self.minimalApple + "\n[Daemon]\nProxy=http://user:pw@proxy.example:3128") == [
            "\(Self.path):7: [Daemon] Proxy=: credentials may not be written into a URL"
        ])
        #expect(problems(Self.minimalApple + "\n[Daemon]\nProxy=http://proxy.example:3128/path") == [
            "\(Self.path):7: [Daemon] Proxy=: \"http://proxy.example:3128/path\" is not a proxy URL: give only the scheme, host and port"
        ])
        #expect(problems(Self.minimalApple + "\n[Daemon]\nProxy=proxy.example:3128").first?.contains("is not a proxy URL") == true)
    }

    @Test("a problem found after parsing is placed at the line of its key, the last that set it; a default's in the main file")
    func keyLocations() throws {
        let configuration = try parse(Self.minimalApple + "\nCAFile=ca.pem", dropIns: ["[Verifier]\n\nCAFile=/etc/ssl/other.pem\n"])
        #expect(configuration.problem("Verifier.CAFile", "cannot read it").description == "\(Self.path).d/00-local.conf:3: [Verifier] CAFile=: cannot read it")
        #expect(configuration.problem("Verifier.SharedSecretCredential", "x").description == "\(Self.path):5: [Verifier] SharedSecretCredential=: x")
        #expect(configuration.problem("Verifier.RootCertificates", "y").description == "\(Self.path): [Verifier] RootCertificates=: y")
        // Where a key was written is not part of what the configuration means.
        #expect(try parse(Self.minimalApple + "\nCAFile=/etc/ssl/other.pem") == (try parse(Self.minimalApple + "\n\n\nCAFile=/etc/ssl/other.pem")))
    }

    @Test("relative paths resolve against the file that names them")
    func relativePathsPerFile() throws {
        let configuration = try parse(Self.minimalApple + "\n[Spool]\nDirectory=spool\n", dropIns: ["[State]\nDatabase=db/orders.db\n"])
        #expect(configuration.spool.directory == "/etc/reconciled/spool")
        #expect(configuration.state.database == "/etc/reconciled/reconciled.conf.d/db/orders.db")
    }

    @Test("drop-ins override in order, and an empty value resets to the default")
    func dropIns() throws {
        let configuration = try parse(
            Self.minimalApple + "\n[Retry]\nMaxAttempts=5\nJitter=none\n",
            dropIns: ["[Retry]\nMaxAttempts=7\n", "[Retry]\nMaxAttempts=9\nJitter=\n"])
        #expect(configuration.retry.maxAttempts == 9)
        #expect(configuration.retry.jitter == .full)
        #expect(configuration.sourcePaths.count == 3)
    }

    @Test("comments, blank lines, CRLF and continuation lines")
    func syntax() throws {
        let configuration = try parse(
            "# comment\r\n; also a comment\r\n\r\n  [Verifier]  \r\nKind = apple\r\nURL=https://buy.itunes.apple.com/verifyReceipt\r\n"
                + "BundleID=com.example.app\r\nSharedSecretFile=/etc/secret\r\n[Escalation]\r\nCommand=/bin/page \\\r\n  --service reconciled\r\n")
        #expect(configuration.verifier.kind == .apple)
        #expect(configuration.verifier.sharedSecret == .file("/etc/secret"))
        #expect(configuration.escalation.command == ["/bin/page", "--service", "reconciled"])
    }

    @Test(
        "a bad value names file, line and key",
        arguments: [
            ("[Spool]\nMaxFileSize=huge", "2: [Spool] MaxFileSize=: \"huge\" is not a size; use a number of bytes with an optional B, K, M, G, T or P suffix (e.g. 1M)"),
            ("[Spool]\nMaxFileSize=12", "2: [Spool] MaxFileSize=: \"12\" is too small; the minimum is 64 bytes"),
            ("[Spool]\nRescanInterval=often", "2: [Spool] RescanInterval=: \"often\" is not a time span; use us, ms, s, min, h, d, w, M, y (e.g. 500ms, 30s, 5min, 1h 30min, 3d) or off"),
            ("[Verifier]\nTimeout=10x", "2: [Verifier] Timeout=: \"10x\" is not a time span; use us, ms, s, min, h, d, w, M, y (e.g. 500ms, 30s, 5min, 1h 30min, 3d)"),
            ("[Verifier]\nTimeout=1ms", "2: [Verifier] Timeout=: \"1ms\" is too short; the minimum is 10ms"),
            ("[Verifier]\nKind=google", "2: [Verifier] Kind=: \"google\" is not a verifier kind; use apple, http or appstore"),
            ("[Verifier]\nAllowSandbox=maybe", "2: [Verifier] AllowSandbox=: \"maybe\" is not a boolean; use yes or no"),
            ("[Verifier]\nMaxInFlight=0", "2: [Verifier] MaxInFlight=: 0 is out of range; use 1–4096"),
            ("[Verifier]\nMaxInFlight=many", "2: [Verifier] MaxInFlight=: \"many\" is not a whole number"),
            ("[Verifier]\nMaxRate=0", "2: [Verifier] MaxRate=: \"0\" is not a rate; use 0.001–1000000 requests per second (e.g. 50, 0.5) or infinity"),
            ("[Verifier]\nMaxRate=0.00000000000000000001",
             "2: [Verifier] MaxRate=: \"0.00000000000000000001\" is not a rate; use 0.001–1000000 requests per second (e.g. 50, 0.5) or infinity"),
            ("[Verifier]\nURL=ftp://example.com/", "2: [Verifier] URL=: \"ftp://example.com/\" must be an https:// URL"),
            ("[Verifier]\nURL=not a url", "2: [Verifier] URL=: \"not a url\" is not an absolute URL"),
            ("[Verifier]\nURL=http://example.com/verify", "2: [Verifier] URL=: http:// is allowed only to loopback addresses (127.0.0.1, ::1, localhost); use https://"),
            ("[Verifier]\nURL=https://user:pw@example.com/", "2: [Verifier] URL=: credentials may not be written into a URL; use a credential file"),
            ("[Verifier]\nBundleID=com example", "2: [Verifier] BundleID=: \"com example\" is not a bundle id (letters, digits, '.' and '-')"),
            ("[Verifier]\nSharedSecretCredential=../x", "2: [Verifier] SharedSecretCredential=: \"../x\" is not a credential name (a file name in $CREDENTIALS_DIRECTORY, without '/')"),
            ("[Retry]\nMultiplier=0.5", "2: [Retry] Multiplier=: 0.5 is out of range; use 1–100"),
            ("[Retry]\nJitter=some", "2: [Retry] Jitter=: \"some\" is not a jitter mode; use full, equal or none"),
            ("[Escalation]\nCommand=/bin/page \"open", "2: [Escalation] Command=: cannot split the command line: a quote is not closed"),
            ("[Discovery]\nMode=always", "2: [Discovery] Mode=: \"always\" is not a discovery mode; use off, record or deliver"),
            ("[Discovery]\nGrace=soon", "2: [Discovery] Grace=: \"soon\" is not a time span; use us, ms, s, min, h, d, w, M, y (e.g. 500ms, 30s, 5min, 1h 30min, 3d)"),
            ("[Discovery]\nProducts=gems.* [coins", "2: [Discovery] Products=: \"[coins\" is not a pattern: it has a [ without its ]"),
            ("[Bogus]\nKey=1", "1: [Bogus]: unknown section; known sections are [Spool], [State], [Verifier], [GooglePlay], [Notifications], [Discovery], [Delivery], [Revocation], [Retry], [Escalation], [Control], [Daemon]"),
            ("[Retry]\nMaxAttempt=3", "2: [Retry] MaxAttempt=: unknown key; did you mean MaxAttempts=?"),
            ("[Verifier\nKind=apple", "1: malformed section header \"[Verifier\"; expected [Section]"),
            ("[Verifier]\njust words", "2: [Verifier]: expected Key=Value, a [Section] header or a comment, found \"just words\""),
        ])
    func badValue(text: String, expected: String) {
        let found = problems(Self.minimalApple + "\n" + text)
        let offset = Self.minimalApple.split(separator: "\n").count
        // Re-number: the test's lines come after the minimal file.
        let parts = expected.split(separator: ":", maxSplits: 1)
        let line = Int(parts[0])! + offset
        #expect(found.contains("\(Self.path):\(line):\(parts[1])"), "\(found)")
    }

    @Test("[Discovery]: the defaults (record, 15min, every product); each key read; an empty Products= admits every product again")
    func discovery() throws {
        let defaults = try parse(Self.minimalApple)
        #expect(defaults.discovery == DiscoverySettings(mode: .record, grace: .seconds(900), products: nil))
        // Kind=apple cannot verify the orders Mode=deliver makes: refused, naming the key.
        #expect(problems(Self.minimalApple + "\n[Discovery]\nMode=deliver\n").contains { $0.contains("[Discovery] Mode=: deliver makes orders") })
        let set = try parse(Self.minimalAppStore + "\n[Discovery]\nMode=deliver\nGrace=2min\nProducts=gems.* coins_??\n")
        #expect(set.discovery.mode == .deliver && set.discovery.grace == .seconds(120))
        #expect(set.discovery.admits("gems.100") && set.discovery.admits("coins_10") && !set.discovery.admits("coins_100"))
        let reset = try parse(Self.minimalApple + "\n[Discovery]\nProducts=gems.*\nProducts=\nMode=off\nGrace=0\n")
        #expect(reset.discovery == DiscoverySettings(mode: .off, grace: .zero, products: nil))
    }

    @Test("an assignment before any section")
    func beforeSection() {
        #expect(problems("Kind=apple\n" + Self.minimalApple).contains("\(Self.path):1: Kind= appears before any [Section] header"))
    }

    @Test("[GooglePlay] PackageName= takes one package or several separated by spaces (the first for orders naming none); each is checked, a repeat refused, and the verifiers carry them (issue 23 item 2)")
    func playPackageNames() throws {
        let play = "[GooglePlay]\nServiceAccountFile=/etc/reconciled/play.json\n"
        let one = try parse(play + "PackageName=com.example.app")
        #expect(one.googlePlay.packageNames == ["com.example.app"] && one.googlePlay.packageName == "com.example.app")
        #expect(one.verifiers.playPackages == ["com.example.app"])
        let several = try parse(play + "PackageName=com.example.app  com.example.lite\tcom.example.pro")
        #expect(several.googlePlay.packageNames == ["com.example.app", "com.example.lite", "com.example.pro"])
        #expect(several.googlePlay.packageName == "com.example.app")
        #expect(several.verifiers.playPackages == several.googlePlay.packageNames)
        #expect(problems(play + "PackageName=com.example.app com..lite") == [
            "\(Self.path):3: [GooglePlay] PackageName=: \"com..lite\" is not an Android package name: segment 2 is empty"
        ])
        #expect(problems(play + "PackageName=com.example.app com.example.app") == [
            "\(Self.path):3: [GooglePlay] PackageName=: names \"com.example.app\" twice"
        ])
        // A drop-in replaces the list; an empty value resets it (then it is missing).
        #expect(try parse(play + "PackageName=com.example.app", dropIns: ["[GooglePlay]\nPackageName=com.example.lite"]).googlePlay.packageNames == ["com.example.lite"])
        #expect(problems(play + "PackageName=com.example.app", dropIns: ["[GooglePlay]\nPackageName="]).contains {
            $0.contains("[GooglePlay] PackageName=: required for [GooglePlay]")
        })
        // Without [GooglePlay], nothing is checked at ingest (Kind=http's merchant decides).
        #expect(try parse(Self.minimalApple).verifiers.playPackages.isEmpty)
    }

    @Test("[GooglePlay] Subscription= names a Pub/Sub subscription in full; PubSubURL= only with it (DESIGN §5b)")
    func pubSubSubscription() throws {
        let play = "[GooglePlay]\nServiceAccountFile=/etc/reconciled/play.json\nPackageName=com.example.app\n"
        let none = try parse(play)
        #expect(none.googlePlay.subscription == nil && none.googlePlay.pubSubURL.absoluteString == "https://pubsub.googleapis.com")
        let set = try parse(play + "Subscription=projects/my-project/subscriptions/play-rtdn\nPubSubURL=https://pubsub.example.net")
        #expect(set.googlePlay.subscription == "projects/my-project/subscriptions/play-rtdn")
        #expect(set.googlePlay.pubSubURL.absoluteString == "https://pubsub.example.net")
        for bad in ["play-rtdn", "projects/p/topics/t", "projects//subscriptions/s", "projects/p/subscriptions/s/x", "projects/p q/subscriptions/s"] {
            #expect(problems(play + "Subscription=\(bad)").contains {
                $0.contains("[GooglePlay] Subscription=: \"\(bad)\" is not a subscription name; write projects/PROJECT/subscriptions/SUBSCRIPTION")
            }, "\(bad)")
        }
        #expect(problems(play + "PubSubURL=https://pubsub.example.net").contains {
            $0.contains("[GooglePlay] PubSubURL=: used only with Subscription=")
        })
    }

    @Test("missing required keys are named")
    func requiredKeys() {
        #expect(problems("") == [
            "\(Self.path): [Verifier] Kind=: required key is missing (apple, http or appstore), or configure [GooglePlay] for a Google Play-only daemon",
            "\(Self.path): [Verifier] URL=: required key is missing",
        ])
        #expect(problems("[Verifier]\nKind=apple\nURL=https://buy.itunes.apple.com/verifyReceipt") == [
            "\(Self.path): [Verifier] BundleID=: required for Kind=apple (the app's bundle id)",
            "\(Self.path): [Verifier] SharedSecretCredential=: Kind=apple needs the app's shared secret: set SharedSecretCredential= or SharedSecretFile=",
        ])
        #expect(problems("[Verifier]\nKind=http\nURL=https://merchant.example/verify").isEmpty)
    }

    @Test("rules between keys")
    func crossChecks() {
        #expect(problems(Self.minimalApple + "\nSharedSecretFile=/etc/secret").contains(
            "\(Self.path):6: [Verifier] SharedSecretFile=: set either SharedSecretCredential= or SharedSecretFile=, not both"))
        #expect(problems(Self.minimalApple + "\nCircuitCooldown=10min").contains(
            "\(Self.path):6: [Verifier] CircuitCooldown=: must not be longer than CircuitMaxCooldown= (5min)"))
        #expect(problems(Self.minimalApple + "\n[Retry]\nInitialDelay=2h").contains(
            "\(Self.path):7: [Retry] InitialDelay=: must not be longer than MaxDelay= (1h)"))
        #expect(problems("[Verifier]\nKind=http\nURL=https://m.example/v\nSharedSecretCredential=s").contains(
            "\(Self.path):4: [Verifier] SharedSecretCredential=: a shared secret is used only with Kind=apple"))
        #expect(problems("[Verifier]\nKind=http\nURL=https://m.example/v\n[Delivery]\nURL=https://m.example/d").contains(
            "\(Self.path):5: [Delivery] URL=: delivery is used with Kind=apple, Kind=appstore and [GooglePlay], not Kind=http alone: the merchant endpoint grants in the same step"))
        #expect(problems(Self.minimalApple + "\nTokenCredential=t").contains(
            "\(Self.path):6: [Verifier] TokenCredential=: a bearer token is used only with Kind=http"))
        #expect(problems(Self.minimalApple + "\nIssuerID=57246542-96fe-1a63-e053-0824d011072a").contains(
            "\(Self.path):6: [Verifier] IssuerID=: used only with Kind=appstore"))
        // Root certificates verify App Store notifications too, whatever the Kind=.
        #expect(problems(Self.minimalApple + "\nRootCertificates=/etc/reconciled/root.pem").isEmpty)
    }

    static let minimalAppStore = """
        [Verifier]
        Kind=appstore
        BundleID=com.example.app
        IssuerID=57246542-96fe-1a63-e053-0824d011072a
        KeyID=2X9R4HXF34
        PrivateKeyCredential=appstore-key
        AppAppleID=1234567890
        """

    @Test("a shared store's keys: only with a postgresql:// Database=; LeaseTime= at least twice the longest Timeout= of the sections configured")
    func sharedStoreKeys() throws {
        let shared = Self.minimalApple + "\nTimeout=5s\n[State]\nDatabase=postgresql://reconciled@db.example/reconcile\nPasswordFile=/etc/reconciled/pg\n"
        let configuration = try parse(shared + "LeaseTime=10s\n")
        #expect(configuration.state.isShared && configuration.state.leaseTime == .seconds(10))
        // [Delivery] and [GooglePlay] count only when configured (their defaults are 10 s).
        #expect(problems(shared + "LeaseTime=9s\n") == [
            "\(Self.path):10: [State] LeaseTime=: must be at least twice [Verifier] Timeout= (5s): an attempt renews its lease at half of it",
        ])
        #expect(problems(shared + "LeaseTime=10s\n[Delivery]\nURL=https://shop.example/deliver\nTokenFile=/etc/reconciled/token\nTimeout=8s\n") == [
            "\(Self.path):10: [State] LeaseTime=: must be at least twice [Delivery] Timeout= (8s): an attempt renews its lease at half of it",
        ])
        let sqlite = Self.minimalApple + "\n[State]\nDatabase=/var/lib/reconciled/orders.db\nPasswordFile=/etc/reconciled/pg\nLeaseTime=1min\n"
        #expect(problems(sqlite) == [
            "\(Self.path):8: [State] PasswordFile=: used only with a PostgreSQL store (Database=postgresql://…)",
            "\(Self.path):9: [State] LeaseTime=: used only with a PostgreSQL store (Database=postgresql://…)",
        ])
    }

    @Test("Kind=appstore: Apple's hosts and root by default, a tenth of MaxRate for the sandbox")
    func appStoreDefaults() throws {
        let configuration = try parse(Self.minimalAppStore)
        let verifier = configuration.verifier
        #expect(verifier.kind == .appstore)
        #expect(verifier.url.absoluteString == "https://api.storekit.apple.com")
        #expect(verifier.effectiveSandboxURL?.absoluteString == "https://api.storekit-sandbox.apple.com")
        #expect(verifier.rootCertificates == ["/etc/reconciled/apple-root-ca-g3.pem"])
        #expect(verifier.privateKey == .credential("appstore-key"))
        #expect(verifier.issuerID == "57246542-96fe-1a63-e053-0824d011072a" && verifier.keyID == "2X9R4HXF34")
        #expect(verifier.appAppleID == "1234567890")
        #expect(verifier.maxRate == 50 && verifier.sandboxRateFactor == 0.1)
        let local = try parse(Self.minimalAppStore + "\nURL=http://127.0.0.1:8080\nSandboxURL=http://127.0.0.1:8081\nRootCertificates=a.pem /x/b.der")
        #expect(local.verifier.url.absoluteString == "http://127.0.0.1:8080")
        #expect(local.verifier.rootCertificates == ["/etc/reconciled/a.pem", "/x/b.der"])
    }

    @Test("Kind=appstore: every required key named when missing; others' secrets refused")
    func appStoreRequired() {
        let found = problems("[Verifier]\nKind=appstore")
        for key in ["BundleID", "IssuerID", "KeyID", "PrivateKeyCredential", "AppAppleID"] {
            #expect(found.contains { $0.contains("[Verifier] \(key)=:") }, "\(key) not named in \(found)")
        }
        #expect(!found.contains { $0.contains("[Verifier] URL=") })
        #expect(problems(Self.minimalAppStore + "\nSharedSecretCredential=s").contains(
            "\(Self.path):8: [Verifier] SharedSecretCredential=: a shared secret is used only with Kind=apple"))
        #expect(problems(Self.minimalAppStore + "\nPrivateKeyFile=/k.p8").contains(
            "\(Self.path):8: [Verifier] PrivateKeyFile=: set either PrivateKeyCredential= or PrivateKeyFile=, not both"))
    }

    @Test("Kind=appstore: malformed ids are refused by name", arguments: [
        ("IssuerID=not-a-uuid", "is not an issuer id"),
        ("KeyID=ab/cd", "is not a key id"),
        ("AppAppleID=12a", "is not an Apple id"),
        ("PrivateKeyCredential=../key", "is not a credential name"),
    ])
    func appStoreValues(_ line: String, _ message: String) {
        let found = problems(Self.minimalAppStore + "\n" + line)
        #expect(found.contains { $0.contains(message) }, "\(found)")
    }

    @Test("reports every problem, not just the first")
    func allProblems() {
        #expect(problems("[Verifier]\nTimeout=x\nMaxInFlight=y\n[Nope]\n").count == 3)
    }

    @Test("restart-only keys")
    func restartOnly() throws {
        let old = try parse(Self.minimalApple)
        var new = old
        new.retry.maxAttempts = 3
        #expect(RestartOnlyKeys.changed(from: old, to: new).isEmpty)
        new.spool.directory = "/elsewhere"
        new.control.socket = "/run/x.sock"
        #expect(RestartOnlyKeys.changed(from: old, to: new) == ["[Spool] Directory=", "[Control] Socket="])
    }

    @Test("path resolution tidies . and ..")
    func resolve() {
        #expect(ConfigurationKeys.resolve("a/./b/../c", against: "/etc/x/r.conf") == "/etc/x/a/c")
        #expect(ConfigurationKeys.resolve("../../../../x", against: "/etc/r.conf") == "/x")
        #expect(ConfigurationKeys.resolve("/abs//path/", against: "/etc/r.conf") == "/abs/path")
    }
}
