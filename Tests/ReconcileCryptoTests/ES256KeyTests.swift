import Foundation
import TestSupport
import Testing
@testable import ReconcileCrypto

@Suite("ES256 keys")
struct ES256KeyTests {
    let message = Array("eyJhbGciOiJFUzI1NiJ9.eyJmb28iOiJiYXIifQ".utf8)

    @Test("the test PKCS#8 key signs, and its public key verifies raw r||s signatures")
    func signAndVerify() throws {
        let key = try ES256PrivateKey(pem: CryptoFixtures.testSigningKey)
        let signature = try key.sign(message)
        #expect(signature.count == 64)
        #expect(key.publicKey.isValidSignature(signature, for: message))
        #expect(!key.publicKey.isValidSignature(signature, for: message + [0x20]))
        var flipped = signature
        flipped[40] ^= 0x01
        #expect(!key.publicKey.isValidSignature(flipped, for: message))
    }

    @Test("a signature of the wrong length is simply invalid", arguments: [0, 1, 63, 65, 72, 128])
    func wrongLength(_ length: Int) throws {
        let key = try ES256PrivateKey(pem: CryptoFixtures.testSigningKey)
        let signature = try key.sign(message)
        let resized = Array((signature + signature + signature).prefix(length))
        #expect(!key.publicKey.isValidSignature(resized, for: message))
    }

    @Test("r = 0 and out-of-range values do not verify (and do not crash)")
    func degenerate() throws {
        let key = try ES256PrivateKey(pem: CryptoFixtures.testSigningKey)
        #expect(!key.publicKey.isValidSignature([UInt8](repeating: 0, count: 64), for: message))
        #expect(!key.publicKey.isValidSignature([UInt8](repeating: 0xFF, count: 64), for: message))
    }

    @Test("many signatures: r and s shorter than 32 bytes are left-padded (about 1 in 128 each)")
    func padding() throws {
        let key = try ES256PrivateKey(pem: CryptoFixtures.testSigningKey)
        let publicKey = key.publicKey
        var padded = 0
        for index in 0..<400 {
            let input = message + Array("\(index)".utf8)
            let signature = try key.sign(input)
            #expect(signature.count == 64)
            #expect(publicKey.isValidSignature(signature, for: input))
            if signature[0] == 0 || signature[32] == 0 { padded += 1 }
        }
        // Not asserted (it is chance): the DER conversion test below covers padding exactly.
        _ = padded
    }

    @Test("DER ECDSA-Sig-Value → raw: small integers are left-padded to 32 bytes, and back")
    func derConversion() throws {
        // SEQUENCE { INTEGER 1, INTEGER 0x0102 }
        let raw = try ES256PrivateKey.rawSignature(fromDER: [0x30, 0x07, 0x02, 0x01, 0x01, 0x02, 0x02, 0x01, 0x02])
        #expect(raw == [UInt8](repeating: 0, count: 31) + [1] + [UInt8](repeating: 0, count: 30) + [1, 2])
        #expect(ES256PublicKey.derSignature(fromRaw: raw) == [0x30, 0x07, 0x02, 0x01, 0x01, 0x02, 0x02, 0x01, 0x02])
        // A high bit set: DER adds a leading zero, raw does not.
        let high = [UInt8](repeating: 0x80, count: 64)
        let der = try #require(ES256PublicKey.derSignature(fromRaw: high))
        #expect(der.count == 2 + 2 * (2 + 33))
        #expect(try ES256PrivateKey.rawSignature(fromDER: der) == high)
    }

    @Test("interoperates with the openssl command line: its DER signatures verify here, ours verify there")
    func openSSLInterop() async throws {
        let directory = try OpenSSLCommand.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let key = try ES256PrivateKey(pem: CryptoFixtures.testSigningKey)
        try Data(CryptoFixtures.testSigningKey.utf8).write(to: directory.appendingPathComponent("key.p8"))
        try Data(message).write(to: directory.appendingPathComponent("message"))
        try Data(key.publicKey.pem.utf8).write(to: directory.appendingPathComponent("public.pem"))

        let theirs = try await OpenSSLCommand.run(["dgst", "-sha256", "-sign", "key.p8", "message"], in: directory)
        #expect(key.publicKey.isValidSignature(try ES256PrivateKey.rawSignature(fromDER: theirs), for: message))

        let ours = try #require(ES256PublicKey.derSignature(fromRaw: try key.sign(message)))
        try Data(ours).write(to: directory.appendingPathComponent("ours.sig"))
        let answer = try await OpenSSLCommand.run(["dgst", "-sha256", "-verify", "public.pem", "-signature", "ours.sig", "message"], in: directory)
        #expect(String(decoding: answer, as: UTF8.self).contains("Verified OK"))
    }

    @Test("public key PEM round trip")
    func publicKeyPEM() throws {
        let key = try ES256PrivateKey(pem: CryptoFixtures.testSigningKey)
        let pem = key.publicKey.pem
        #expect(pem.hasPrefix("-----BEGIN PUBLIC KEY-----\n"))
        #expect(!pem.contains("PRIVATE"))
        let reread = try ES256PublicKey(pem: pem)
        #expect(reread.pem == pem)
        #expect(reread.isValidSignature(try key.sign(message), for: message))
        // A private key PEM is not a public key.
        #expect(throws: ES256KeyError.self) { try ES256PublicKey(pem: CryptoFixtures.testSigningKey) }
    }

    @Test("not PEM, or an encrypted key (refused without a pass-phrase prompt)")
    func unreadable() async throws {
        for text in ["", "hello", "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"] {
            #expect {
                try ES256PrivateKey(pem: text)
            } throws: { error in
                guard case .unreadablePEM = error as? ES256KeyError else { return false }
                return true
            }
        }
        let directory = try OpenSSLCommand.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try await OpenSSLCommand.run(
            ["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-aes256", "-pass", "pass:secret", "-out", "encrypted.pem"],
            in: directory)
        let encrypted = try String(contentsOf: directory.appendingPathComponent("encrypted.pem"), encoding: .utf8)
        #expect(encrypted.contains("ENCRYPTED PRIVATE KEY"))
        #expect {
            try ES256PrivateKey(pem: encrypted)
        } throws: { error in
            guard case .unreadablePEM(let reason) = error as? ES256KeyError else { return false }
            return !reason.contains("secret")
        }
    }

    @Test("an RSA key or a P-384 key is refused by name")
    func wrongKinds() async throws {
        let directory = try OpenSSLCommand.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try await OpenSSLCommand.run(["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:1024", "-out", "rsa.pem"], in: directory)
        try await OpenSSLCommand.run(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-384", "-out", "p384.pem"], in: directory)
        try await OpenSSLCommand.run(["pkey", "-in", "p384.pem", "-pubout", "-out", "p384.pub"], in: directory)
        let rsa = try String(contentsOf: directory.appendingPathComponent("rsa.pem"), encoding: .utf8)
        let p384 = try String(contentsOf: directory.appendingPathComponent("p384.pem"), encoding: .utf8)
        let p384Public = try String(contentsOf: directory.appendingPathComponent("p384.pub"), encoding: .utf8)
        #expect(throws: ES256KeyError.notEllipticCurve("RSA")) { try ES256PrivateKey(pem: rsa) }
        #expect(throws: ES256KeyError.wrongCurve("secp384r1")) { try ES256PrivateKey(pem: p384) }
        #expect(throws: ES256KeyError.wrongCurve("secp384r1")) { try ES256PublicKey(pem: p384Public) }
    }
}
