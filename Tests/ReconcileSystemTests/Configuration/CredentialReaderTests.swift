import Foundation
import ReconcileCore
import Testing
import TestSupport
@testable import ReconcileSystem

@Suite("Credentials")
struct CredentialReaderTests {
    let directory = TemporaryDirectory(prefix: "credentials")

    @Test("from $CREDENTIALS_DIRECTORY or a file, trailing whitespace trimmed")
    func read() throws {
        directory.write("creds/shared-secret", "  s3cret with inner space \n\n")
        #expect(try CredentialReader.read(.credential("shared-secret"), key: "[Verifier] SharedSecretCredential=", environment: ["CREDENTIALS_DIRECTORY": directory.file("creds")])
            == "  s3cret with inner space")
        let file = directory.write("token", "tok\r\n")
        #expect(try CredentialReader.read(.file(file), key: "[Verifier] TokenFile=", environment: [:]) == "tok")
    }

    @Test("missing directory, missing file and empty secrets are named, never shown")
    func failures() {
        func message(_ source: CredentialSource, _ environment: [String: String] = [:]) -> String? {
            do {
                _ = try CredentialReader.read(source, key: "[Verifier] SharedSecretFile=", environment: environment)
                return nil
            } catch {
                return error.description
            }
        }
        #expect(message(.credential("shared-secret"))?.contains("$CREDENTIALS_DIRECTORY is not set") == true)
        #expect(message(.file(directory.file("none")))?.contains("No such file or directory") == true)
        let empty = directory.write("empty", " \n\t\n")
        #expect(message(.file(empty)) == "[Verifier] SharedSecretFile=: \(empty) is empty")
        let binary = directory.write("binary", bytes: [0xFF, 0xFE])
        #expect(message(.file(binary))?.contains("not UTF-8") == true)
    }
}
