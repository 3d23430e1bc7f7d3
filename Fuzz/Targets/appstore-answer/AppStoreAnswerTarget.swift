// Fuzz target: the App Store Server API's answers (Kind=appstore), as AppStoreVerifier reads
// them before any signature is checked: the status table, Get Transaction Info's envelope, a
// history page, and a decoded transaction payload. The input is the answer: a first line
// `STATUS` or `STATUS RETRY-AFTER`, then the body. An input whose first line is not a status is
// all body, with status 200.
import Foundation
import ReconcileCore
import ReconcileFoundation

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzAppStoreAnswer(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    AppStoreAnswerTarget.run(inputBytes(data, size))
    return 0
}

enum AppStoreAnswerTarget {
    static let now = Date(timeIntervalSince1970: 1_764_487_566)
    static let rejectCodes: Set<Int> = [4000006, 4000008, 4000187, 4040001, 4040005]

    static func run(_ input: [UInt8]) {
        let (status, retryAfterText, body) = split(input)
        let retryAfter = retryAfterText.flatMap { RetryAfter.parse($0, now: now) }
        let code = AppStoreAnswerClassifier.errorCode(in: body)
        switch AppStoreAnswerClassifier.classify(status: status, body: body, retryAfter: retryAfter) {
        case .answer:
            invariant(status == 200, "an answer read on HTTP \(status)")
        case .transactionNotFound:
            invariant(status == 404 && code == 4040010, "not found on \(status) \(String(describing: code))")
        case .reject(let reason):
            // A paid order is refused for good only on one of Apple's named codes.
            invariant((status == 400 || status == 404) && code.map(rejectCodes.contains) == true, "rejected on \(status) \(String(describing: code))")
            invariant(!hasLineBreak(reason), "an unprintable reason")
        case .transient(let reason, _, let wait, let rateLimited):
            invariant(!hasLineBreak(reason), "an unprintable reason")
            invariant(!rateLimited || status == 429, "rate limited on HTTP \(status)")
            if let wait {
                invariant(wait >= .zero, "a negative Retry-After")
                _ = TimeSpan.format(wait)
            }
        case .internalError:
            invariant(status == 500 && code == 5000000, "internal error on \(status) \(String(describing: code))")
        case .configuration(let reason):
            invariant(!hasLineBreak(reason), "an unprintable reason")
            invariant(status != 200, "a configuration error on HTTP 200")
        }
        if let jws = try? AppStoreDocument.signedTransactionInfo(body) {
            invariant(!jws.isEmpty, "an empty signed transaction")
        }
        if let page = try? AppStoreDocument.historyPage(body) {
            // More pages must say where they start, or the verifier would ask for page one forever.
            invariant(!page.hasMore || !(page.revision ?? "").isEmpty, "hasMore without a revision")
        }
        if let transaction = try? AppStoreTransaction.parse(body) {
            invariant(!transaction.transactionID.isEmpty && !transaction.productID.isEmpty, "a transaction without ids")
            _ = transaction.item
        }
    }

    static func split(_ input: [UInt8]) -> (Int, String?, [UInt8]) {
        let newline = input.firstIndex(of: 0x0A) ?? input.count
        let head = String(decoding: input[..<newline], as: UTF8.self)
        let words = head.split(separator: " ", maxSplits: 1)
        guard let first = words.first, first.count == 3, let status = Int(first), (100...599).contains(status) else {
            return (200, nil, input)
        }
        let body = newline < input.count ? Array(input[(newline + 1)...]) : []
        return (status, words.count > 1 ? String(words[1]) : nil, body)
    }
}
