import Foundation
import ReconcileCore

/// One request of an attempt to one endpoint (DESIGN §5–6), the sequence every verifier and the
/// delivery client share: send it, let the protocol's classifier say what the answer means,
/// report what that says about the endpoint to the gate (its circuit; a 429 pauses its bucket),
/// and record the request for the order's history.
struct EndpointExchange {
    let transport: any HTTPTransport
    let gate: any EndpointGate

    /// What a protocol makes of one exchange.
    struct Judgement<Answer> {
        /// An answer for the protocol to read further, or already the attempt's verdict.
        enum Meaning {
            case answer(Answer)
            case verdict(VerifierOutcome.Verdict)
        }

        var meaning: Meaning
        /// What the exchange says about the endpoint (its circuit counts failures).
        var observation: EndpointObservation
        /// With `rateLimited`: how long the endpoint asked us to wait (its bucket pauses).
        var retryAfter: Duration?
        /// A 429: the endpoint's whole bucket pauses.
        var rateLimited = false
        /// Why, in a few words, for the history (never the body, never a secret).
        var detail: String?
        /// Apple's `status` or error code, when the body had one.
        var verifierStatus: Int?
        /// `Production` / `Sandbox`, when known.
        var environment: String?

        init(
            _ meaning: Meaning, observation: EndpointObservation = .healthy, retryAfter: Duration? = nil, rateLimited: Bool = false,
            detail: String? = nil, verifierStatus: Int? = nil, environment: String? = nil
        ) {
            self.meaning = meaning
            self.observation = observation
            self.retryAfter = retryAfter
            self.rateLimited = rateLimited
            self.detail = detail
            self.verifierStatus = verifierStatus
            self.environment = environment
        }

        /// The shared classes of HTTP itself: a transport failure, a redirect, a 5xx or 429 is a
        /// transient verdict and an endpoint failure; 401/403/404 a configuration error.
        static func of(_ disposition: HTTPAnswerClassifier.Disposition, answer: (HTTPResponse) -> Judgement) -> Judgement {
            switch disposition {
            case .endpointFailure(let reason, let retryAfter, let rateLimited):
                Judgement(
                    .verdict(.transient(reason, retryAfter: retryAfter)), observation: .failure(reason: reason),
                    retryAfter: retryAfter, rateLimited: rateLimited, detail: reason.description)
            case .configuration(let reason):
                Judgement(.verdict(.configuration(reason)), observation: .configuration(reason: reason), detail: reason.description)
            case .answer(let response):
                answer(response)
            }
        }

        /// How the `attempts` table records it: a configuration error, a transient failure (of
        /// the endpoint, or a transient verdict), or an answer.
        var outcome: AttemptOutcome {
            switch observation {
            case .configuration: return .configuration
            case .failure: return .transient
            case .healthy:
                if case .verdict(.transient) = meaning { return .transient }
                return .answered
            }
        }
    }

    /// Sends `request` to `endpoint`, judges the result with `judge` (given the gate's wall
    /// clock when the answer came: a `Retry-After` date is read against it), reports to the
    /// gate.
    func send<Answer>(
        _ request: HTTPRequest, to endpoint: VerificationEndpoint, environment: String? = nil,
        judge: (HTTPExchangeResult, Date) -> Judgement<Answer>
    ) async -> (record: AttemptRecord, meaning: Judgement<Answer>.Meaning) {
        let started = gate.now()
        let result = await transport.send(request)
        let judgement = judge(result, gate.now())
        await gate.report(endpoint, judgement.observation, retryAfter: judgement.retryAfter, rateLimited: judgement.rateLimited)
        let record = AttemptRecord(
            endpoint: endpoint, environment: judgement.environment ?? environment, httpStatus: result.response?.status,
            verifierStatus: judgement.verifierStatus, latency: result.latency, outcome: judgement.outcome, detail: judgement.detail,
            startedAt: started)
        return (record, judgement.meaning)
    }
}
