import Foundation
import Synchronization

/// Hands out App Store Server API bearer tokens, making a new one only when the current one has
/// less than `refreshMargin` left (or the clock has gone back past its `iat`). Safe to share
/// between threads.
public final class AppStoreTokenCache: Sendable {
    private let key: ES256PrivateKey
    private let keyID: String
    private let issuerID: String
    private let bundleID: String
    private let refreshMargin: TimeInterval
    private let current = Mutex<Entry?>(nil)

    private struct Entry {
        let token: String
        let issuedAt: Date
        let expiresAt: Date
    }

    /// `refreshMargin`: how long before its expiry a token is replaced (it must stay usable for
    /// the whole request that carries it). Must be shorter than `AppStoreJWT.defaultLifetime`.
    public init(key: ES256PrivateKey, keyID: String, issuerID: String, bundleID: String, refreshMargin: TimeInterval = 60) {
        precondition(refreshMargin >= 0 && refreshMargin < AppStoreJWT.defaultLifetime, "refreshMargin out of range")
        self.key = key
        self.keyID = keyID
        self.issuerID = issuerID
        self.bundleID = bundleID
        self.refreshMargin = refreshMargin
    }

    /// A token valid at `now` for at least `refreshMargin` more.
    public func token(now: Date) throws(AppStoreJWTError) -> String {
        try current.withLock { (entry: inout Entry?) throws(AppStoreJWTError) -> String in
            if let entry, now >= entry.issuedAt, entry.expiresAt.timeIntervalSince(now) >= refreshMargin {
                return entry.token
            }
            let (token, claims) = try AppStoreJWT.signed(key: key, keyID: keyID, issuerID: issuerID, bundleID: bundleID, now: now)
            entry = Entry(token: token, issuedAt: claims.issuedAt, expiresAt: claims.expiresAt)
            return token
        }
    }
}
