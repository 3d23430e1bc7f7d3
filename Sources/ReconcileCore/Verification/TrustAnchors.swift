/// Extra TLS trust anchors for one configuration section's endpoints (`CAFile=`, DESIGN §5):
/// the PEM certificates of the file as read when the configuration was loaded (a reload reads it
/// again). Each request carries its section's, so an anchor trusted for one section is trusted
/// for no other, and one a reload removes is trusted no more.
public struct TrustAnchors: Sendable, Hashable {
    /// The file they were read from, for messages.
    public var path: String
    /// One or more PEM certificates.
    public var pem: [UInt8]

    public init(path: String, pem: [UInt8]) {
        self.path = path
        self.pem = pem
    }
}
