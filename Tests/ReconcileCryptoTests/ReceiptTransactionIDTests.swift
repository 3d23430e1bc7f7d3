import Foundation
import ReconcileCore
import TestSupport
import Testing
@testable import ReconcileCrypto
import ReconcileFoundation

@Suite("Receipt transaction id extraction")
struct ReceiptTransactionIDTests {
    let withTransaction = CryptoFixtures.text("asapi-xcode-xcode-app-receipt-with-transaction")
    let empty = CryptoFixtures.text("asapi-xcode-xcode-app-receipt-empty")
    let legacy = CryptoFixtures.text("asapi-mock_signed_data-legacyTransaction")

    @Test("Apple's vectors: Xcode app receipt with a purchase → \"0\"; without → nil; iOS 6 transaction receipt → \"33993399\"")
    func vectors() throws {
        #expect(try ReceiptTransactionID.extract(fromAppReceipt: withTransaction) == "0")
        #expect(try ReceiptTransactionID.extract(fromAppReceipt: empty) == nil)
        #expect(try ReceiptTransactionID.extract(fromTransactionReceipt: legacy) == "33993399")
    }

    @Test("white space and line breaks in the base64 are ignored")
    func wrapped() throws {
        var wrapped = ""
        for (index, character) in withTransaction.enumerated() {
            if index > 0 && index.isMultiple(of: 76) { wrapped += "\r\n" }
            wrapped.append(character)
        }
        #expect(try ReceiptTransactionID.extract(fromAppReceipt: " " + wrapped + "\n") == "0")
    }

