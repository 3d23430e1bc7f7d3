import Foundation
import Glibc
import ReconcileCore
import Testing
import TestSupport
import ReconcileFoundation

/// `reconcilectl check-config` finds everything `reconciled` refuses to start with (DESIGN §10):
/// the files a configuration names — secrets, the In-App Purchase key, `CAFile=` — are read by
/// the same code in both, and each problem is named with the file, line and key that name it.
@Suite("End to end: check-config refuses what the daemon refuses", .serialized)
struct CheckConfigEndToEndTests {
    /// One configuration the daemon must refuse: its `[Verifier]`/`[Delivery]` text and the
    /// problem both must name (after `<config path>:<line>: `).
    struct Case: Sendable, CustomStringConvertible {
        var name: String
        var sections: @Sendable (TemporaryDirectory) -> String
        /// The 1-based line of the key in the written file (the harness writes six lines first).
        var line: Int
        var problem: @Sendable (TemporaryDirectory) -> String
        var description: String { name }
    }

    static let cases: [Case] = [
        Case(
            name: "SharedSecretFile= missing",
            sections: { _ in "[Verifier]\nKind=apple\nURL=https://buy.itunes.apple.com/verifyReceipt\nBundleID=com.example.app\nSharedSecretFile=no-secret" },
            line: 11, problem: { "[Verifier] SharedSecretFile=: cannot read \($0.file("no-secret")): No such file or directory" }),
        Case(
            name: "TokenFile= missing",
            sections: { _ in "[Verifier]\nKind=http\nURL=https://merchant.example/verify\nTokenFile=no-token" },
            line: 10, problem: { "[Verifier] TokenFile=: cannot read \($0.file("no-token")): No such file or directory" }),
        Case(
            name: "PrivateKeyFile= missing",
            sections: { _ in
                """
                [Verifier]
                Kind=appstore
                BundleID=com.example.app
                IssuerID=57246542-96fe-1a63-e053-0824d011072a
                KeyID=TESTKEY123
                AppAppleID=1234567890
                RootCertificates=\(Fixtures.repositoryRoot)/etc/apple-root-ca-g3.pem
                PrivateKeyFile=no-key.p8
                """
            },
            line: 14, problem: { "[Verifier] PrivateKeyFile=: cannot read \($0.file("no-key.p8")): No such file or directory" }),
        Case(
            name: "CAFile= missing",
            sections: { _ in "[Verifier]\nKind=http\nURL=https://merchant.example/verify\nCAFile=no-ca.pem" },
            line: 10, problem: { "[Verifier] CAFile=: cannot read \($0.file("no-ca.pem")): No such file or directory" }),
        Case(
            name: "[Delivery] CAFile= not PEM",
            sections: { directory in
                directory.write("secret", "s3cret\n")
                directory.write("ca.der", bytes: [0x30, 0x82, 0x01, 0x0A, 0x02, 0x82])
                return "[Verifier]\nKind=apple\nURL=https://buy.itunes.apple.com/verifyReceipt\nBundleID=com.example.app\nSharedSecretFile=secret\n[Delivery]\nURL=https://backend.example/deliver\nCAFile=ca.der"
            },
            line: 14,
            problem: {
                "[Delivery] CAFile=: \($0.file("ca.der")) holds no PEM certificate (-----BEGIN CERTIFICATE-----); a DER one converts with openssl x509 -inform DER -in FILE -out FILE.pem"
            }),
        // A FIFO named as a secret or certificate file is refused at once (it was opened with a
        // blocking open(2), which waits for a writer: start-up, a reload and check-config hung).
        Case(
            name: "SharedSecretFile= a FIFO",
            sections: { directory in
                mkfifo(directory.file("secret.fifo"), 0o600)
                return "[Verifier]\nKind=apple\nURL=https://buy.itunes.apple.com/verifyReceipt\nBundleID=com.example.app\nSharedSecretFile=secret.fifo"
            },
            line: 11,
            problem: { "[Verifier] SharedSecretFile=: \($0.file("secret.fifo")): not a regular file (a FIFO); only regular files are read" }),
        Case(
            name: "CAFile= a FIFO",
            sections: { directory in
                mkfifo(directory.file("ca.fifo"), 0o600)
                return "[Verifier]\nKind=http\nURL=https://merchant.example/verify\nCAFile=ca.fifo"
            },
            line: 10,
            problem: { "[Verifier] CAFile=: \($0.file("ca.fifo")): not a regular file (a FIFO); only regular files are read" }),
    ]

