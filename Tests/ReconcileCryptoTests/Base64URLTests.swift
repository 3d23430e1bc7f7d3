import Testing
@testable import ReconcileCrypto

@Suite("Base64URL")
struct Base64URLTests {
    @Test("RFC 4648 vectors, without padding")
    func vectors() throws {
        let cases: [(String, String)] = [("", ""), ("f", "Zg"), ("fo", "Zm8"), ("foo", "Zm9v"), ("foob", "Zm9vYg"), ("fooba", "Zm9vYmE"), ("foobar", "Zm9vYmFy")]
        for (plain, encoded) in cases {
            #expect(Base64URL.encode(Array(plain.utf8)) == encoded)
            #expect(try Base64URL.decode(encoded) == Array(plain.utf8))
        }
    }

    @Test("the URL alphabet: - and _ instead of + and /")
    func urlAlphabet() throws {
        let bytes: [UInt8] = [0xFB, 0xFF, 0xBF]
        #expect(Base64URL.encode(bytes) == "-_-_")
        #expect(try Base64URL.decode("-_-_") == bytes)
    }

    @Test("every byte value survives a round trip")
    func roundTrip() throws {
        for length in 0..<70 {
            let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ length) }
            #expect(try Base64URL.decode(Base64URL.encode(bytes)) == bytes)
        }
    }

    @Test("refused: standard base64 characters, padding, white space, other characters, impossible lengths", arguments: [
        "+/+/", "Zg==", "Zm9v\n", "Zm 9v", "Zm9v.", "Zm9vé", "Zm9vY",
    ])
    func refused(_ text: String) {
        #expect(throws: Base64URL.DecodingError.self) { try Base64URL.decode(text) }
    }
}
