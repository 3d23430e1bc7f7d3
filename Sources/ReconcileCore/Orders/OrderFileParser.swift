import Foundation
import ReconcileFoundation

/// Reads one order file (UTF-8 JSON object, DESIGN §3) into an ``OrderSubmission``, or says
/// precisely why it cannot.
///
/// The daemon's spool ingest and `reconcilectl submit` both use this parser, so a file the CLI
/// accepts is a file the daemon accepts.
///
/// Lengths are counted in UTF-8 bytes, never in `Character`s: a product id of one letter and
/// 400,000 combining marks is one "character" and 800 KB. Every field that reaches a log line, a
/// terminal row or the escalation command's environment is bounded in bytes and free of control
/// and format (bidi) characters, and none may start with a combining mark.
public struct OrderFileParser: Sendable {
    /// In bytes; order ids are ASCII.
    public static let orderIDMaximumLength = 128
    /// In UTF-8 bytes.
    public static let productIDMaximumLength = 255
    /// In UTF-8 bytes: bounds for the optional free-text fields.
    public static let textFieldMaximumLength = 255
    /// In UTF-8 bytes.
    public static let transactionIDMaximumLength = 128
    /// In bytes (printable ASCII).
    public static let purchaseTokenMaximumLength = 4096

    public init() {}

    /// Validates `bytes` as an order file.
    ///
    /// - Throws: ``OrderFileProblem`` naming the first thing that is wrong.
    public func parse(_ bytes: some Collection<UInt8>) throws(OrderFileProblem) -> OrderSubmission {
        let bytes = Array(bytes)
        guard !bytes.isEmpty else {
            throw OrderFileProblem(.emptyFile, "the file is empty (0 bytes)")
        }
        if let nul = bytes.firstIndex(of: 0) {
            throw OrderFileProblem(.nulByte, "NUL byte at offset \(nul); an order file is UTF-8 JSON text")
        }
        if let invalid = UTF8Validation.firstInvalidOffset(in: bytes) {
            throw OrderFileProblem(.notUTF8, "invalid UTF-8 at byte offset \(invalid)")
        }
        let document: JSONValue
        do {
            document = try JSONParser().parse(bytes)
        } catch {
            throw OrderFileProblem(.notJSON, "not valid JSON: \(error)")
        }
        guard case .object(let object) = document else {
            throw OrderFileProblem(.notObject, "the file holds a JSON \(document.typeName); an order is a JSON object")
        }
        return try submission(from: object)
    }

    private func submission(from object: JSONObject) throws(OrderFileProblem) -> OrderSubmission {
        let fields = Fields(object: object)
        let orderID = try fields.required("order_id")
        try Self.validateOrderID(orderID)
        let productID = try fields.required("product_id")
        try Self.checkLength(productID, key: "product_id", maximum: Self.productIDMaximumLength)
        try Self.checkPrintable(productID, key: "product_id")

        let receipt = try fields.optional("receipt")
        if let receipt { try Self.validateBase64(receipt, key: "receipt") }
        let transactionID = try fields.optional("transaction_id")
        if let transactionID {
            try Self.checkLength(transactionID, key: "transaction_id", maximum: Self.transactionIDMaximumLength)
            try Self.checkPrintable(transactionID, key: "transaction_id")
        }
        let signedTransaction = try fields.optional("signed_transaction")
        if let signedTransaction { try Self.validateCompactJWS(signedTransaction) }
        let purchaseToken = try fields.optional("purchase_token")
        if let purchaseToken { try Self.validatePurchaseToken(purchaseToken) }
        let packageName = try fields.optional("package_name")
        if let packageName, let problem = AndroidPackageName.problem(packageName) {
            throw OrderFileProblem(.invalidField, "\"package_name\" \(problem), got \(Self.quoted(packageName))")
        }

        let applicationUsername = try fields.optional("application_username")
        if let applicationUsername {
            try Self.checkLength(applicationUsername, key: "application_username", maximum: Self.textFieldMaximumLength)
            try Self.checkPrintable(applicationUsername, key: "application_username")
        }
        let userID = try fields.optional("user_id")
        if let userID {
            try Self.checkLength(userID, key: "user_id", maximum: Self.textFieldMaximumLength)
            try Self.checkPrintable(userID, key: "user_id")
        }
        let amount = try fields.optional("amount")
        if let amount, !Self.isDecimal(amount) {
            throw OrderFileProblem(
                .invalidField, "\"amount\" must be a decimal string such as \"4.99\", got \(Self.quoted(amount))")
        }
        let currency = try fields.optional("currency")
        if let currency, !Self.isCurrencyCode(currency) {
            throw OrderFileProblem(
                .invalidField, "\"currency\" must be a three-letter ISO 4217 code such as \"EUR\", got \(Self.quoted(currency))")
        }
        var createdAt: Date?
        if let text = try fields.optional("created_at") {
            guard let date = RFC3339.parse(text) else {
                throw OrderFileProblem(
                    .invalidField,
                    "\"created_at\" must be an RFC 3339 time such as \"2026-11-30T07:26:06Z\", got \(Self.quoted(text))")
            }
            createdAt = date
        }
        return OrderSubmission(
            orderID: orderID, productID: productID,
            proof: OrderProof(
                receipt: receipt, transactionID: transactionID, signedTransaction: signedTransaction, purchaseToken: purchaseToken,
                packageName: packageName),
            applicationUsername: applicationUsername, userID: userID, amount: amount, currency: currency,
            createdAt: createdAt)
    }