    @Test("the daemon exits 78 and check-config exits 78, both naming the file, line and key", arguments: cases)
    func refusedByBoth(_ refused: Case) async throws {
        let harness = Harness("check-config")
        harness.configure(refused.sections(harness.directory))
        let expected = "\(harness.configPath):\(refused.line): \(refused.problem(harness.directory))"

        let daemon = try harness.startDaemon()
        #expect(await daemon.wait(timeout: .seconds(15)) == 78, "\(daemon.standardError)")
        #expect(daemon.standardError.contains(expected), "\(daemon.standardError)")
        #expect(!FileManager.default.fileExists(atPath: harness.directory.file("state/orders.db")), "the daemon went on to open its store")

        let check = try await harness.ctl(["check-config"])
        #expect(check.status == 78)
        #expect(check.output.isEmpty)
        #expect(check.error == "\(expected)\nError: 1 problem in the configuration\n", "\(check.error)")
    }

    @Test("a systemd credential with no $CREDENTIALS_DIRECTORY: the daemon refuses it; check-config, run outside the unit, says it did not check it")
    func credentialOutsideTheUnit() async throws {
        let harness = Harness("check-credential")
        harness.configure("[Verifier]\nKind=http\nURL=https://merchant.example/verify\nTokenCredential=merchant-token")
        let daemon = try harness.startDaemon()
        #expect(await daemon.wait() == 78)
        #expect(daemon.standardError.contains("\(harness.configPath):10: [Verifier] TokenCredential=: $CREDENTIALS_DIRECTORY is not set"))

        let check = try await harness.ctl(["check-config"])
        #expect(check.status == 0, "\(check.error)")
        #expect(check.error.hasPrefix("note: [Verifier] TokenCredential=merchant-token not checked: $CREDENTIALS_DIRECTORY is not set here"), "\(check.error)")

        // Given the directory, as the unit's LoadCredential= gives it, both read it.
        harness.directory.write("credentials/merchant-token", "t0ken\n")
        let given = try await ChildProcess.run(
            "reconcilectl", ["--config", harness.configPath, "check-config", "--quiet"],
            environment: ["CREDENTIALS_DIRECTORY": harness.directory.file("credentials")], directory: harness.directory)
        #expect(given.status == 0 && given.error.isEmpty, "\(given.error)")
        let missing = try await ChildProcess.run(
            "reconcilectl", ["--config", harness.configPath, "check-config"],
            environment: ["CREDENTIALS_DIRECTORY": harness.directory.file("elsewhere")], directory: harness.directory)
        #expect(missing.status == 78)
        #expect(missing.error.contains(":10: [Verifier] TokenCredential=: cannot read \(harness.directory.file("elsewhere"))/merchant-token: No such file or directory"))
    }

