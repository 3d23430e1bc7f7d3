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
        case transient(reason: String, endpointLevel: Bool, retryAfter: Duration? = nil, rateLimited: Bool = false)
        /// 5000000 GeneralInternal: Apple does not call it retryable; retried a few times, then
        /// the order goes to a person.
        case internalError
        /// The transaction id is refused for good.
        case reject(reason: String)
        /// Our request or credentials are wrong: alert, open the circuit, charge no order.
        case configuration(reason: String)
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
            return .transient(reason: "appstore_\(code)", endpointLevel: code == 5000001)
        }
        switch (status, code) {
        case (404, 4040010):
            return .transactionNotFound
        case (400, 4000006):
            return .reject(reason: "invalid_transaction_id")
        case (400, 4000008):
            return .reject(reason: "invalid_original_transaction_id")
        case (400, 4000187):
            return .reject(reason: "transaction_id_not_original")
        case (404, 4040001):
            return .reject(reason: "account_not_found")
        case (404, 4040005):
            return .reject(reason: "original_transaction_not_found")
        case (404, 4040003):
            return .configuration(reason: "appstore_4040003: Apple knows no app with this BundleID (check BundleID=)")
        case (400, _):
            return .configuration(reason: "appstore_\(code.map(String.init) ?? "400"): Apple refused our request as malformed")
        case (401, _):
            return .configuration(reason: "appstore_401: Apple refused the token: check IssuerID=, KeyID=, BundleID= and the key; "
                + "production also answers 401 while the app has no release on the App Store")
        case (403, _):
            return .configuration(reason: "appstore_403: the key is not allowed to use this API")
        case (404, nil):
            return .configuration(reason: "appstore_404: no such endpoint (check URL= and SandboxURL=)")
        case (404, let code?):
            return .transient(reason: "appstore_\(code)", endpointLevel: false)
        case (429, _):
            return .transient(reason: "appstore_429", endpointLevel: true, retryAfter: retryAfter, rateLimited: true)
        case (500, 5000000):
            return .internalError
        case (500...599, _):
            return .transient(reason: "appstore_http_\(status)", endpointLevel: true, retryAfter: retryAfter)
        default:
            return .transient(reason: "appstore_http_\(status)\(code.map { "_\($0)" } ?? "")", endpointLevel: true, retryAfter: retryAfter)
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
