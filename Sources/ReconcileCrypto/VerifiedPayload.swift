import Foundation

/// The payload of a signed App Store JWS that passed `SignedDataVerifier.verify`.
public struct VerifiedPayload: Sendable {
    /// The payload's JSON, as signed.
    public let json: [UInt8]
    /// The bundle id it names (top level `bundleId`, or in a notification its `data`, `summary`,
    /// `appData` or `externalPurchaseToken`).
    public let bundleID: String
    /// Its environment (`environment`, or the notification body's), equal to the configured one.
    public let environment: AppStoreEnvironment
    /// `signedDate` (milliseconds since 1970 in the payload), when present.
    public let signedDate: Date?

    /// The payload decoded into `type` with a default `JSONDecoder` (App Store dates are
    /// milliseconds since 1970: decode them as numbers).
    public func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try JSONDecoder().decode(type, from: Data(json))
    }
}