    // MARK: - Field rules

    /// Checks the `order_id` rule: 1–128 of `A-Za-z0-9._:-`.
    public static func validateOrderID(_ orderID: String) throws(OrderFileProblem) {
        guard !orderID.isEmpty else { throw OrderFileProblem(.invalidField, "\"order_id\" is empty") }
        try checkLength(orderID, key: "order_id", maximum: orderIDMaximumLength)
        for (position, scalar) in orderID.unicodeScalars.enumerated() where !isOrderIDScalar(scalar) {
            throw OrderFileProblem(
                .invalidField,
                "\"order_id\" contains \(describe(scalar)) at position \(position + 1); only A-Z a-z 0-9 . _ : - are allowed")
        }
    }

    /// Whether `text` is a valid order id.
    public static func isValidOrderID(_ text: String) -> Bool {
        (try? validateOrderID(text)) != nil
    }

    static func isOrderIDScalar(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar {
        case "A"..."Z", "a"..."z", "0"..."9", ".", "_", ":", "-": true
        default: false
        }
    }

    /// Checks that `text` is 1 to `maximum` UTF-8 bytes long.
    static func checkLength(_ text: String, key: String, maximum: Int) throws(OrderFileProblem) {
        let bytes = text.utf8.count
        guard bytes >= 1 else { throw OrderFileProblem(.invalidField, "\"\(key)\" is empty") }
        guard bytes <= maximum else {
            throw OrderFileProblem(
                .invalidField, "\"\(key)\" is \(bytes) bytes long (UTF-8); at most \(maximum) are allowed")
        }
    }

    /// Checks that `text` holds no control or format (bidi, zero-width) character and does not
    /// start with a combining mark. Positions are one-based, in Unicode scalars.
    static func checkPrintable(_ text: String, key: String) throws(OrderFileProblem) {
        for (position, scalar) in text.unicodeScalars.enumerated() {
            if isControl(scalar) {
                throw OrderFileProblem(
                    .invalidField, "\"\(key)\" contains control character \(PrintableText.codePoint(scalar)) at position \(position + 1)")
            }
            if PrintableText.isFormat(scalar) {
                throw OrderFileProblem(
                    .invalidField,
                    "\"\(key)\" contains format character \(PrintableText.codePoint(scalar)) at position \(position + 1) "
                        + "(bidi controls and invisible characters are not allowed)")
            }
            if position == 0 && PrintableText.isCombiningMark(scalar) {
                throw OrderFileProblem(
                    .invalidField, "\"\(key)\" starts with combining mark \(PrintableText.codePoint(scalar)), which has no character to join")
            }
        }
    }