    @Test("[GooglePlay]: a key file missing, not JSON, or holding a key RS256 cannot use, and a package name that is not one: the daemon and check-config refuse each, naming the line and key; a good key is summarised without its secret")
    func googlePlayKey() async throws {
        let harness = Harness("check-play")
        let account = try await TestServiceAccount.make()
        harness.directory.write("play-key.json", account.json)
        harness.directory.write("not-json.json", "private_key=nothing here\n")
        let directory = try OpenSSLCommand.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        _ = try await OpenSSLCommand.run(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", "ec.pem"], in: directory)
        let ecKey = try String(contentsOf: directory.appendingPathComponent("ec.pem"), encoding: .utf8)
        harness.directory.write("ec-key.json", JSONWriter.string(.object(JSONObject([
            "type": .string("service_account"), "private_key_id": .string("0001"), "private_key": .string(ecKey),
            "client_email": .string("ec@reconcile-test.iam.gserviceaccount.com"), "token_uri": .string("https://oauth2.googleapis.com/token"),
        ]))))
        let refused: [(package: String, keyFile: String, line: Int, problem: String)] = [
            ("com.example.game", "no-key.json", 9, "[GooglePlay] ServiceAccountFile=: cannot read \(harness.directory.file("no-key.json")): No such file or directory"),
            ("com.example.game", "not-json.json", 9, "[GooglePlay] ServiceAccountFile=: file \(harness.directory.file("not-json.json")) is not a usable service account key: not a JSON key file"),
            ("com.example.game", "ec-key.json", 9, "[GooglePlay] ServiceAccountFile=: file \(harness.directory.file("ec-key.json")) is not a usable service account key: the key file's private_key: not an RSA key (type EC); RS256 needs RSA"),
            ("Com..game", "play-key.json", 8, "[GooglePlay] PackageName=: \"Com..game\" is not an Android package name"),
        ]
        for (package, keyFile, line, problem) in refused {
            harness.configure("[GooglePlay]\nPackageName=\(package)\nServiceAccountFile=\(keyFile)")
            let expected = "\(harness.configPath):\(line): \(problem)"
            let daemon = try harness.startDaemon()
            #expect(await daemon.wait(timeout: .seconds(15)) == 78, "\(daemon.standardError)")
            #expect(daemon.standardError.contains(expected), "\(daemon.standardError)")
            let check = try await harness.ctl(["check-config"])
            #expect(check.status == 78 && check.output.isEmpty)
            #expect(check.error.hasPrefix(expected) && check.error.hasSuffix("Error: 1 problem in the configuration\n"), "\(check.error)")
            #expect(!check.error.contains(account.keyBody.prefix(40)) && !check.error.contains("BEGIN PRIVATE KEY"))
        }
        harness.configure("[GooglePlay]\nPackageName=com.example.game\nServiceAccountFile=play-key.json")
        let check = try await harness.ctl(["check-config"])
        #expect(check.status == 0, "\(check.error)")
        #expect(check.output.contains("googleplay com.example.game at https://androidpublisher.googleapis.com, acknowledge after finishing"), "\(check.output)")
        #expect(check.output.contains("service account \(account.clientEmail) (key 2048 bits), tokens from https://oauth2.googleapis.com/token"))
        #expect(!check.output.contains(account.keyBody.prefix(40)) && !check.output.contains(account.privateKeyID))

        // The key as a systemd credential: read from $CREDENTIALS_DIRECTORY; outside the unit, a note.
        harness.configure("[GooglePlay]\nPackageName=com.example.game\nServiceAccountCredential=play-service-account")
        harness.directory.write("credentials/play-service-account", account.json)
        let given = try await ChildProcess.run(
            "reconcilectl", ["--config", harness.configPath, "check-config"],
            environment: ["CREDENTIALS_DIRECTORY": harness.directory.file("credentials")], directory: harness.directory)
        #expect(given.status == 0 && given.error.isEmpty, "\(given.error)")
        #expect(given.output.contains("service account \(account.clientEmail) (key 2048 bits)"), "\(given.output)")
        let outside = try await harness.ctl(["check-config"])
        #expect(outside.status == 0 && outside.error.hasPrefix("note: [GooglePlay] ServiceAccountCredential=play-service-account not checked"), "\(outside.error)")
        harness.directory.write("credentials/play-service-account", "{}")
        let wrong = try await ChildProcess.run(
            "reconcilectl", ["--config", harness.configPath, "check-config"],
            environment: ["CREDENTIALS_DIRECTORY": harness.directory.file("credentials")], directory: harness.directory)
        #expect(wrong.status == 78 && wrong.error.contains(":9: [GooglePlay] ServiceAccountCredential=: "), "\(wrong.error)")
    }
}
