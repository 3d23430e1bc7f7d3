import Foundation
import ReconcileCore
import ReconcileFoundation

/// `Kind=apple`: Apple's `verifyReceipt` (DESIGN §5). Production first; 21007 (and 21002 from
/// production) go once to the sandbox, 21008 from the sandbox once to production; the second
/// answer is classified afresh and never bounces again.
public struct AppleVerifier: OrderVerifier {
    public var production: EndpointSettings
    public var sandbox: EndpointSettings?
    public var bundleID: String
    public var allowSandbox: Bool
    /// The app's shared secret (`password`). Never logged.
    public var sharedSecret: String
    public var transport: any HTTPTransport
    public var maximumResponseSize = 4 << 20

    public init(
        production: EndpointSettings, sandbox: EndpointSettings?, bundleID: String, allowSandbox: Bool, sharedSecret: String,
        transport: any HTTPTransport
    ) {
        self.production = production
        self.sandbox = sandbox
        self.bundleID = bundleID
        self.allowSandbox = allowSandbox
        self.sharedSecret = sharedSecret
        self.transport = transport
    }

    public var firstEndpoint: VerificationEndpoint { .production }

    public func verify(_ order: ClaimedOrder, gate: any EndpointGate) async -> VerifierOutcome {
        guard let receipt = order.proof.receipt else {
            return VerifierOutcome(records: [], verdict: .escalate(Reason(.noUsableProof, detail: "Kind=apple needs a receipt")))
        }
        let body = JSONWriter.bytes(.object(JSONObject([
            "receipt-data": .string(receipt.filter { !$0.isWhitespace }), "password": .string(sharedSecret),
            "exclude-old-transactions": .bool(false),
        ])))
        let exchange = EndpointExchange(transport: transport, gate: gate)
        var records: [AttemptRecord] = []

        let (firstRecord, first) = await send(body, to: .production, via: exchange)
        records.append(firstRecord)
        guard case .answer(let answer) = first else { return VerifierOutcome(records: records, verdict: Self.verdict(of: first)) }

        switch AppleAnswerClassifier.classify(answer, from: .production, mayBounce: true) {
        case .bounce(let environment, let status):
            if status == 21007 && !allowSandbox {
                return VerifierOutcome(
                    records: records, verdict: .reject(Reason(.sandboxNotAllowed, detail: "a sandbox receipt (21007), and AllowSandbox=no")))
            }
            // From production, the only bounce is to the sandbox.
            guard environment == .sandbox, sandbox != nil else {
                return VerifierOutcome(records: records, verdict: .transient(Reason(.appleNoSandboxURL(status))))
            }
            guard await gate.acquire(.sandbox) else {
                return VerifierOutcome(records: records, verdict: .transient(Reason(.endpointCircuitOpen(.sandbox))))
            }
            let (secondRecord, second) = await send(body, to: .sandbox, via: exchange)
            records.append(secondRecord)
            guard case .answer(let sandboxAnswer) = second else {
                return VerifierOutcome(records: records, verdict: Self.verdict(of: second))
            }
            let secondVerdict = AppleAnswerClassifier.classify(sandboxAnswer, from: .sandbox, mayBounce: false)
            if secondVerdict == .valid && !allowSandbox {
                return VerifierOutcome(
                    records: records, verdict: .reject(Reason(.sandboxNotAllowed, detail: "a sandbox receipt, and AllowSandbox=no")))
            }
            return VerifierOutcome(records: records, verdict: verdict(of: secondVerdict, answer: sandboxAnswer))
        case let other:
            return VerifierOutcome(records: records, verdict: verdict(of: other, answer: answer))
        }
    }

    static func verdict(of meaning: EndpointExchange.Judgement<AppleReceiptAnswer>.Meaning) -> VerifierOutcome.Verdict {
        switch meaning {
        case .answer: .transient(Reason(.unexpected))
        case .verdict(let verdict): verdict
        }
    }

    func verdict(of classification: AppleAnswerClassifier.Verdict, answer: AppleReceiptAnswer) -> VerifierOutcome.Verdict {
        switch classification {
        case .valid:
            guard answer.bundleID == bundleID else {
                return .escalate(Reason(
                    ReasonCode.bundleMismatch,
                    detail: "the receipt is for \(answer.bundleID.map { "\"\($0)\"" } ?? "no bundle"), BundleID=\(bundleID)"))
            }
            return .match(items: answer.items, environment: answer.environment)
        case .bounce(_, let status):
            return .transient(Reason(.appleAfterBounce(status)))
        case .transient(let reason, _):
            return .transient(reason)
        case .malformed:
            return .malformed
        case .reject(let reason):
            return .reject(reason.adding("Apple answered \(answer.status)"))
        case .configuration(let reason):
            return .configuration(reason)
        }
    }

    /// Sends the body to one environment through the shared exchange.
    func send(_ body: [UInt8], to endpoint: VerificationEndpoint, via exchange: EndpointExchange) async
        -> (AttemptRecord, EndpointExchange.Judgement<AppleReceiptAnswer>.Meaning)
    {
        let settings = endpoint == .sandbox ? (sandbox ?? production) : production
        let request = settings.request(headers: settings.headers([]), body: body, maximumResponseSize: maximumResponseSize)
        let (record, meaning) = await exchange.send(request, to: endpoint) { result, now in
            .of(HTTPAnswerClassifier.classify(result, expectsJSON: true, now: now)) { response in
                Self.judge(response, from: endpoint)
            }
        }
        return (record, meaning)
    }

    /// A verifyReceipt body: Apple's status says what it means for the endpoint too (21005,
    /// 21009 and retryable 211xx are the endpoint's failures; 21000 and 21004 our configuration).
    static func judge(_ response: HTTPResponse, from endpoint: VerificationEndpoint) -> EndpointExchange.Judgement<AppleReceiptAnswer> {
        let answer: AppleReceiptAnswer
        do {
            answer = try AppleReceiptAnswer.parse(response.body)
        } catch {
            return .init(
                .verdict(.transient(Reason(.unparseableAnswer))), observation: .failure(reason: Reason(.unparseableAnswer)),
                detail: "\(ReasonCode.unparseableAnswer): \(error.description)")
        }
        let environment: AppleAnswerClassifier.Environment = endpoint == .sandbox ? .sandbox : .production
        var judgement = EndpointExchange.Judgement<AppleReceiptAnswer>(
            .answer(answer), verifierStatus: answer.status, environment: answer.environment)
        switch AppleAnswerClassifier.classify(answer, from: environment, mayBounce: true) {
        case .transient(let reason, true):
            judgement.observation = .failure(reason: reason)
            judgement.detail = reason.description
        case .configuration(let reason):
            judgement.observation = .configuration(reason: reason)
            judgement.detail = reason.description
        default:
            break
        }
        return judgement
    }
}
