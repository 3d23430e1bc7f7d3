import Foundation
import TestSupport
import Testing
@testable import ReconcileCrypto

@Suite("Signed data (JWS) verifier: Apple's test vectors")
struct SignedDataVerifierTests {
    /// Today is after the vectors' certificates were issued; their signedDate is 2023-01-05.
    let now = Date()

    func verifier(bundleID: String = "com.example", environment: AppStoreEnvironment = .sandbox) throws -> SignedDataVerifier {
        try SignedDataVerifier(rootCertificates: [CryptoFixtures.testCA], bundleID: bundleID, environment: environment)
    }

    @Test("the signed transaction vector verifies against the test CA (bundle com.example, Sandbox)")
    func vector() throws {
        let payload = try verifier().verify(CryptoFixtures.signedTransaction, now: now)
        #expect(payload.bundleID == "com.example")
        #expect(payload.environment == .sandbox)
        #expect(payload.signedDate == Date(timeIntervalSince1970: 1_672_956_154))
        #expect(String(decoding: payload.json, as: UTF8.self) == #"{"environment":"Sandbox","bundleId":"com.example","signedDate":1672956154000}"#)
        struct Transaction: Decodable { let bundleId: String; let signedDate: Int64 }
        #expect(try payload.decode(Transaction.self).signedDate == 1_672_956_154_000)
    }

    @Test("certificates are checked at signedDate, not now: the vector still verifies in 2040, after they expire")
    func signedDateIsTheVerificationTime() throws {
        let in2040 = Date(timeIntervalSince1970: 2_208_988_800)
        #expect(try verifier().verify(CryptoFixtures.signedTransaction, now: in2040).bundleID == "com.example")
    }