    @Test("empty input, not base64, not PKCS#7 → errors that name the problem")
    func garbage() throws {
        #expect(throws: ReceiptExtractionError.empty) { try ReceiptTransactionID.extract(fromAppReceipt: "") }
        #expect(throws: ReceiptExtractionError.empty) { try ReceiptTransactionID.extract(fromAppReceipt: " \n") }
        #expect(throws: ReceiptExtractionError.notBase64("the app receipt")) { try ReceiptTransactionID.extract(fromAppReceipt: "MIIT*") }
        #expect(throws: ReceiptExtractionError.notBase64("the app receipt")) { try ReceiptTransactionID.extract(fromAppReceipt: "abc") }
        #expect {
            try ReceiptTransactionID.extract(fromAppReceipt: Data("hello, world".utf8).base64EncodedString())
        } throws: { error in
            guard case .notPKCS7 = error as? ReceiptExtractionError else { return false }
            return true
        }
        #expect(throws: ReceiptExtractionError.empty) { try ReceiptTransactionID.extract(fromTransactionReceipt: "") }
        #expect(throws: ReceiptExtractionError.notBase64("the transaction receipt")) { try ReceiptTransactionID.extract(fromTransactionReceipt: "%%") }
        #expect(throws: ReceiptExtractionError.notText("the transaction receipt")) {
            try ReceiptTransactionID.extract(fromTransactionReceipt: Data([0xFF, 0xFE, 0x00]).base64EncodedString())
        }
    }

    @Test("a PKCS#7 message that is not SignedData → noSignedContent")
    func notSignedData() throws {
        // ContentInfo { pkcs7-data, [0] OCTET STRING "x" }
        let data: [UInt8] = [0x30, 0x12, 0x06, 0x09, 0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x07, 0x01, 0xA0, 0x05, 0x04, 0x03, 0x31, 0x01, 0x00]
        #expect(throws: ReceiptExtractionError.noSignedContent) {
            try ReceiptTransactionID.extract(fromAppReceipt: Data(data).base64EncodedString())
        }
    }

    @Test("every truncation of a real receipt throws or returns, never crashes")
    func truncated() throws {
        let der = try #require(Data(base64Encoded: withTransaction))
        var thrown = 0
        for length in stride(from: 0, to: der.count, by: 7) {
            do {
                _ = try ReceiptTransactionID.extract(fromAppReceipt: der.prefix(length).base64EncodedString())
            } catch {
                thrown += 1
                #expect(!"\(error)".contains(withTransaction.prefix(20)))
            }
        }
        #expect(thrown > 0)
    }

    @Test("random bytes and flipped bytes: an error or an answer, never a crash")
    func random() throws {
        var generator = SeededRandomSource(seed: 0x5EED)
        for length in [1, 2, 16, 100, 1000, 5000] {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            #expect(throws: ReceiptExtractionError.self) { try ReceiptTransactionID.extract(fromAppReceipt: Data(bytes).base64EncodedString()) }
            _ = try? ReceiptTransactionID.extract(fromTransactionReceipt: Data(bytes).base64EncodedString())
        }
        let der = Array(try #require(Data(base64Encoded: withTransaction)))
        for _ in 0..<300 {
            var mutated = der
            let index = Int.random(in: 0..<der.count, using: &generator)
            mutated[index] ^= UInt8.random(in: 1...255, using: &generator)
            _ = try? ReceiptTransactionID.extract(fromAppReceipt: Data(mutated).base64EncodedString())
        }
    }

    /// A base64 app receipt whose payload is the DER that `openssl asn1parse -genconf` makes of
    /// `config`, signed into PKCS#7 SignedData by a throwaway certificate.
    func receipt(payload config: String) async throws -> String {
        let directory = try OpenSSLCommand.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try Data(config.utf8).write(to: directory.appendingPathComponent("payload.cnf"))
        try await OpenSSLCommand.run(["asn1parse", "-genconf", "payload.cnf", "-out", "payload.der", "-noout"], in: directory)
        try await OpenSSLCommand.run(
            ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", "key.pem", "-out", "cert.pem",
             "-subj", "/CN=receipt test", "-days", "1"], in: directory)
        let der = try await OpenSSLCommand.run(
            ["smime", "-sign", "-binary", "-nodetach", "-outform", "DER", "-in", "payload.der", "-signer", "cert.pem", "-inkey", "key.pem"],
            in: directory)
        return Data(der).base64EncodedString()
    }

    /// Receipt attributes in `openssl asn1parse -genconf` syntax: `name` holds a SEQUENCE
    /// { type, 1, OCTET STRING wrapping `value` }.
    func attribute(_ name: String, type: Int, _ value: String) -> String {
        "[\(name)]\ntype = INTEGER:\(type)\nversion = INTEGER:1\nvalue = OCTWRAP,\(value)\n"
    }

    @Test("as Apple's library: the last in-app purchase (encoded order), in it the last of 1703/1705; IA5String too; odd shapes skipped")
    func choice() async throws {
        // DER sorts a SET: iap2 (longer) comes after iap1, and in iap2 1705 after 1703.
        let config = """
            asn1 = SET:receipt
            [receipt]
            a1 = SEQUENCE:bundle
            a2 = SEQUENCE:iap1
            a3 = SEQUENCE:iap2
            a4 = SEQUENCE:short
            a5 = INTEGER:5
            [short]
            type = INTEGER:17
            version = INTEGER:1
            \(attribute("bundle", type: 2, "UTF8String:com.example"))
            \(attribute("iap1", type: 17, "SET:iap1set"))
            [iap1set]
            t1 = SEQUENCE:tid1
            \(attribute("tid1", type: 1703, "IA5String:1000000000000001"))
            \(attribute("iap2", type: 17, "SET:iap2set"))
            [iap2set]
            t1 = SEQUENCE:tid2
            t2 = SEQUENCE:otid2
            \(attribute("tid2", type: 1703, "UTF8String:2000000000000002"))
            \(attribute("otid2", type: 1705, "UTF8String:2000000000000001"))

            """
        let made1 = try await receipt(payload: config)

        #expect(try ReceiptTransactionID.extract(fromAppReceipt: made1) == "2000000000000001")
        let onlyFirst = config.replacingOccurrences(of: "a3 = SEQUENCE:iap2\n", with: "")
        let made2 = try await receipt(payload: onlyFirst)

        #expect(try ReceiptTransactionID.extract(fromAppReceipt: made2) == "1000000000000001")
    }

    @Test("our one deviation: a later in-app purchase without an id keeps the id found before (Apple's would answer nil)")
    func laterPurchaseWithoutID() async throws {
        let config = """
            asn1 = SET:receipt
            [receipt]
            a1 = SEQUENCE:iap1
            a2 = SEQUENCE:iap2
            \(attribute("iap1", type: 17, "SET:iap1set"))
            [iap1set]
            t1 = SEQUENCE:tid1
            \(attribute("tid1", type: 1703, "UTF8String:1000000000000001"))
            \(attribute("iap2", type: 17, "SET:iap2set"))
            [iap2set]
            t1 = SEQUENCE:product
            \(attribute("product", type: 1702, "UTF8String:com.example.a.rather.long.product.identifier"))

            """
        let made3 = try await receipt(payload: config)

        #expect(try ReceiptTransactionID.extract(fromAppReceipt: made3) == "1000000000000001")
    }

    @Test("a payload that is not a SET, or an in-app entry that is not one → malformedPayload")
    func malformedPayload() async throws {
        let notASet = try await receipt(payload: "asn1 = SEQUENCE:s\n[s]\na = INTEGER:1\n")
        #expect(throws: ReceiptExtractionError.malformedPayload("the receipt payload is not one whole ASN.1 SET")) {
            try ReceiptTransactionID.extract(fromAppReceipt: notASet)
        }
        let badInApp = """
            asn1 = SET:receipt
            [receipt]
            a1 = SEQUENCE:iap
            \(attribute("iap", type: 17, "UTF8String:not a set"))

            """
        let badEntry = try await receipt(payload: badInApp)
        #expect(throws: ReceiptExtractionError.malformedPayload("an in-app purchase entry is not one whole ASN.1 SET")) {
            try ReceiptTransactionID.extract(fromAppReceipt: badEntry)
        }
    }

    @Test("transaction receipts: purchase-info or transaction-id absent → nil; purchase-info not base64 → error")
    func legacyShapes() throws {
        func encode(_ text: String) -> String { Data(text.utf8).base64EncodedString() }
        #expect(try ReceiptTransactionID.extract(fromTransactionReceipt: encode(#"{ "signature" = "AAAA"; }"#)) == nil)
        let info = encode(#"{ "original-transaction-id" = "1"; }"#)
        #expect(try ReceiptTransactionID.extract(fromTransactionReceipt: encode(#"{ "purchase-info" = "\#(info)"; }"#)) == nil)
        let good = encode("{\n\t\"transaction-id\" = \"1000000012345678\";\n}")
        #expect(try ReceiptTransactionID.extract(fromTransactionReceipt: encode("{\n\t\"purchase-info\" = \"\(good)\";\n}")) == "1000000012345678")
        #expect(throws: ReceiptExtractionError.notBase64("the receipt's purchase-info")) {
            try ReceiptTransactionID.extract(fromTransactionReceipt: encode(#"{ "purchase-info" = "abc"; }"#))
        }
    }
}
