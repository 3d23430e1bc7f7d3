// Fuzz target: an order file as the spool ingest and `reconcilectl submit` read it
// (OrderFileParser), then what the daemon does with an accepted order: store its fields, send
// them to the merchant as JSON, show its times.
import Foundation
import ReconcileCore
import ReconcileFoundation

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOrderFile(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    OrderFileTarget.run(inputBytes(data, size))
    return 0
}

enum OrderFileTarget {
    static let parser = OrderFileParser()
    /// The codes the parser itself may give; the others belong to the file reader and the store.
    static let parserCodes: Set<OrderFileProblem.Code> = [
        .emptyFile, .nulByte, .notUTF8, .notJSON, .notObject, .missingField, .invalidField,
    ]

    static func run(_ bytes: [UInt8]) {
        do {
            let submission = try parser.parse(bytes)
            checkAccepted(submission, bytes)
        } catch {
            checkRefused(error, bytes)
        }
    }

    static func checkAccepted(_ order: OrderSubmission, _ bytes: [UInt8]) {
        invariant(OrderFileParser.isValidOrderID(order.orderID), "accepted an invalid order id")
        // Every text field that reaches a log line, a terminal row or an environment variable is
        // bounded in bytes and free of control and format (bidi) characters (issue 13, item 6).
        for (name, value, limit) in [
            ("product id", order.productID, OrderFileParser.productIDMaximumLength),
            ("transaction id", order.proof.transactionID, OrderFileParser.transactionIDMaximumLength),
            ("application username", order.applicationUsername, OrderFileParser.textFieldMaximumLength),
            ("user id", order.userID, OrderFileParser.textFieldMaximumLength),
        ] {
            guard let value else { continue }
            invariant((1...limit).contains(value.utf8.count), "accepted a \(name) of \(value.utf8.count) bytes")
            invariant(
                !value.unicodeScalars.contains(where: { PrintableText.isControl($0) || PrintableText.isFormat($0) }),
                "accepted a \(name) with a control or format character")
            invariant(!(value.unicodeScalars.first.map(PrintableText.isCombiningMark) ?? false), "accepted a \(name) starting with a combining mark")
        }
        invariant(String(validating: bytes, as: UTF8.self) != nil, "accepted a file that is not UTF-8")

        // The order's id and product are the file's, character for character.
        guard case .object(let object)? = try? JSONParser().parse(bytes) else {
            invariant(false, "accepted a file the JSON parser refuses")
            return
        }
        invariant(object["order_id"] == .string(order.orderID), "order id does not round-trip")
        invariant(object["product_id"] == .string(order.productID), "product id does not round-trip")
        invariant(object["receipt"]?.stringValue == order.proof.receipt, "receipt does not round-trip")

        // What the merchant verifier sends (MerchantVerifier.body) is an order file again: written
        // out and read back, it is the same order.
        let written = JSONWriter.bytes(.object(JSONObject([
            "order_id": .string(order.orderID), "product_id": .string(order.productID),
            "receipt": .string(orNull: order.proof.receipt), "transaction_id": .string(orNull: order.proof.transactionID),
            "signed_transaction": .string(orNull: order.proof.signedTransaction),
            "application_username": .string(orNull: order.applicationUsername), "user_id": .string(orNull: order.userID),
            "amount": .string(orNull: order.amount), "currency": .string(orNull: order.currency),
        ])))
        do {
            var again = try parser.parse(written)
            again.createdAt = order.createdAt
            invariant(again == order, "the order written out reads back differently")
        } catch {
            invariant(false, "the order written out is refused: \(error)")
        }

        // Times as the store and `reconcilectl show` turn them into text.
        if let createdAt = order.createdAt {
            let text = RFC3339.formatWithMilliseconds(createdAt)
            _ = RFC3339.format(createdAt)
            if let back = RFC3339.parse(text) {
                invariant(abs(back.timeIntervalSince(createdAt)) < 0.002, "created_at does not round-trip through RFC 3339")
            }
        }
        for kind in VerifierKind.allCases { _ = order.proof.isUsable(by: kind) }
    }

    static func checkRefused(_ problem: OrderFileProblem, _ bytes: [UInt8]) {
        invariant(parserCodes.contains(problem.code), "the parser gave \(problem.code)")
        invariant((problem.code == .emptyFile) == bytes.isEmpty, "empty_file for a file that is not empty, or the reverse")
        if problem.code == .nulByte { invariant(bytes.contains(0), "nul_byte without a NUL byte") }
        // The standard library's UTF-8 validation is the judge of not_utf8.
        let isUTF8 = String(validating: bytes, as: UTF8.self) != nil
        switch problem.code {
        case .notUTF8: invariant(!isUTF8, "not_utf8 for valid UTF-8")
        case .notJSON, .notObject, .missingField, .invalidField: invariant(isUTF8, "\(problem.code) for a file that is not UTF-8")
        default: break
        }
        invariant(!hasLineBreak(problem.detail), "the reason spans lines: \(problem.detail)")

        // A receipt never appears in a reason (DESIGN §3, README "Rejected files"). Checked where
        // that is unambiguous: the file has no escapes, so the receipt is written as is, and its
        // text occurs only once, so no other field (which may be quoted) repeats it.
        if !bytes.contains(UInt8(ascii: "\\")),
            case .object(let object)? = try? JSONParser(allowsDuplicateKeys: true).parse(bytes),
            let receipt = object["receipt"]?.stringValue, receipt.utf8.count >= 8,
            occurrences(of: Array(receipt.utf8), in: bytes) == 1
        {
            invariant(
                !problem.detail.contains(receipt) || reasonWithout(receipt, in: bytes).contains(receipt),
                "the reason quotes the receipt: \(problem.detail)")
        }
    }

    /// The reason the parser gives for `bytes` with the receipt's one occurrence replaced by as
    /// many `Z`s: text of its own (a key's name, "product_id") that the receipt happens to equal
    /// is in both, a receipt the reason quoted only in the first.
    static func reasonWithout(_ receipt: String, in bytes: [UInt8]) -> String {
        let needle = Array(receipt.utf8)
        guard let start = (0...(bytes.count - needle.count)).first(where: { bytes[$0..<$0 + needle.count].elementsEqual(needle) }) else { return "" }
        var masked = bytes
        masked.replaceSubrange(start..<start + needle.count, with: [UInt8](repeating: UInt8(ascii: "Z"), count: needle.count))
        do {
            _ = try OrderFileParser().parse(masked)
            return ""
        } catch {
            return error.detail
        }
    }

    static func occurrences(of needle: [UInt8], in haystack: [UInt8]) -> Int {
        guard !needle.isEmpty, haystack.count >= needle.count else { return 0 }
        var count = 0
        for start in 0...(haystack.count - needle.count) where haystack[start] == needle[0] {
            if haystack[start..<start + needle.count].elementsEqual(needle) { count += 1 }
        }
        return count
    }
}
