import Foundation
import Glibc
import ReconcileCore
import Synchronization
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

    /// Reads `source` on a thread of its own and gives up after 5 s: a reader that blocks on
    /// the FIFO (opening one waits for a writer) must fail the test, not hang it. The FIFO is
    /// then opened for writing and closed, which releases it.
    static func readWithin5s(_ source: CredentialSource, environment: [String: String], unblocking fifo: String) async -> Result<String, CredentialReader.Failure>? {
        let result = Mutex<Result<String, CredentialReader.Failure>?>(nil)
        let thread = Thread {
            let read = Result { () throws(CredentialReader.Failure) -> String in
                try CredentialReader.read(source, key: "[Verifier] SharedSecretFile=", environment: environment)
            }
            result.withLock { $0 = read }
        }
        thread.start()
        _ = await eventually(timeout: .seconds(5), every: .milliseconds(10)) { result.withLock { $0 != nil } }
        let seen = result.withLock { $0 }
        if seen == nil {
            let writer = open(fifo, O_WRONLY | O_NONBLOCK | O_CLOEXEC)
            if writer >= 0 { close(writer) }
        }
        return seen
    }

    @Test("a FIFO (as a file or a credential) or a directory is refused at once, naming it")
    func notRegularFile() async throws {
        let fifo = directory.file("secret.fifo")
        #expect(mkfifo(fifo, 0o600) == 0)
        for (source, environment) in [(CredentialSource.file(fifo), [String: String]()),
                                      (.credential("secret.fifo"), ["CREDENTIALS_DIRECTORY": directory.path])] {
            let read = await Self.readWithin5s(source, environment: environment, unblocking: fifo)
            guard case .failure(let error)? = read else {
                Issue.record(read == nil ? "reading blocked on the FIFO (\(source))" : "a FIFO was read as a secret")
                continue
            }
            #expect(error.description == "[Verifier] SharedSecretFile=: \(fifo): not a regular file (a FIFO); only regular files are read")
        }
        try FileManager.default.createDirectory(atPath: directory.file("secret.d"), withIntermediateDirectories: true)
        #expect(throws: CredentialReader.Failure.self) {
            try CredentialReader.read(.file(directory.file("secret.d")), key: "[Verifier] TokenFile=", environment: [:])
        }
    }
}
