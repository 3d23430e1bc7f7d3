import ReconcileCore

/// A reload that passed every check: the configuration before and after, and what
/// ``VerificationFactory`` built from the new one and the files it names.
struct ConfigurationChange: Sendable {
    let previous: Configuration
    let next: Configuration
    let configured: VerificationFactory.Configured
}
