// Fuzz target: Google's answers, down the paths GooglePlayVerifier and PlayAccessTokenCache take.
// The input's first byte picks the request: 'p' (or any other byte) purchases.products.get, 'a'
// an acknowledgement or consumption, 't' the token endpoint. Then, as in merchant-answer, a line
// `STATUS` or `STATUS RETRY-AFTER-SECONDS`, then the body; an input whose second line is not a
// status is all body, with status 200. A purchase read on 200 is parsed and judged for an order
// (PlayMatcher), with test purchases refused and then allowed.
import Foundation
import ReconcileCore

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzPlayAnswer(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    PlayAnswerTarget.run(inputBytes(data, size))
    return 0
}

enum PlayAnswerTarget {
    static let order = PlayMatcher.OrderKey(orderID: "A1", productID: "gems", applicationUsername: "user-7", userID: "u7")

    static func run(_ input: [UInt8]) {
        guard let selector = input.first else { return }
        let (status, retryAfter, body) = answer(Array(input.dropFirst()))
        switch selector {
        case UInt8(ascii: "t"):
            checkToken(PlayTokenAnswer.classify(status: status, body: body, retryAfter: retryAfter), status: status, body: body)
        case UInt8(ascii: "a"):
            checkAction(PlayAnswerClassifier.classifyAction(status: status, body: body, retryAfter: retryAfter), status: status)
        default:
            let verdict = PlayAnswerClassifier.classify(status: status, body: body, retryAfter: retryAfter)
            checkPurchase(verdict, status: status, body: body)
        }
    }

    static func answer(_ input: [UInt8]) -> (Int, Duration?, [UInt8]) {
        let newline = input.firstIndex(of: 0x0A) ?? input.count
        let head = String(decoding: input[..<newline], as: UTF8.self)
        let words = head.split(separator: " ", maxSplits: 1)
        guard let first = words.first, first.count == 3, let status = Int(first), (100...599).contains(status) else {
            return (200, nil, input)
        }
        let retryAfter = words.count > 1 ? Int(words[1]).flatMap { (0...86_400).contains($0) ? Duration.seconds($0) : nil } : nil
        let body = newline < input.count ? Array(input[(newline + 1)...]) : []
        return (status, retryAfter, body)
    }

    static func printable(_ reason: String) {
        invariant(!reason.isEmpty && !hasLineBreak(reason), "an unprintable reason")
        invariant(reason.unicodeScalars.count <= 400, "a reason of \(reason.unicodeScalars.count) scalars")
    }

    static func printable(_ reason: Reason) {
        printable(reason.description)
    }

    static func checkPurchase(_ verdict: PlayAnswerClassifier.Verdict, status: Int, body: [UInt8]) {
        switch verdict {
        case .answer:
            // An answer only on 200.
            invariant(status == 200, "an answer on HTTP \(status)")
            judge(body)
        case .tokenExpired(let reason):
            // Rejections only on the named codes: 410 rejects at once, 400/404 after a few tries.
            invariant(status == 410, "token expired on HTTP \(status)")
            printable(reason)
        case .tokenNotFound(let reason):
            invariant(status == 400 || status == 404, "token not found on HTTP \(status)")
            invariant(PlayError(body).isGoogleError, "token not found without Google's error body")
            printable(reason)
        case .unauthorized(let reason):
            invariant(status == 401, "unauthorized on HTTP \(status)")
            printable(reason)
        case .configuration(let reason):
            invariant([400, 403, 404].contains(status), "a configuration error on HTTP \(status)")
            printable(reason)
        case .transient(let reason, _, let retryAfter, _):
            invariant(status != 200, "a 200 taken as transient")
            if let retryAfter { invariant(retryAfter >= .zero, "a negative Retry-After") }
            printable(reason)
        case .escalate(let reason):
            invariant((400...499).contains(status), "escalated on HTTP \(status)")
            printable(reason)
        }
    }

