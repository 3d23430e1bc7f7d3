/// A problem with a file a configuration key names (a certificate file that is damaged, a root
/// that does not parse); its description is the message, naming the file.
public struct CredentialFileProblem: Error, CustomStringConvertible, Sendable {
    public var description: String

    public init(description: String) {
        self.description = description
    }
}
