/// Which Android packages the store's Google Play orders belong to (DESIGN §5a): Google lists
/// voided purchases per package, so the daemon reads the list of `[GooglePlay] PackageName=` and
/// of every package an order names — never of a package only a push names.
public protocol PlayPackageSource: Sendable {
    /// The distinct `package_name`s of the store's orders, sorted (orders that name none use
    /// `PackageName=`).
    func playPackageNames() throws -> [String]
}
