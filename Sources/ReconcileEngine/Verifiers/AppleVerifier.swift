import Foundation
import ReconcileCore

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

    /// One exchange's meaning before the status table.
    enum Step {
        case answer(AppleReceiptAnswer)
        case failure(reason: String, retryAfter: Duration?)
        case configuration(reason: String)
    }

    public func verify(_ order: ClaimedOrder, gate: any EndpointGate) async -> VerifierOutcome {
        guard let receipt = order.proof.receipt else {
            return VerifierOutcome(records: [], verdict: .escalate(reason: "no_usable_proof", detail: "Kind=apple needs a receipt"))
        }
        let body = JSONWriter.bytes(.object(JSONObject([
            "receipt-data": .string(receipt.filter { !$0.isWhitespace }), "password": .string(sharedSecret),
            "exclude-old-transactions": .bool(false),
        ])))
        var records: [AttemptRecord] = []

        let (firstRecord, first) = await exchange(.production, body: body, gate: gate)
        records.append(firstRecord)
        guard case .answer(let answer) = first else { return VerifierOutcome(records: records, verdict: verdict(of: first)) }

        switch AppleAnswerClassifier.classify(answer, from: .production, mayBounce: true) {
        case .bounce(let environment, let status):
            if status == 21007 && !allowSandbox {
                return VerifierOutcome(
                    records: records,
                    verdict: .reject(reason: "sandbox_not_allowed", detail: "a sandbox receipt (21007), and AllowSandbox=no"))
            }
            // From production, the only bounce is to the sandbox.
            guard environment == .sandbox, sandbox != nil else {
                return VerifierOutcome(records: records, verdict: .transient(reason: "apple_\(status)_no_sandbox_url"))
            }
            guard await gate.acquire(.sandbox) else {
                return VerifierOutcome(records: records, verdict: .transient(reason: "sandbox_circuit_open"))
            }
            let (secondRecord, second) = await exchange(.sandbox, body: body, gate: gate)
            records.append(secondRecord)
            guard case .answer(let sandboxAnswer) = second else {
                return VerifierOutcome(records: records, verdict: verdict(of: second))
            }
            let secondVerdict = AppleAnswerClassifier.classify(sandboxAnswer, from: .sandbox, mayBounce: false)
            if secondVerdict == .valid && !allowSandbox {
                return VerifierOutcome(
                    records: records, verdict: .reject(reason: "sandbox_not_allowed", detail: "a sandbox receipt, and AllowSandbox=no"))
            }
            return VerifierOutcome(records: records, verdict: verdict(of: secondVerdict, answer: sandboxAnswer))
        case let other:
            return VerifierOutcome(records: records, verdict: verdict(of: other, answer: answer))
        }
    }

    func verdict(of step: Step) -> VerifierOutcome.Verdict {
        switch step {
        case .answer: .transient(reason: "unexpected")
        case .failure(let reason, let retryAfter): .transient(reason: reason, retryAfter: retryAfter)
        case .configuration(let reason): .configuration(reason: reason)
        }
    }

    func verdict(of classification: AppleAnswerClassifier.Verdict, answer: AppleReceiptAnswer) -> VerifierOutcome.Verdict {
        switch classification {
        case .valid:
            guard answer.bundleID == bundleID else {
                return .escalate(
                    reason: "bundle_mismatch",
                    detail: "the receipt is for \(answer.bundleID.map { "\"\($0)\"" } ?? "no bundle"), BundleID=\(bundleID)")
            }
            return .match(items: answer.items, environment: answer.environment)
        case .bounce(_, let status):
            return .transient(reason: "apple_\(status)_after_bounce")
        case .transient(let reason, _):
            return .transient(reason: reason)
        case .malformed:
            return .malformed
        case .reject(let reason):
            return .reject(reason: reason, detail: "Apple answered \(answer.status)")
        case .configuration(let reason):
            return .configuration(reason: reason)
        }
    }

    /// Sends the body to one environment, reports the endpoint's health, records the exchange.
    func exchange(_ endpoint: VerificationEndpoint, body: [UInt8], gate: any EndpointGate) async -> (AttemptRecord, Step) {
        let settings = endpoint == .sandbox ? (sandbox ?? production) : production
        let started = Date()
        let result = await transport.send(settings.request(headers: settings.headers([]), body: body, maximumResponseSize: maximumResponseSize))
        var record = AttemptRecord(
            endpoint: endpoint, httpStatus: result.response?.status, latency: result.latency, outcome: "transient", startedAt: started)
        let step: Step
        switch HTTPAnswerClassifier.classify(result, expectsJSON: true, now: Date()) {
        case .endpointFailure(let reason, let retryAfter, let rateLimited):
            await gate.report(endpoint, .failure(reason: reason), retryAfter: retryAfter, rateLimited: rateLimited)
            record.detail = reason
            step = .failure(reason: reason, retryAfter: retryAfter)
        case .configuration(let reason):
            await gate.report(endpoint, .configuration(reason: reason), retryAfter: nil, rateLimited: false)
            record.outcome = "configuration"
            record.detail = reason
            step = .configuration(reason: reason)
        case .answer(let response):
            do {
                let answer = try AppleReceiptAnswer.parse(response.body)
                record.verifierStatus = answer.status
                record.environment = answer.environment
                let classification = AppleAnswerClassifier.classify(answer, from: endpoint == .sandbox ? .sandbox : .production, mayBounce: true)
                switch classification {
                case .transient(let reason, true):
                    await gate.report(endpoint, .failure(reason: reason), retryAfter: nil, rateLimited: false)
                    record.detail = reason
                case .configuration(let reason):
                    await gate.report(endpoint, .configuration(reason: reason), retryAfter: nil, rateLimited: false)
                    record.outcome = "configuration"
                    record.detail = reason
                default:
                    await gate.report(endpoint, .healthy, retryAfter: nil, rateLimited: false)
                    record.outcome = "answered"
                }
                step = .answer(answer)
            } catch {
                await gate.report(endpoint, .failure(reason: "unparseable_answer"), retryAfter: nil, rateLimited: false)
                record.detail = "unparseable_answer: \(error.description)"
                step = .failure(reason: "unparseable_answer", retryAfter: nil)
            }
        }
        return (record, step)
    }
}
