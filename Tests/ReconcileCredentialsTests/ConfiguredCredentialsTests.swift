import Foundation
import ReconcileCore
import Testing
import TestSupport
@testable import ReconcileCredentials
import ReconcileFoundation
import ReconcileSystem

/// What the daemon and `reconcilectl check-config` both read before the verifiers are built.
@Suite("Configured credentials")
struct ConfiguredCredentialsTests {
    let directory = TemporaryDirectory(prefix: "credentials")

    func configuration(_ text: String) throws -> Configuration {
        try ConfigurationParser.parse([ConfigurationSource(path: directory.file("reconciled.conf"), text: text)])
    }

    func problems(_ configuration: Configuration, credentials: ConfiguredCredentials.CredentialsDirectory = .required) -> [String] {
        do {
            _ = try ConfiguredCredentials.read(for: configuration, environment: [:], credentials: credentials)
            return []
        } catch {
            return error.problems.map(\.description)
        }
    }

    @Test("every unreadable file is reported, each at its key's line, not only the first")
    func everyProblem() throws {
        directory.write("damaged.pem", "-----BEGIN CERTIFICATE-----\nnot base64 at all!\n-----END CERTIFICATE-----\n")
        let path = directory.file("reconciled.conf")
        let found = problems(try configuration("""
            [Verifier]
            Kind=apple
            URL=https://buy.itunes.apple.com/verifyReceipt
            BundleID=com.example.app
            SharedSecretFile=secret
            CAFile=damaged.pem
            [Delivery]
            URL=https://backend.example/deliver
            TokenFile=token
            CAFile=none.pem
            """))
        #expect(found == [
            "\(path):5: [Verifier] SharedSecretFile=: cannot read \(directory.file("secret")): No such file or directory",
            "\(path):6: [Verifier] CAFile=: \(directory.file("damaged.pem")) holds a damaged PEM certificate",
            "\(path):9: [Delivery] TokenFile=: cannot read \(directory.file("token")): No such file or directory",
            "\(path):10: [Delivery] CAFile=: cannot read \(directory.file("none.pem")): No such file or directory",
        ])
    }

    @Test("the anchors of each section are its own; a file of PEM certificates is read whole")
    func anchors() async throws {
        let certificates = try await TestServerCertificates.make(in: directory.path)
        let other = try await TestServerCertificates.make(in: directory.path, name: "other")
        directory.write("secret", "s3cret\n")
        let pem = (directory.read("test-ca.pem") ?? "") + "some text between\n" + (directory.read("other-ca.pem") ?? "")
        directory.write("both.pem", pem)
        let resources = try ConfiguredCredentials.read(for: try configuration("""
            [Verifier]
            Kind=apple
            URL=https://buy.itunes.apple.com/verifyReceipt
            BundleID=com.example.app
            SharedSecretFile=secret
            CAFile=both.pem
            [Delivery]
            URL=https://backend.example/deliver
            CAFile=\(other.authority)
            """), environment: [:])
        #expect(resources.sharedSecret == "s3cret")
        #expect(resources.verifierAnchors == TrustAnchors(path: directory.file("both.pem"), pem: Array(pem.utf8)))
        #expect(resources.deliveryAnchors?.path == other.authority)
        _ = certificates
    }

    @Test("a systemd credential without $CREDENTIALS_DIRECTORY: a problem for the daemon, a note for check-config")
    func credentialsDirectory() throws {
        let configuration = try configuration("[Verifier]\nKind=http\nURL=https://merchant.example/verify\nTokenCredential=merchant-token\n")
        #expect(problems(configuration).first?.contains(":4: [Verifier] TokenCredential=: $CREDENTIALS_DIRECTORY is not set") == true)
        let resources = try ConfiguredCredentials.read(for: configuration, environment: [:], credentials: .optional)
        #expect(resources.unchecked == ["[Verifier] TokenCredential=merchant-token"])
        #expect(resources.verifierToken == nil)
    }

    @Test("the shared store's password, when one is configured; a credential outside the service is left to libpq for check-config, a problem for the daemon")
    func storePassword() throws {
        directory.write("db-password", "pa55\n")
        func state(_ lines: String) throws -> Configuration {
            try configuration("[State]\n\(lines)\n[Verifier]\nKind=http\nURL=https://merchant.example/verify\n")
        }
        let shared = try state("Database=postgresql://reconciled@db.example/reconcile\nPasswordFile=db-password")
        #expect(try ConfiguredCredentials.storePassword(shared, environment: [:]) == "pa55")
        let sqlite = try state("Database=/var/lib/reconciled/orders.db")
        #expect(try ConfiguredCredentials.storePassword(sqlite, environment: [:]) == nil)
        let credential = try state("Database=postgresql://reconciled@db.example/reconcile\nPasswordCredential=db-password")
        #expect(try ConfiguredCredentials.storePassword(credential, environment: [:], credentials: .optional) == nil)
        #expect(throws: CredentialReader.Failure.self) { try ConfiguredCredentials.storePassword(credential, environment: [:]) }
        #expect(try ConfiguredCredentials.storePassword(credential, environment: ["CREDENTIALS_DIRECTORY": directory.path]) == "pa55")
    }
}
