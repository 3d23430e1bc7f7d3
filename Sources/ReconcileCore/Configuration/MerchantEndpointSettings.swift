import Foundation

/// A section naming one of the merchant's own endpoints the daemon posts to — `[Delivery]`
/// (grants, DESIGN §5) and `[Revocation]` (refunds and their reversals, §5a): the same four keys,
/// parsed and checked by the same rules (``ConfigurationKeys/merchantEndpoint(_:_:)``).
///
/// Without ``url`` the section is absent: nothing is sent there.
public struct MerchantEndpointSettings: Sendable, Hashable {
    /// `URL=`: `https://`, or `http://` to a loopback address only.
    public var url: URL?
    /// `TokenCredential=` / `TokenFile=`: sent as `Authorization: Bearer …`; never logged.
    public var token: CredentialSource?
    /// `CAFile=`: an extra trust anchor for this endpoint only.
    public var caFile: String?
    /// `Timeout=`: the longest single request.
    public var timeout: Duration = .seconds(10)

    public init() {}
}
