// Fuzz target: Apple's verifyReceipt answers, down the path AppleVerifier takes: the production
// answer is parsed and classified; a bounce sends the same receipt to the sandbox, whose answer
// (the part after the first 0xFF byte of the input) is classified afresh; a valid receipt is
// checked for the bundle id and its purchases matched against an order (ReceiptMatcher, which
// the store runs when it claims the transaction).
import Foundation
import ReconcileCore

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzAppleAnswer(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    AppleAnswerTarget.run(inputBytes(data, size))
    return 0
}

enum AppleAnswerTarget {
    static let bundleID = "com.example.app"

    static func run(_ input: [UInt8]) {
        let parts = splitAtFF(input)
        let production = parts[0]
        let sandbox = parts.count > 1 ? parts[1] : nil

        guard let answer = parse(production) else { return }
        let first = AppleAnswerClassifier.classify(answer, from: .production, mayBounce: true)
        check(first, answer, body: production, from: .production, mayBounce: true)
        // AppleVerifier.exchange classifies each answer once more for the endpoint's health,
        // always with mayBounce: true, whichever environment answered.
        _ = AppleAnswerClassifier.classify(answer, from: .sandbox, mayBounce: true)

        switch first {
        case .bounce(let environment, _):
            invariant(environment == .sandbox, "production bounced to \(environment)")
            guard let sandbox, let second = parse(sandbox) else { return }
            let verdict = AppleAnswerClassifier.classify(second, from: .sandbox, mayBounce: false)
            check(verdict, second, body: sandbox, from: .sandbox, mayBounce: false)
            if verdict == .valid { match(second) }
        case .valid:
            match(answer)
        default:
            break
        }
    }

    static func parse(_ body: [UInt8]) -> AppleReceiptAnswer? {
        do {
            return try AppleReceiptAnswer.parse(body)
        } catch {
            invariant(!hasLineBreak(error.description), "the parse error spans lines")
            return nil
        }
    }

    static func check(
        _ verdict: AppleAnswerClassifier.Verdict, _ answer: AppleReceiptAnswer, body: [UInt8],
        from environment: AppleAnswerClassifier.Environment, mayBounce: Bool
    ) {
        switch verdict {
        case .valid:
            // Success only for a well-formed success answer: an object whose one "status" is 0
            // (a number, or Apple's numeric string) and that carries a "receipt" object, as
            // Foundation reads it too.
            invariant(answer.status == 0 && answer.hasReceipt, "valid without status 0 and a receipt")
            invariant(topLevelCount(of: "status", in: body) == 1, "valid with \"status\" given more than once")
            invariant(topLevelCount(of: "receipt", in: body) == 1, "valid with \"receipt\" given more than once")
            guard FoundationJSON.canJudge(body) else { return }
            guard let object = FoundationJSON.object(body) else {
                invariant(false, "valid, but Foundation does not read an object")
                return
            }
            let status = object["status"]
            let isZero = (status as? NSNumber).map { $0.doubleValue == 0 } ?? (status as? String).flatMap { Int($0) }.map { $0 == 0 } ?? false
            invariant(isZero, "valid, but Foundation reads status \(String(describing: status))")
            invariant(object["receipt"] is [String: Any], "valid, but Foundation finds no receipt object")
        case .bounce(_, let status):
            invariant(mayBounce, "bounced when it may not")
            invariant(status == answer.status && [21002, 21007, 21008].contains(status), "bounced on status \(status)")
        case .transient(let reason, _), .reject(let reason), .configuration(let reason):
            invariant(!reason.description.isEmpty && !hasLineBreak(reason), "an unprintable reason")
        case .malformed:
            invariant(answer.status == 21002, "malformed for status \(answer.status)")
        }
        if answer.status != 0 { invariant(verdict != .valid, "valid for status \(answer.status)") }
    }

    /// What happens to a valid answer: bundle id check (AppleVerifier), then the match the store
    /// makes for the order, with no claims and with every candidate claimed by another order.
    static func match(_ answer: AppleReceiptAnswer) {
        // AppleVerifier escalates another bundle; matching it anyway keeps the matcher fuzzed.
        _ = answer.bundleID == bundleID
        let first = answer.items.first
        let orders = [
            ReceiptMatcher.OrderKey(orderID: "A1", productID: first?.productID ?? "com.example.gems.100", referenceTime: Date(timeIntervalSince1970: 1_700_000_000)),
            ReceiptMatcher.OrderKey(
                orderID: "A2", productID: first?.productID ?? "p", transactionID: first?.transactionID,
                applicationUsername: first?.appAccountToken, referenceTime: Date(timeIntervalSince1970: 0)),
            ReceiptMatcher.OrderKey(
                orderID: "A3", productID: answer.items.last?.productID ?? "p", applicationUsername: "2F7C8E3A-1111-4222-8333-944455556666",
                referenceTime: .distantFuture),
        ]
        for order in orders {
            let candidates = ReceiptMatcher.candidates(in: answer.items, for: order)
            switch ReceiptMatcher.match(answer.items, for: order, claims: [:]) {
            case .matched(let item):
                invariant(item.productID == order.productID, "matched another product")
                invariant(!item.isCancelled, "matched a refunded purchase")
                invariant(order.transactionID.map { $0 == item.transactionID } ?? true, "matched another transaction")
                invariant(answer.items.contains(item), "matched a purchase the receipt does not hold")
            case .duplicateTransaction:
                invariant(false, "a duplicate with no claims")
            case .refunded:
                invariant(!candidates.isEmpty && candidates.allSatisfy(\.isCancelled), "refunded with a live candidate")
            case .noMatchingPurchase:
                invariant(candidates.isEmpty, "no match among \(candidates.count) candidates")
            }
            // Every candidate claimed by another order: never a match.
            let claims = Dictionary(candidates.map { ($0.transactionID, "B9") }, uniquingKeysWith: { first, _ in first })
            if case .matched = ReceiptMatcher.match(answer.items, for: order, claims: claims) {
                invariant(false, "matched a purchase another order has claimed")
            }
        }
    }
}
