import Testing
@testable import ReconcileCrypto

@Suite("SHA-256")
struct SHA256Tests {
    @Test("known vectors (FIPS 180-4)")
    func vectors() {
        #expect(SHA256.hexDigest([UInt8]()) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(SHA256.hexDigest(Array("abc".utf8)) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(SHA256.digest(Array("abc".utf8)).count == 32)
    }

    @Test("a fingerprint is short and does not contain the input")
    func fingerprint() {
        let receipt = "MIIT0QYJKoZIhvcNAQcCoIITwjCCE74CAQExCzAJBgUrDgMCGgUAMIIDcgYJKoZIhvcNAQcBoIIDYwSCA18xggNbMAoCAQg"
        let print = SHA256.fingerprint(receipt)
        #expect(print.count == 12)
        #expect(!receipt.contains(print))
        #expect(print == SHA256.fingerprint(receipt))
    }
}
