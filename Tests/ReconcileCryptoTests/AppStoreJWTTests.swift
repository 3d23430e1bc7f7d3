import Foundation
import TestSupport
import Testing
@testable import ReconcileCrypto

@Suite("App Store Server API JWT")
struct AppStoreJWTTests {
    let now = Date(timeIntervalSince1970: 1_700_000_000.75)

    func key() throws -> ES256PrivateKey {
        try ES256PrivateKey(pem: CryptoFixtures.testSigningKey)
    }

    func token(now: Date? = nil) throws -> String {
        try AppStoreJWT.token(key: key(), keyID: "KEY123ABCD", issuerID: "57246542-96fe-1a63-e053-0824d011072a", bundleID: "com.example", now: now ?? self.now)
    }

    @Test("header and claims are exactly what Apple documents, iat backdated 60 s, exp now + 5 min")
    func shape() throws {
        let parts = try token().split(separator: ".").map(String.init)
        #expect(parts.count == 3)
        #expect(String(decoding: try Base64URL.decode(parts[0]), as: UTF8.self) == #"{"alg":"ES256","kid":"KEY123ABCD","typ":"JWT"}"#)
        #expect(
            String(decoding: try Base64URL.decode(parts[1]), as: UTF8.self)
                == #"{"aud":"appstoreconnect-v1","bid":"com.example","exp":1700000300,"iat":1699999940,"iss":"57246542-96fe-1a63-e053-0824d011072a"}"#)
        #expect(try Base64URL.decode(parts[2]).count == 64)
        #expect(!parts.joined().contains("="))
    }

    @Test("verifies with the matching public key and gives back the claims")
    func roundTrip() throws {
        let claims = try AppStoreJWT.verify(token(), with: key().publicKey, now: now)
        #expect(claims.keyID == "KEY123ABCD")
        #expect(claims.issuerID == "57246542-96fe-1a63-e053-0824d011072a")
        #expect(claims.bundleID == "com.example")
        #expect(claims.audience == "appstoreconnect-v1")
        #expect(claims.issuedAt == Date(timeIntervalSince1970: 1_699_999_940))
        #expect(claims.expiresAt == Date(timeIntervalSince1970: 1_700_000_300))
    }

    @Test("refused: expired, issued in the future beyond the skew, another key")
    func refused() async throws {
        let token = try token()
        let publicKey = try key().publicKey
        #expect(throws: AppStoreJWTError.expired) { try AppStoreJWT.verify(token, with: publicKey, now: now.addingTimeInterval(300)) }
        #expect(throws: Never.self) { try AppStoreJWT.verify(token, with: publicKey, now: now.addingTimeInterval(-110)) }
        #expect(throws: AppStoreJWTError.issuedInFuture) { try AppStoreJWT.verify(token, with: publicKey, now: now.addingTimeInterval(-130)) }

        let directory = try OpenSSLCommand.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try await OpenSSLCommand.run(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", "other.pem"], in: directory)
        let other = try ES256PrivateKey(pem: String(contentsOf: directory.appendingPathComponent("other.pem"), encoding: .utf8))
        #expect(throws: AppStoreJWTError.badSignature) { try AppStoreJWT.verify(token, with: other.publicKey, now: now) }
    }

    /// A token with this header and these claims, signed with the test key.
    func handMade(header: String, claims: String) throws -> String {
        let input = Base64URL.encode(Array(header.utf8)) + "." + Base64URL.encode(Array(claims.utf8))
        return input + "." + Base64URL.encode(try key().sign(Array(input.utf8)))
    }

    @Test("refused: a wrong audience, a missing kid, typ or claim, another algorithm, a claim of the wrong type")
    func refusedFields() throws {
        let publicKey = try key().publicKey
        let header = #"{"alg":"ES256","kid":"K","typ":"JWT"}"#
        let claims = #"{"aud":"appstoreconnect-v1","bid":"b","exp":1700000300,"iat":1699999940,"iss":"i"}"#
        #expect(throws: Never.self) { try AppStoreJWT.verify(handMade(header: header, claims: claims), with: publicKey, now: now) }
        let cases: [(String, String, AppStoreJWTError)] = [
            (header, claims.replacingOccurrences(of: "appstoreconnect-v1", with: "appstoreconnect-v2"), .wrongAudience),
            (#"{"alg":"ES256","typ":"JWT"}"#, claims, .missingField("kid")),
            (#"{"alg":"ES256","kid":"K"}"#, claims, .missingField("typ")),
            (#"{"alg":"HS256","kid":"K","typ":"JWT"}"#, claims, .unsupportedHeader("alg HS256")),
            (header, claims.replacingOccurrences(of: #""bid":"b","#, with: ""), .missingField("bid")),
            (header, claims.replacingOccurrences(of: #""exp":1700000300"#, with: #""exp":"1700000300""#), .missingField("exp")),
            (header, claims.replacingOccurrences(of: #""iat":1699999940"#, with: #""iat":true"#), .missingField("iat")),
        ]
        for (header, claims, expected) in cases {
            #expect(throws: expected) { try AppStoreJWT.verify(handMade(header: header, claims: claims), with: publicKey, now: now) }
        }
    }

    @Test("refused as malformed: wrong part count, bad base64url, non-JSON", arguments: [
        "", "a.b", "a.b.c.d", "!!!.e30.AA", "e30.e30.A", "bm90IGpzb24.e30.AAAA",
    ])
    func malformed(_ token: String) throws {
        let publicKey = try key().publicKey
        #expect {
            try AppStoreJWT.verify(token, with: publicKey, now: now)
        } throws: { error in
            guard case .malformed = error as? AppStoreJWTError else { return false }
            return true
        }
    }
}

@Suite("App Store token cache")
struct AppStoreTokenCacheTests {
    let start = Date(timeIntervalSince1970: 1_700_000_000)

    func cache() throws -> AppStoreTokenCache {
        AppStoreTokenCache(key: try ES256PrivateKey(pem: CryptoFixtures.testSigningKey), keyID: "K", issuerID: "I", bundleID: "com.example")
    }

    @Test("reuses a token while more than 60 s remain, then makes a new one")
    func reuse() throws {
        let cache = try cache()
        let first = try cache.token(now: start)
        #expect(try cache.token(now: start.addingTimeInterval(100)) == first)
        #expect(try cache.token(now: start.addingTimeInterval(240)) == first)
        let second = try cache.token(now: start.addingTimeInterval(241))
        #expect(second != first)
        let publicKey = try ES256PrivateKey(pem: CryptoFixtures.testSigningKey).publicKey
        let claims = try AppStoreJWT.verify(second, with: publicKey, now: start.addingTimeInterval(241))
        #expect(claims.expiresAt == start.addingTimeInterval(541))
    }

    @Test("a clock that went back before the token's iat gets a new token")
    func clockBack() throws {
        let cache = try cache()
        let first = try cache.token(now: start)
        #expect(try cache.token(now: start.addingTimeInterval(-59)) == first)
        #expect(try cache.token(now: start.addingTimeInterval(-61)) != first)
    }

    @Test("many concurrent callers share one token")
    func concurrent() async throws {
        let cache = try cache()
        let start = self.start
        let tokens = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<32 { group.addTask { try cache.token(now: start) } }
            return try await group.reduce(into: Set<String>()) { $0.insert($1) }
        }
        #expect(tokens.count == 1)
    }
}