    static func judge(_ body: [UInt8]) {
        let purchase: PlayPurchase
        do {
            purchase = try PlayPurchase.parse(body)
        } catch {
            invariant(!hasLineBreak(error.description), "the parse error spans lines")
            return
        }
        _ = purchase.summary
        invariant(topLevelCount(of: "purchaseState", in: body) == 1, "a purchase whose purchaseState is named \(topLevelCount(of: "purchaseState", in: body)) times")
        invariant(purchase.quantity >= 1, "a quantity of \(purchase.quantity)")
        for allowTests in [false, true] {
            switch PlayMatcher.judge(purchase, for: order, allowTestPurchases: allowTests) {
            case .purchased:
                // Granted only when Google says purchased, as Foundation reads it too.
                invariant(purchase.purchaseState == PlayPurchase.purchased, "purchased in state \(purchase.purchaseState)")
                invariant(allowTests || !purchase.isTest, "a test purchase granted with AllowTestPurchases=no")
                if let account = purchase.obfuscatedExternalAccountID {
                    invariant(account == order.applicationUsername || account == order.userID, "another account's purchase granted")
                }
                if FoundationJSON.canJudge(body), let object = FoundationJSON.object(body) {
                    let state = object["purchaseState"]
                    let isZero = (state as? NSNumber).map { $0.doubleValue == 0 } ?? (state as? String).flatMap { Int($0) }.map { $0 == 0 } ?? false
                    invariant(isZero, "purchased, but Foundation reads purchaseState \(String(describing: state))")
                }
                let grant = Grant(purchase, productID: order.productID)
                _ = PlayMatcher.claimKey(orderID: grant.transactionID, tokenDigest: "ab")
            case .reject(let reason):
                // A paid order is rejected only when Google says cancelled, or for a test purchase.
                invariant(
                    purchase.purchaseState == PlayPurchase.cancelled || (purchase.isTest && !allowTests),
                    "rejected \(reason.code) in state \(purchase.purchaseState)")
                printable(reason.description)
            case .pending(let reason), .escalate(let reason):
                printable(reason.description)
            }
        }
    }

    static func checkAction(_ verdict: PlayAnswerClassifier.ActionVerdict, status: Int) {
        switch verdict {
        case .done:
            invariant((200...299).contains(status), "done on HTTP \(status)")
        case .recheck(let reason):
            invariant(status == 400, "a recheck on HTTP \(status)")
            printable(reason)
        case .unauthorized(let reason):
            invariant(status == 401, "unauthorized on HTTP \(status)")
            printable(reason)
        case .transient(let reason, _, let retryAfter, _):
            invariant(!(200...299).contains(status), "a success taken as transient")
            if let retryAfter { invariant(retryAfter >= .zero, "a negative Retry-After") }
            printable(reason)
        case .configuration(let reason), .escalate(let reason):
            invariant(!(200...299).contains(status), "a success refused")
            printable(reason)
        }
    }

    static func checkToken(_ verdict: PlayTokenAnswer.Verdict, status: Int, body: [UInt8]) {
        switch verdict {
        case .token(let answer):
            // A token only on 200, one access_token, printable, with a sane lifetime.
            invariant(status == 200, "a token on HTTP \(status)")
            invariant(topLevelCount(of: "access_token", in: body) == 1, "a token named more than once")
            invariant(!answer.accessToken.isEmpty && answer.accessToken.utf8.allSatisfy { (0x21...0x7E).contains($0) }, "an unusable access token")
            invariant((1...86_400).contains(answer.expiresIn), "a lifetime of \(answer.expiresIn) s")
            if FoundationJSON.canJudge(body) {
                invariant(FoundationJSON.object(body)?["access_token"] as? String == answer.accessToken, "Foundation reads another access token")
            }
        case .configuration(let reason):
            // A refused grant opens the circuit: never on success or on the server's trouble.
            invariant(status != 200 && !(500...599).contains(status) && status != 429 && status != 408, "a configuration error on HTTP \(status)")
            printable(reason)
        case .transient(let reason, _, let retryAfter, _):
            if let retryAfter { invariant(retryAfter >= .zero, "a negative Retry-After") }
            printable(reason)
        }
    }
}
