import Foundation
import Testing
@testable import ReconcileCore
import ReconcileFoundation

@Suite("Order file parser")
struct OrderFileParserTests {
    let parser = OrderFileParser()

    func parse(_ text: String) throws(OrderFileProblem) -> OrderSubmission {
        try parser.parse(Array(text.utf8))
    }

    func problem(_ bytes: [UInt8]) -> OrderFileProblem? {
        do {
            _ = try parser.parse(bytes)
            return nil
        } catch {
            return error
        }
    }

    func problem(_ text: String) -> OrderFileProblem? { problem(Array(text.utf8)) }

    @Test("reads every field of a complete order")
    func complete() throws {
        let order = try parse(
            """
            {"order_id": "A1001:x.y_z-9", "product_id": "com.example.gems 100", "receipt": "QUJD\\nREVG",
             "transaction_id": "1000000118990828", "signed_transaction": "eyJh.eyJi.c2ln",
             "application_username": "2f7c8e3a-1111-4222-8333-944455556666", "user_id": "u-7",
             "amount": "4.99", "currency": "EUR", "created_at": "2026-11-30T07:26:06.5+01:00",
             "extra": {"kept": "in the raw copy"}}
            """)
        #expect(order.orderID == "A1001:x.y_z-9")
        #expect(order.productID == "com.example.gems 100")
        #expect(order.proof == OrderProof(receipt: "QUJD\nREVG", transactionID: "1000000118990828", signedTransaction: "eyJh.eyJi.c2ln"))
        #expect(order.applicationUsername == "2f7c8e3a-1111-4222-8333-944455556666")
        #expect(order.userID == "u-7")
        #expect(order.amount == "4.99")
        #expect(order.currency == "EUR")
        #expect(order.createdAt == RFC3339.parse("2026-11-30T06:26:06.5Z"))
    }