    static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        PrintableText.isControl(scalar)
    }

    /// A receipt is standard base64; line breaks (as some encoders insert) are tolerated. The
    /// message names the position only: receipt content never appears in a reason.
    static func validateBase64(_ text: String, key: String) throws(OrderFileProblem) {
        var significant = 0
        var padding = 0
        var position = 0
        // Receipts run to kilobytes and are ASCII: walk the UTF-8 bytes, not Unicode scalars.
        for byte in text.utf8 {
            position += 1
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "+"), UInt8(ascii: "/"):
                guard padding == 0 else {
                    throw OrderFileProblem(.invalidField, "\"\(key)\" is not base64: data after '=' padding at position \(position)")
                }
                significant += 1
            case UInt8(ascii: "="):
                padding += 1
                guard padding <= 2 else {
                    throw OrderFileProblem(.invalidField, "\"\(key)\" is not base64: too much '=' padding")
                }
            case UInt8(ascii: "\n"), UInt8(ascii: "\r"), UInt8(ascii: " "), UInt8(ascii: "\t"):
                continue
            default:
                throw OrderFileProblem(
                    .invalidField, "\"\(key)\" is not base64: unexpected character at position \(Self.scalarPosition(ofByte: position, in: text))")
            }
        }
        guard significant > 0 else { throw OrderFileProblem(.invalidField, "\"\(key)\" is empty") }
        guard (significant + padding) % 4 == 0 || padding == 0 else {
            throw OrderFileProblem(.invalidField, "\"\(key)\" is not base64: its length is not a multiple of 4")
        }
        guard significant % 4 != 1 else {
            throw OrderFileProblem(.invalidField, "\"\(key)\" is not base64: it is truncated")
        }
    }

    /// The one-based character position of the character starting at one-based UTF-8 byte
    /// `byte` (they differ after non-ASCII characters).
    static func scalarPosition(ofByte byte: Int, in text: String) -> Int {
        var bytes = 0
        for (index, scalar) in text.unicodeScalars.enumerated() {
            bytes += UTF8.width(scalar)
            if bytes >= byte { return index + 1 }
        }
        return byte
    }

    /// A signed transaction is a compact JWS: three base64url parts joined by dots.
    static func validateCompactJWS(_ text: String) throws(OrderFileProblem) {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, parts.allSatisfy({ !$0.isEmpty }) else {
            throw OrderFileProblem(
                .invalidField, "\"signed_transaction\" is not a compact JWS (three base64url parts joined by '.')")
        }
        for (index, part) in parts.enumerated() {
            for scalar in part.unicodeScalars {
                switch scalar {
                case "A"..."Z", "a"..."z", "0"..."9", "-", "_": continue
                default:
                    throw OrderFileProblem(
                        .invalidField, "\"signed_transaction\" part \(index + 1) is not base64url")
                }
            }
        }
    }

    /// A purchase token is 1–4096 printable ASCII characters (space to `~`). Like a receipt, its
    /// content never appears in a reason: only the position of what is wrong.
    static func validatePurchaseToken(_ text: String) throws(OrderFileProblem) {
        let bytes = text.utf8.count
        guard bytes >= 1 else { throw OrderFileProblem(.invalidField, "\"purchase_token\" is empty") }
        guard bytes <= purchaseTokenMaximumLength else {
            throw OrderFileProblem(
                .invalidField, "\"purchase_token\" is \(bytes) bytes long; at most \(purchaseTokenMaximumLength) are allowed")
        }
        for (offset, byte) in text.utf8.enumerated() where !(0x20...0x7E).contains(byte) {
            throw OrderFileProblem(
                .invalidField,
                "\"purchase_token\" holds a character that is not printable ASCII at position \(scalarPosition(ofByte: offset + 1, in: text))")
        }
    }

    static func isDecimal(_ text: String) -> Bool {
        let scalars = Array(text.unicodeScalars)
        guard !scalars.isEmpty, scalars.count <= 32 else { return false }
        var index = scalars[0] == "-" ? 1 : 0
        var digitsBefore = 0
        while index < scalars.count, ("0"..."9").contains(scalars[index]) {
            digitsBefore += 1
            index += 1
        }
        guard digitsBefore > 0 else { return false }
        if index == scalars.count { return true }
        guard scalars[index] == "." else { return false }
        index += 1
        var digitsAfter = 0
        while index < scalars.count, ("0"..."9").contains(scalars[index]) {
            digitsAfter += 1
            index += 1
        }
        return digitsAfter > 0 && index == scalars.count
    }

    static func isCurrencyCode(_ text: String) -> Bool {
        text.unicodeScalars.count == 3 && text.unicodeScalars.allSatisfy { ("A"..."Z").contains($0) }
    }

    static func describe(_ scalar: Unicode.Scalar) -> String {
        if isControl(scalar) || PrintableText.isFormat(scalar) || PrintableText.isCombiningMark(scalar) || scalar == " " {
            return PrintableText.codePoint(scalar) + (scalar == " " ? " (space)" : "")
        }
        return "'\(scalar)'"
    }

    /// A value quoted for an error message, cut to 40 Unicode scalars, control and format
    /// characters shown as '?'.
    public static func quoted(_ text: String) -> String {
        "\"" + PrintableText.excerpt(text, maximumScalars: 40, replacement: "?") + "\""
    }
}

/// Typed access to the members of an order file's object.
private struct Fields {
    let object: JSONObject

    func required(_ key: String) throws(OrderFileProblem) -> String {
        guard let value = object[key] else {
            throw OrderFileProblem(.missingField, "required key \"\(key)\" is missing")
        }
        guard case .string(let text) = value else {
            throw OrderFileProblem(.invalidField, "\"\(key)\" must be a string, not \(article(value.typeName))")
        }
        return text
    }

    /// An optional string field; JSON `null` counts as absent.
    func optional(_ key: String) throws(OrderFileProblem) -> String? {
        guard let value = object[key] else { return nil }
        switch value {
        case .null: return nil
        case .string(let text): return text
        default:
            throw OrderFileProblem(.invalidField, "\"\(key)\" must be a string, not \(article(value.typeName))")
        }
    }

    func article(_ typeName: String) -> String {
        ["array", "object"].contains(typeName) ? "an \(typeName)" : "a \(typeName)"
    }
}
