import Foundation
import ReconcileCore
import ReconcileFoundation

/// Reads secrets (Apple's shared secret, bearer tokens) from a systemd credential
/// (`$CREDENTIALS_DIRECTORY/<name>`, from `LoadCredential=`) or a file, with trailing whitespace
/// trimmed. The value never appears in an error. Only a regular file is read, without blocking
/// on a FIFO.
public enum CredentialReader {
    /// Why a secret is unusable.
    public struct Failure: Error, Sendable, CustomStringConvertible {
        /// The configuration key that names the secret (`[Verifier] SharedSecretFile=`).
        public var key: String
        /// What is wrong, without the key (it names the file, never the secret).
        public var reason: String
        /// The credential is a systemd one and `$CREDENTIALS_DIRECTORY` is not set: only the
        /// service manager can say whether it would be readable.
        public var credentialsDirectoryMissing = false

        public init(key: String, reason: String) {
            self.key = key
            self.reason = reason
        }

        public var description: String { "\(key): \(reason)" }
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
                var failure = Failure(
                    key: key,
                    reason: "$CREDENTIALS_DIRECTORY is not set, so credential \(name) cannot be read (give the unit LoadCredential=\(name):PATH, or use a …File= key)")
                failure.credentialsDirectoryMissing = true
                throw failure
            }
            path = directory + "/" + name
        }
        let bytes: [UInt8]
        do {
            bytes = try readRegularFile(path, limit: 64 * 1024)
        } catch {
            throw Failure(key: key, reason: error.description)
        }
        guard UTF8Validation.firstInvalidOffset(in: bytes) == nil else {
            throw Failure(key: key, reason: "\(path) is not UTF-8 text")
        }
        var text = String(decoding: bytes, as: UTF8.self)
        while let last = text.unicodeScalars.last, last.properties.isWhitespace { text.unicodeScalars.removeLast() }
        guard !text.isEmpty else {
            throw Failure(key: key, reason: "\(path) is empty")
        }
        return text
    }

    /// Why a file a key names could not be read, in words, naming the path.
    public struct ReadFailure: Error, Sendable, CustomStringConvertible {
        public var description: String
    }

    /// Reads a secret, key or certificate file the configuration names: a regular file only
    /// (symlinks followed), opened without blocking, so that a FIFO (or a device) in its place
    /// is refused at once instead of hanging the daemon's start, a reload or `check-config`.
    ///
    /// - Throws: ``ReadFailure``: "cannot read PATH: REASON", or "PATH: not a regular file
    ///   (a FIFO); only regular files are read", as the configuration loader says it.
    public static func readRegularFile(_ path: String, limit: Int) throws(ReadFailure) -> [UInt8] {
        do {
            return try FileSystem.readRegularFile(path, limit: limit)
        } catch {
            if error.errno == EINVAL, error.operation.hasPrefix("not a regular file") {
                throw ReadFailure(description: "\(path): \(error.operation); only regular files are read")
            }
            let reason = error.errno == EFBIG ? "larger than \(limit / 1024) KiB" : String(cString: strerror(error.errno))
            throw ReadFailure(description: "cannot read \(path): \(reason)")
        }
    }
}