    @Test("another bundle id → wrong_bundle; another environment → wrong_environment")
    func appIdentity() throws {
        #expect(try verifier(bundleID: "com.example.x").failure(CryptoFixtures.signedTransaction, now: now)?.reason == "wrong_bundle")
        #expect(try verifier(environment: .production).failure(CryptoFixtures.signedTransaction, now: now)?.reason == "wrong_environment")
        #expect(throws: SignedDataError.wrongEnvironment(found: "Sandbox")) {
            try verifier(environment: .xcode).verify(CryptoFixtures.signedTransaction, now: now)
        }
    }

    @Test("a payload changed after signing → bad_signature")
    func tamperedPayload() throws {
        let parts = CryptoFixtures.signedTransaction.split(separator: ".").map(String.init)
        let changed = #"{"environment":"Sandbox","bundleId":"com.example","signedDate":1672956154001}"#
        let tampered = [parts[0], Base64URL.encode(Array(changed.utf8)), parts[2]].joined(separator: ".")
        #expect(throws: SignedDataError.badSignature) { try verifier().verify(tampered, now: now) }
    }

    @Test("a changed signature → bad_signature; a truncated one too")
    func tamperedSignature() throws {
        let parts = CryptoFixtures.signedTransaction.split(separator: ".").map(String.init)
        var signature = try Base64URL.decode(parts[2])
        signature[10] ^= 0x40
        let flipped = [parts[0], parts[1], Base64URL.encode(signature)].joined(separator: ".")
        #expect(throws: SignedDataError.badSignature) { try verifier().verify(flipped, now: now) }
        let short = [parts[0], parts[1], Base64URL.encode(signature.prefix(63))].joined(separator: ".")
        #expect(throws: SignedDataError.badSignature) { try verifier().verify(short, now: now) }
    }

    @Test("with Apple Root CA - G3 as the only root the test chain is refused → invalid_chain (x5c's own root is not trusted)")
    func otherRoot() throws {
        let roots = try SignedDataVerifier.rootCertificates(fromFile: CryptoFixtures.appleRootG3)
        #expect(roots.count == 1)
        let verifier = try SignedDataVerifier(rootCertificates: roots, bundleID: "com.example", environment: .sandbox)
        #expect {
            try verifier.verify(CryptoFixtures.signedTransaction, now: now)
        } throws: { error in
            (error as? SignedDataError) == .invalidChain("unable to get local issuer certificate")
        }
    }

    @Test("missingX5CHeaderClaim (its chain is under the header name x5cwrong) → missing_x5c")
    func missingX5C() throws {
        let jws = CryptoFixtures.text("asapi-mock_signed_data-missingX5CHeaderClaim")
        #expect(throws: SignedDataError.missingX5C("the header has no x5c")) { try verifier().verify(jws, now: now) }
    }

    @Test("wrongBundleId (a notification chained to the test CA; bundle in data.bundleId) → wrong_bundle")
    func wrongBundleNotification() throws {
        let jws = CryptoFixtures.text("asapi-mock_signed_data-wrongBundleId")
        #expect(throws: SignedDataError.wrongBundle(found: "com.example.wrong")) { try verifier().verify(jws, now: now) }
        // The chain and signature are good: configured for that bundle, only the environment
        // (absent from this notification) is left to fail.
        #expect(throws: SignedDataError.wrongEnvironment(found: nil)) {
            try verifier(bundleID: "com.example.wrong").verify(jws, now: now)
        }
    }

    @Test("Xcode's signed transaction has a one-certificate x5c → missing_x5c")
    func xcodeTransaction() throws {
        let jws = CryptoFixtures.text("asapi-xcode-xcode-signed-transaction")
        let verifier = try verifier(bundleID: "com.example.naturelab.backyardbirds.example", environment: .xcode)
        #expect(throws: SignedDataError.missingX5C("x5c holds 1 certificates, expected 3")) { try verifier.verify(jws, now: now) }
    }

    @Test("structure: part count, base64url, JSON, alg, x5c shape")
    func structure() throws {
        let parts = CryptoFixtures.signedTransaction.split(separator: ".").map(String.init)
        let header = try JSONSerialization.jsonObject(with: Data(try Base64URL.decode(parts[0]))) as! [String: Any]
        func with(header changes: [String: Any?]) throws -> String {
            var changed = header
            for (key, value) in changes { changed[key] = value }
            let json = try JSONSerialization.data(withJSONObject: changed)
            return [Base64URL.encode(json), parts[1], parts[2]].joined(separator: ".")
        }
        let x5c = header["x5c"] as! [String]
        let cases: [(String, String)] = [
            ("", "malformed"),
            (parts[0] + "." + parts[1], "malformed"),
            (CryptoFixtures.signedTransaction + ".", "malformed"),
            ("%%." + parts[1] + "." + parts[2], "malformed"),
            (Base64URL.encode(Array("[1]".utf8)) + "." + parts[1] + "." + parts[2], "malformed"),
            (parts[0] + "." + Base64URL.encode(Array("not json".utf8)) + "." + parts[2], "malformed"),
            (parts[0] + "." + Base64URL.encode(Array(#"{"signedDate":"yesterday"}"#.utf8)) + "." + parts[2], "malformed"),
            (parts[0] + "." + Base64URL.encode(Array(#"{"signedDate":1e300}"#.utf8)) + "." + parts[2], "malformed"),
            (parts[0] + "." + parts[1] + ".+/+/", "malformed"),
            (try with(header: ["alg": "RS256"]), "unsupported_algorithm"),
            (try with(header: ["alg": "none"]), "unsupported_algorithm"),
            (try with(header: ["alg": nil]), "unsupported_algorithm"),
            (try with(header: ["alg": 7]), "unsupported_algorithm"),
            (try with(header: ["x5c": nil]), "missing_x5c"),
            (try with(header: ["x5c": "MIIB"]), "missing_x5c"),
            (try with(header: ["x5c": Array(x5c.prefix(2))]), "missing_x5c"),
            (try with(header: ["x5c": x5c + [x5c[2]]]), "missing_x5c"),
            (try with(header: ["x5c": [x5c[0], "bm90IGEgY2VydA==", x5c[2]]]), "missing_x5c"),
            (try with(header: ["x5c": [x5c[0], "%%%", x5c[2]]]), "missing_x5c"),
            // The vector's leaf in the intermediate's place: no chain.
            (try with(header: ["x5c": [x5c[0], x5c[0], x5c[2]]]), "invalid_chain"),
        ]
        let verifier = try verifier()
        for (jws, expected) in cases {
            #expect(verifier.failure(jws, now: now)?.reason == expected, "\(expected): \(jws.prefix(60))")
        }
    }

    @Test("root certificates load from PEM (one or several) and DER; anything else is refused")
    func rootLoading() throws {
        let der = CryptoFixtures.testCA
        #expect(try SignedDataVerifier.rootCertificates(fromFile: der) == [der])
        let pem = CryptoFixtures.appleRootG3
        let appleDER = try SignedDataVerifier.rootCertificates(fromFile: pem)
        #expect(try SignedDataVerifier.rootCertificates(fromFile: pem + Array("\n".utf8) + pem) == appleDER + appleDER)
        #expect(SHA256.hexDigest(appleDER[0]) == "63343abfb89a6a03ebb57e9b3f5fa7be7c4f5c756f3017b3a8c488c3653e9179")
        #expect(throws: SignedDataVerifier.RootCertificateError.none) { try SignedDataVerifier.rootCertificates(fromFile: []) }
        #expect(throws: SignedDataVerifier.RootCertificateError.unreadable(index: 0)) { try SignedDataVerifier.rootCertificates(fromFile: Array(der.dropLast())) }
        let broken = Array("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n".utf8)
        #expect(throws: SignedDataVerifier.RootCertificateError.unreadable(index: 1)) { try SignedDataVerifier.rootCertificates(fromFile: pem + broken) }
        #expect(throws: SignedDataVerifier.RootCertificateError.none) {
            try SignedDataVerifier(rootCertificates: [], bundleID: "b", environment: .sandbox)
        }
        #expect(throws: SignedDataVerifier.RootCertificateError.unreadable(index: 1)) {
            try SignedDataVerifier(rootCertificates: [der, [0x30, 0x00]], bundleID: "b", environment: .sandbox)
        }
    }

    @Test("one verifier serves many threads at once")
    func concurrent() async throws {
        let verifier = try verifier()
        let jws = CryptoFixtures.signedTransaction
        let now = self.now
        let results = await withTaskGroup(of: Bool.self) { group in
            for index in 0..<16 {
                group.addTask {
                    if index.isMultiple(of: 2) {
                        return (try? verifier.verify(jws, now: now)) != nil
                    }
                    return (try? verifier.verify(jws + "A", now: now)) == nil
                }
            }
            return await group.reduce(into: [Bool]()) { $0.append($1) }
        }
        #expect(results.allSatisfy { $0 })
    }
}

@Suite("Signed data (JWS) verifier: chains made with the openssl command line")
struct GeneratedChainTests {
    /// Read after the chain is made: its certificates are valid from the second openssl made them.
    var now: Date { Date() }

    func payload(bundleID: String = "com.example.app", environment: String = "Production", signedDate: Date? = nil) -> [UInt8] {
        var fields = [#""bundleId":"\#(bundleID)""#, #""environment":"\#(environment)""#, #""transactionId":"2000000123456789""#]
        if let signedDate { fields.append(#""signedDate":\#(Int64(signedDate.timeIntervalSince1970 * 1000))"#) }
        return Array("{\(fields.joined(separator: ","))}".utf8)
    }

    func sign(_ chain: TestCertificateChain, x5c: [[UInt8]]? = nil, payload: [UInt8]) throws -> String {
        try JWSSigner(key: ES256PrivateKey(pem: chain.leafKeyPEM), certificateChainDER: x5c ?? chain.x5c).sign(payload: payload)
    }

    func verifier(_ chain: TestCertificateChain) throws -> SignedDataVerifier {
        try SignedDataVerifier(rootCertificates: [chain.rootDER], bundleID: "com.example.app", environment: .production)
    }

    @Test("a JWS signed by JWSSigner with a fresh App Store-shaped chain verifies")
    func verifies() async throws {
        let chain = try await TestCertificateChain.make()
        let jws = try sign(chain, payload: payload())
        let header = String(decoding: try Base64URL.decode(jws.split(separator: ".")[0]), as: UTF8.self)
        #expect(header.hasPrefix(#"{"alg":"ES256","x5c":[""#))
        #expect(!header.contains(#"\/"#))
        let verified = try verifier(chain).verify(jws, now: now)
        #expect(verified.bundleID == "com.example.app")
        #expect(verified.environment == .production)
        #expect(verified.signedDate == nil)
        #expect(verified.json == payload())
    }

    @Test("a leaf without Apple's marker extension → invalid_chain")
    func leafWithoutMarker() async throws {
        let chain = try await TestCertificateChain.make(leafMarker: false)
        let error = try verifier(chain).failure(sign(chain, payload: payload()), now: now)
        #expect(error == .invalidChain("the leaf certificate lacks Apple's extension 1.2.840.113635.100.6.11.1"))
    }

    @Test("an intermediate without Apple's marker extension → invalid_chain")
    func intermediateWithoutMarker() async throws {
        let chain = try await TestCertificateChain.make(intermediateMarker: false)
        let error = try verifier(chain).failure(sign(chain, payload: payload()), now: now)
        #expect(error == .invalidChain("the intermediate certificate lacks Apple's extension 1.2.840.113635.100.6.2.1"))
    }

    @Test("a leaf issued by the root directly (a two-certificate chain) → invalid_chain")
    func shortChain() async throws {
        let chain = try await TestCertificateChain.make(leafSignedByRoot: true)
        let error = try verifier(chain).failure(sign(chain, payload: payload()), now: now)
        #expect(error == .invalidChain("the chain has 2 certificates, expected leaf, intermediate and root"))
    }

    @Test("a chain to a root that is not configured → invalid_chain, even with that root in x5c")
    func unknownRoot() async throws {
        let trusted = try await TestCertificateChain.make()
        let other = try await TestCertificateChain.makeUnshared()
        let error = try verifier(trusted).failure(sign(other, payload: payload()), now: now)
        #expect(error == .invalidChain("unable to get local issuer certificate"))
        // Claiming the trusted root as x5c[2] changes nothing: x5c[2] is not used.
        let claimed = try sign(other, x5c: [other.leafDER, other.intermediateDER, trusted.rootDER], payload: payload())
        #expect(try verifier(trusted).failure(claimed, now: now)?.reason == "invalid_chain")
    }

    @Test("validity is judged at signedDate when present, else at now")
    func verificationTime() async throws {
        let chain = try await TestCertificateChain.make(days: 30)
        let verifier = try verifier(chain)
        let now = self.now
        let before = Date(timeIntervalSince1970: 978_307_200)  // 2001, before the certificates
        let after = now.addingTimeInterval(60 * 86400)  // after they expire

        let signedBefore = try sign(chain, payload: payload(signedDate: before))
        #expect(verifier.failure(signedBefore, now: now) == .invalidChain("certificate is not yet valid"))
        let signedAfter = try sign(chain, payload: payload(signedDate: after))
        #expect(verifier.failure(signedAfter, now: now) == .invalidChain("certificate has expired"))
        let signedNow = try sign(chain, payload: payload(signedDate: now))
        #expect(try verifier.verify(signedNow, now: after).signedDate != nil)

        let undated = try sign(chain, payload: payload())
        #expect(verifier.failure(undated, now: after) == .invalidChain("certificate has expired"))
        #expect(verifier.failure(undated, now: before) == .invalidChain("certificate is not yet valid"))
    }

    @Test("signed by another key than the leaf's → bad_signature")
    func wrongSigner() async throws {
        let chain = try await TestCertificateChain.make()
        let other = try await TestCertificateChain.makeUnshared()
        let jws = try JWSSigner(key: ES256PrivateKey(pem: other.leafKeyPEM), certificateChainDER: chain.x5c).sign(payload: payload())
        #expect(try verifier(chain).failure(jws, now: now) == .badSignature)
    }

    @Test("bundle and environment checks after a good signature; reasons are stable names")
    func identity() async throws {
        let chain = try await TestCertificateChain.make()
        let verifier = try verifier(chain)
        #expect(try verifier.failure(sign(chain, payload: payload(bundleID: "com.other")), now: now) == .wrongBundle(found: "com.other"))
        #expect(try verifier.failure(sign(chain, payload: payload(environment: "Sandbox")), now: now) == .wrongEnvironment(found: "Sandbox"))
        #expect(try verifier.failure(sign(chain, payload: Array("{}".utf8)), now: now) == .wrongBundle(found: nil))
        #expect(SignedDataError.wrongBundle(found: "com.other").description == #"wrong_bundle: the payload's bundleId is "com.other""#)
    }

    @Test("a notification names its app in data, summary, appData or externalPurchaseToken: each verifies; another bundle there is still wrong_bundle (issue 23 item 11)")
    func notificationBodies() async throws {
        let chain = try await TestCertificateChain.make()
        let production = try verifier(chain)
        let sandbox = try SignedDataVerifier(rootCertificates: [chain.rootDER], bundleID: "com.example.app", environment: .sandbox)
        func notification(_ body: String) -> [UInt8] {
            Array(#"{"notificationType":"RENEWAL_EXTENSION","subtype":"SUMMARY","notificationUUID":"u-1","version":"2.0",\#(body)}"#.utf8)
        }
        let summary = #""summary":{"environment":"Production","appAppleId":41234,"bundleId":"com.example.app","productId":"p","requestIdentifier":"r","storefrontCountryCodes":["CAN"],"succeededCount":5,"failedCount":2}"#
        #expect(try production.verify(sign(chain, payload: notification(summary)), now: now).bundleID == "com.example.app")
        let appData = #""appData":{"environment":"Production","appAppleId":41234,"bundleId":"com.example.app"}"#
        #expect(try production.failure(sign(chain, payload: notification(appData)), now: now) == nil)
        let token = #""externalPurchaseToken":{"externalPurchaseId":"b2158121-7af9-49d4-9561-1f588205523e","tokenCreationDate":1698148950000,"appAppleId":41234,"bundleId":"com.example.app"}"#
        #expect(try production.failure(sign(chain, payload: notification(token)), now: now) == nil)
        let sandboxToken = #""externalPurchaseToken":{"externalPurchaseId":"SANDBOX_b2158121","tokenCreationDate":1698148950000,"appAppleId":41234,"bundleId":"com.example.app"}"#
        #expect(try production.failure(sign(chain, payload: notification(sandboxToken)), now: now) == .wrongEnvironment(found: "Sandbox"))
        #expect(try sandbox.failure(sign(chain, payload: notification(sandboxToken)), now: now) == nil)
        let otherSummary = summary.replacingOccurrences(of: "com.example.app", with: "com.other")
        #expect(try production.failure(sign(chain, payload: notification(otherSummary)), now: now) == .wrongBundle(found: "com.other"))
        let sandboxSummary = summary.replacingOccurrences(of: "Production", with: "Sandbox")
        #expect(try production.failure(sign(chain, payload: notification(sandboxSummary)), now: now) == .wrongEnvironment(found: "Sandbox"))
    }
}

extension SignedDataVerifier {
    /// The error `verify` throws, or `nil` when it passes.
    func failure(_ compactJWS: String, now: Date) -> SignedDataError? {
        do {
            _ = try verify(compactJWS, now: now)
            return nil
        } catch {
            return error
        }
    }
}