    @Test("treats null optional fields as absent")
    func nulls() throws {
        let order = try parse(#"{"order_id":"A","product_id":"p","receipt":null,"user_id":null}"#)
        #expect(order.proof.isEmpty)
        #expect(order.userID == nil)
    }

    @Test(
        "says exactly what is wrong",
        arguments: [
            ("", OrderFileProblem.Code.emptyFile, "the file is empty (0 bytes)"),
            ("  \n", .notJSON, "not valid JSON: no JSON value, only whitespace at line 2, column 1"),
            ("{\"order_id\": \"A\", ", .notJSON, "not valid JSON: unexpected end of input inside an object at line 1, column 19"),
            ("[1]", .notObject, "the file holds a JSON array; an order is a JSON object"),
            ("\"x\"", .notObject, "the file holds a JSON string; an order is a JSON object"),
            ("{\"product_id\":\"p\"}", .missingField, "required key \"order_id\" is missing"),
            ("{\"order_id\":\"A\"}", .missingField, "required key \"product_id\" is missing"),
            ("{\"order_id\":7,\"product_id\":\"p\"}", .invalidField, "\"order_id\" must be a string, not a number"),
            ("{\"order_id\":null,\"product_id\":\"p\"}", .invalidField, "\"order_id\" must be a string, not a null"),
            ("{\"order_id\":\"\",\"product_id\":\"p\"}", .invalidField, "\"order_id\" is empty"),
            ("{\"order_id\":\"A 1\",\"product_id\":\"p\"}", .invalidField,
             "\"order_id\" contains U+0020 (space) at position 2; only A-Z a-z 0-9 . _ : - are allowed"),
            ("{\"order_id\":\"A/1\",\"product_id\":\"p\"}", .invalidField,
             "\"order_id\" contains '/' at position 2; only A-Z a-z 0-9 . _ : - are allowed"),
            ("{\"order_id\":\"Aé\",\"product_id\":\"p\"}", .invalidField,
             "\"order_id\" contains 'é' at position 2; only A-Z a-z 0-9 . _ : - are allowed"),
            ("{\"order_id\":\"A\",\"product_id\":\"\"}", .invalidField, "\"product_id\" is empty"),
            ("{\"order_id\":\"A\",\"product_id\":\"a\\u0007b\"}", .invalidField, "\"product_id\" contains control character U+0007 at position 2"),
            ("{\"order_id\":\"A\",\"product_id\":[\"p\"]}", .invalidField, "\"product_id\" must be a string, not an array"),
            ("{\"order_id\":\"A\",\"product_id\":\"p\",\"receipt\":\"QU%D\"}", .invalidField,
             "\"receipt\" is not base64: unexpected character at position 3"),
            ("{\"order_id\":\"A\",\"product_id\":\"p\",\"receipt\":\"QUJDR\"}", .invalidField, "\"receipt\" is not base64: it is truncated"),
            ("{\"order_id\":\"A\",\"product_id\":\"p\",\"receipt\":\"\"}", .invalidField, "\"receipt\" is empty"),
            ("{\"order_id\":\"A\",\"product_id\":\"p\",\"signed_transaction\":\"abc\"}", .invalidField,
             "\"signed_transaction\" is not a compact JWS (three base64url parts joined by '.')"),
            ("{\"order_id\":\"A\",\"product_id\":\"p\",\"amount\":\"4,99\"}", .invalidField,
             "\"amount\" must be a decimal string such as \"4.99\", got \"4,99\""),
            ("{\"order_id\":\"A\",\"product_id\":\"p\",\"currency\":\"eur\"}", .invalidField,
             "\"currency\" must be a three-letter ISO 4217 code such as \"EUR\", got \"eur\""),
            ("{\"order_id\":\"A\",\"product_id\":\"p\",\"created_at\":\"yesterday\"}", .invalidField,
             "\"created_at\" must be an RFC 3339 time such as \"2026-11-30T07:26:06Z\", got \"yesterday\""),
            ("{\"order_id\":\"A\",\"order_id\":\"B\",\"product_id\":\"p\"}", .notJSON,
             "not valid JSON: duplicate key \"order_id\" at line 1, column 17"),
        ])
    func problems(text: String, code: OrderFileProblem.Code, detail: String) {
        let found = problem(text)
        #expect(found?.code == code)
        #expect(found?.detail == detail)
    }

    @Test("finds NUL bytes and invalid UTF-8 by offset")
    func binary() {
        #expect(problem([0x7B, 0x00, 0x7D]) == OrderFileProblem(.nulByte, "NUL byte at offset 1; an order file is UTF-8 JSON text"))
        #expect(problem([0x7B, 0x22, 0xFF, 0x22]) == OrderFileProblem(.notUTF8, "invalid UTF-8 at byte offset 2"))
    }

    @Test("bounds lengths")
    func lengths() throws {
        let longID = String(repeating: "a", count: 129)
        #expect(problem("{\"order_id\":\"\(longID)\",\"product_id\":\"p\"}")?.detail == "\"order_id\" is 129 bytes long (UTF-8); at most 128 are allowed")
        _ = try parse("{\"order_id\":\"\(String(longID.dropFirst()))\",\"product_id\":\"\(String(repeating: "p", count: 255))\"}")
        #expect(problem("{\"order_id\":\"A\",\"product_id\":\"\(String(repeating: "p", count: 256))\"}")?.code == .invalidField)
    }

    @Test("lengths are UTF-8 bytes, not characters: a product id of one letter and 400,000 combining marks is refused")
    func graphemeClusters() throws {
        let marks = String(repeating: "\u{0301}", count: 400_000)
        let zalgo = problem("{\"order_id\":\"A\",\"product_id\":\"z\(marks)\"}")
        #expect(zalgo?.code == .invalidField)
        #expect(zalgo?.detail == "\"product_id\" is 800001 bytes long (UTF-8); at most 255 are allowed")
        // One grapheme cluster of 300,001 code points as a transaction id.
        let transaction = problem("{\"order_id\":\"A\",\"product_id\":\"p\",\"transaction_id\":\"1\(String(repeating: "\u{0308}", count: 300_000))\"}")
        #expect(transaction?.detail == "\"transaction_id\" is 600001 bytes long (UTF-8); at most 128 are allowed")
        // 255 bytes of three-byte characters is 85 characters: accepted; one more is not.
        let wide = String(repeating: "€", count: 85)
        #expect(try parse("{\"order_id\":\"A\",\"product_id\":\"\(wide)\"}").productID == wide)
        #expect(problem("{\"order_id\":\"A\",\"product_id\":\"\(wide)€\"}")?.detail == "\"product_id\" is 258 bytes long (UTF-8); at most 255 are allowed")
        // Each free-text field, and every message quoting a value, is bounded the same way.
        for key in ["application_username", "user_id"] {
            #expect(problem("{\"order_id\":\"A\",\"product_id\":\"p\",\"\(key)\":\"u\(String(repeating: "\u{0301}", count: 200))\"}")?.code == .invalidField)
        }
        let quoted = OrderFileParser.quoted("a" + String(repeating: "\u{0301}", count: 10_000))
        #expect(quoted.unicodeScalars.count == 43)
    }

    @Test(
        "ids refuse bidi controls and other format characters, and combining marks with nothing to join",
        arguments: [
            ("product_id", "gems\u{202E}001", "\"product_id\" contains format character U+202E at position 5 (bidi controls and invisible characters are not allowed)"),
            ("product_id", "\u{2066}gems", "\"product_id\" contains format character U+2066 at position 1 (bidi controls and invisible characters are not allowed)"),
            ("product_id", "ge\u{200B}ms", "\"product_id\" contains format character U+200B at position 3 (bidi controls and invisible characters are not allowed)"),
            ("product_id", "\u{FEFF}gems", "\"product_id\" contains format character U+FEFF at position 1 (bidi controls and invisible characters are not allowed)"),
            ("product_id", "\u{0301}gems", "\"product_id\" starts with combining mark U+0301, which has no character to join"),
            ("transaction_id", "1000\u{202E}", "\"transaction_id\" contains format character U+202E at position 5 (bidi controls and invisible characters are not allowed)"),
            ("user_id", "\u{200F}u", "\"user_id\" contains format character U+200F at position 1 (bidi controls and invisible characters are not allowed)"),
            ("application_username", "x\u{0085}", "\"application_username\" contains control character U+0085 at position 2"),
        ])
    func formatCharacters(key: String, value: String, detail: String) throws {
        var object = JSONObject()
        object["order_id"] = .string("A")
        object["product_id"] = .string("p")
        object[key] = .string(value)
        let found = problem(Array(JSONWriter.string(.object(object)).utf8))
        #expect(found?.code == .invalidField)
        #expect(found?.detail == detail)
    }

    @Test("accented and non-Latin product ids stay valid: a combining mark after its letter is fine")
    func validUnicode() throws {
        for product in ["café", "cafe\u{0301}", "宝石.100", "алмазы", "💎 pack"] {
            let json = JSONWriter.string(.object(JSONObject(["order_id": .string("A"), "product_id": .string(product)])))
            #expect(try parser.parse(Array(json.utf8)).productID == product)
        }
    }

    @Test("never repeats a receipt in its message")
    func noReceiptInMessages() {
        let secret = "U0VDUkVUUkVDRUlQVA%%"
        let found = problem("{\"order_id\":\"A\",\"product_id\":\"p\",\"receipt\":\"\(secret)\"}")
        #expect(found != nil)
        #expect(!(found?.detail.contains("U0VDUkVU") ?? true))
    }

    @Test("order id rule")
    func orderIDs() {
        #expect(OrderFileParser.isValidOrderID("A-1_2.3:4"))
        #expect(!OrderFileParser.isValidOrderID("A 1"))
        #expect(!OrderFileParser.isValidOrderID(""))
    }

    @Test("proof usable per verifier kind")
    func usableProof() {
        let receipt = OrderProof(receipt: "QUJD")
        let transaction = OrderProof(transactionID: "1")
        let signed = OrderProof(signedTransaction: "a.b.c")
        #expect(receipt.isUsable(by: .apple) && receipt.isUsable(by: .http) && receipt.isUsable(by: .appstore))
        #expect(!transaction.isUsable(by: .apple) && transaction.isUsable(by: .http) && transaction.isUsable(by: .appstore))
        #expect(!signed.isUsable(by: .apple) && !signed.isUsable(by: .http) && signed.isUsable(by: .appstore))
        #expect(!OrderProof().isUsable(by: .appstore))
    }
}
