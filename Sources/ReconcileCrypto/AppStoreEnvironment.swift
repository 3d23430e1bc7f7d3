/// The App Store environment a signed payload comes from, spelled as in its `environment` field.
public enum AppStoreEnvironment: String, CaseIterable, Sendable {
    case production = "Production"
    case sandbox = "Sandbox"
    /// StoreKit testing in Xcode (signed by Xcode's own certificate, not Apple's chain).
    case xcode = "Xcode"
    /// Local StoreKit testing.
    case localTesting = "LocalTesting"
}
