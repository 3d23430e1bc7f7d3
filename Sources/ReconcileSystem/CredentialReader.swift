import Foundation
import ReconcileCore

/// Reads secrets (Apple's shared secret, bearer tokens) from a systemd credential
/// (`$CREDENTIALS_DIRECTORY/<name>`, from `LoadCredential=`) or a file, with trailing whitespace
/// trimmed. The value never appears in an error.
public enum CredentialReader {
    /// Why a secret is unusable.
    public struct Failure: Error, Sendable, CustomStringConvertible {
        public var description: String

        public init(description: String) {
            self.description = description
        }
    }

    /// The secret, trimmed.
    ///
    /// - Parameter key: the configuration key that names it, for the message (`[Verifier] SharedSecretCredential=`).
    public static func read(_ source: CredentialSource, key: String, environment: [String: String]) throws(Failure) -> String {
        let path: String
        switch source {
        case .file(let file):
            path = file
        case .credential(let name):
            guard let directory = environment["CREDENTIALS_DIRECTORY"], !directory.isEmpty else {
                throw Failure(
                    description: "\(key)\(name): $CREDENTIALS_DIRECTORY is not set (give the unit LoadCredential=\(name):PATH, or use a …File= key)")
            }
            path = directory + "/" + name
        }
        let bytes: [UInt8]
        do {
            bytes = try FileSystem.readFile(path, limit: 64 * 1024)
        } catch {
            throw Failure(description: "\(key): cannot read \(path): \(String(cString: strerror(error.errno)))")
        }
        guard UTF8Validation.firstInvalidOffset(in: bytes) == nil else {
            throw Failure(description: "\(key): \(path) is not UTF-8 text")
        }
        var text = String(decoding: bytes, as: UTF8.self)
        while let last = text.unicodeScalars.last, last.properties.isWhitespace { text.unicodeScalars.removeLast() }
        guard !text.isEmpty else {
            throw Failure(description: "\(key): \(path) is empty")
        }
        return text
    }
}
