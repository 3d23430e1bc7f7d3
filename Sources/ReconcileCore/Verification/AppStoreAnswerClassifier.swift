import ReconcileFoundation

/// Classifies the App Store Server API's answers (`Kind=appstore`; `docs/protocols/apple.md`
/// §2.3): the HTTP status and the error body's `errorCode` say whether to read the answer, try the
/// sandbox, retry, reject the order or stop for a configuration error.
public enum AppStoreAnswerClassifier {
    /// What to do with one answer.
    public enum Verdict: Sendable, Hashable {
        /// 200: read the body (a signed transaction or a history page).
        case answer
        /// 4040010 TransactionIdNotFound: from production, ask the sandbox once (Apple's rule).
        case transactionNotFound
        /// Retry later. `endpointLevel` answers count towards the endpoint's circuit;
        /// `rateLimited` (429) pauses its bucket until `retryAfter`.
        case transient(reason: Reason, endpointLevel: Bool, retryAfter: Duration? = nil, rateLimited: Bool = false)
        /// 5000000 GeneralInternal: Apple does not call it retryable; retried a few times, then
        /// the order goes to a person.
        case internalError
        /// The transaction id is refused for good.
        case reject(reason: Reason)
        /// Our request or credentials are wrong: alert, open the circuit, charge no order.
        case configuration(reason: Reason)
    }

    /// Error codes Apple names "Retryable" (AccountNotFoundRetryable, AppNotFoundRetryable,
    /// OriginalTransactionIdNotFoundRetryable, GeneralInternalRetryable).
    public static let retryableCodes: Set<Int> = [4040002, 4040004, 4040006, 5000001]

    /// Classifies an answer. `retryAfter` is the parsed `Retry-After` (epoch milliseconds or
    /// seconds; see ``RetryAfter``).
    public static func classify(status: Int, body: [UInt8], retryAfter: Duration?) -> Verdict {
        let code = errorCode(in: body)
        if status == 200 { return .answer }
        if let code, retryableCodes.contains(code) {
            return .transient(reason: Reason(.appStore(code)), endpointLevel: code == 5000001)
        }
        switch (status, code) {
        case (404, 4040010):
            return .transactionNotFound
        case (400, 4000006):
            return .reject(reason: Reason(.invalidTransactionID))
        case (400, 4000008):
            return .reject(reason: Reason(.invalidOriginalTransactionID))
        case (400, 4000187):
            return .reject(reason: Reason(.transactionIDNotOriginal))
        case (404, 4040001):
            return .reject(reason: Reason(.accountNotFound))
        case (404, 4040005):
            return .reject(reason: Reason(.originalTransactionNotFound))
        case (404, 4040003):
            return .configuration(reason: Reason(.appStore(4040003), detail: "Apple knows no app with this BundleID (check BundleID=)"))
        case (400, _):
            return .configuration(reason: Reason(.appStore(code ?? 400), detail: "Apple refused our request as malformed"))
        case (401, _):
            return .configuration(reason: Reason(.appStore(401), detail: "Apple refused the token: check IssuerID=, KeyID=, BundleID= and the key; "
                + "production also answers 401 while the app has no release on the App Store"))
        case (403, _):
            return .configuration(reason: Reason(.appStore(403), detail: "the key is not allowed to use this API"))
        case (404, nil):
            return .configuration(reason: Reason(.appStore(404), detail: "no such endpoint (check URL= and SandboxURL=)"))
        case (404, let code?):
            return .transient(reason: Reason(.appStore(code)), endpointLevel: false)
        case (429, _):
            return .transient(reason: Reason(.appStore(429)), endpointLevel: true, retryAfter: retryAfter, rateLimited: true)
        case (500, 5000000):
            return .internalError
        case (500...599, _):
            return .transient(reason: Reason(.appStoreHTTP(status)), endpointLevel: true, retryAfter: retryAfter)
        default:
            return .transient(reason: Reason(.appStoreHTTP(status, errorCode: code)), endpointLevel: true, retryAfter: retryAfter)
        }
    }

    /// The `errorCode` of an error body `{"errorCode": N, "errorMessage": "…"}`, if it is one.
    public static func errorCode(in body: [UInt8]) -> Int? {
        guard !body.isEmpty, case .object(let object)? = try? JSONParser(allowsDuplicateKeys: true).parse(body),
            case .number(let text)? = object["errorCode"], let code = Int(text)
        else { return nil }
        return code
    }
}
