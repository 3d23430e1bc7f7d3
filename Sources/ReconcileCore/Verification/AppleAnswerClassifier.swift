/// Classifies Apple's `verifyReceipt` answers (DESIGN §5; `docs/protocols/apple.md` §1.2).
public enum AppleAnswerClassifier {
    /// Which environment answered.
    public enum Environment: String, Sendable, Hashable {
        case production
        case sandbox

        public var endpoint: VerificationEndpoint { self == .production ? .production : .sandbox }
        public var other: Environment { self == .production ? .sandbox : .production }
    }

    /// What to do with an answer.
    public enum Verdict: Sendable, Hashable {
        /// `status` 0 with a receipt: match the order against it.
        case valid
        /// Resend the same body once to the other environment.
        case bounce(to: Environment, status: Int)
        /// Retry later. `endpointLevel` answers count towards the circuit.
        case transient(reason: Reason, endpointLevel: Bool)
        /// `21002`: malformed, or Apple's temporary trouble; capped at three attempts.
        case malformed
        /// The receipt is refused for good.
        case reject(reason: Reason)
        /// Our request is wrong (`21000`, `21004`): alert, open the circuit, charge no order.
        case configuration(reason: Reason)
    }

    /// Classifies an answer that arrived from `environment`. `mayBounce` is false for the
    /// answer of a bounce: an attempt never bounces twice, and the second answer is classified
    /// afresh.
    public static func classify(_ answer: AppleReceiptAnswer, from environment: Environment, mayBounce: Bool) -> Verdict {
        switch answer.status {
        case 0:
            return answer.hasReceipt
                ? .valid : .transient(reason: Reason(.appleZeroWithoutReceipt), endpointLevel: false)
        case 21007 where mayBounce && environment == .production:
            return .bounce(to: .sandbox, status: 21007)
        case 21008 where mayBounce && environment == .sandbox:
            return .bounce(to: .production, status: 21008)
        case 21002 where mayBounce && environment == .production:
            // Production has answered 21002 for sandbox receipts (forum thread 44603).
            return .bounce(to: .sandbox, status: 21002)
        case 21002:
            return .malformed
        case 21000, 21004:
            let why = answer.status == 21004 ? "the shared secret does not match (21004)" : "Apple could not read our request (21000)"
            return .configuration(reason: Reason(.apple(answer.status), detail: why))
        case 21003:
            return .reject(reason: Reason(.receiptNotAuthenticated))
        case 21010:
            return .reject(reason: Reason(.accountNotFound))
        case 21005, 21009:
            return .transient(reason: Reason(.apple(answer.status)), endpointLevel: true)
        case 21001:
            return .transient(reason: Reason(.apple(21001)), endpointLevel: false)
        case 21100...21199:
            if answer.isRetryable == false {
                return .reject(reason: Reason(.appleNotRetryable(answer.status)))
            }
            return .transient(reason: Reason(.apple(answer.status)), endpointLevel: true)
        case 21007, 21008:
            // The wrong environment after a bounce, or a loop: never bounce twice.
            return .transient(reason: Reason(.appleAfterBounce(answer.status)), endpointLevel: false)
        default:
            return .transient(reason: Reason(.appleStatus(answer.status)), endpointLevel: false)
        }
    }
}
