import Foundation
import ReconcileCore
import Synchronization
import ReconcileFoundation
@testable import ReconcileEngine

/// A transport that answers from a script: per URL, a list of answers used in turn (the last
/// repeats), and a record of every request.
final class ScriptedTransport: HTTPTransport {
    let answers: Mutex<[String: [HTTPExchangeResult]]>
    let sent = Mutex<[HTTPRequest]>([])
    let times = Mutex<[ContinuousClock.Instant]>([])

    init(_ answers: [String: [HTTPExchangeResult]]) {
        self.answers = Mutex(answers)
    }

    func send(_ request: HTTPRequest) async -> HTTPExchangeResult {
        sent.withLock { $0.append(request) }
        times.withLock { $0.append(.now) }
        return answers.withLock { table in
            guard var list = table[request.url], !list.isEmpty else {
                return HTTPExchangeResult(.failure(HTTPFailure(.connectionRefused, "nothing scripted")), latency: .zero)
            }
            let next = list.count > 1 ? list.removeFirst() : list[0]
            table[request.url] = list
            return next
        }
    }

    var requests: [HTTPRequest] { sent.withLock { $0 } }
    /// When each request was sent, in order.
    var sentTimes: [ContinuousClock.Instant] { times.withLock { $0 } }
}

/// A gate that always lets requests go and records what was reported.
final class RecordingGate: EndpointGate {
    let reports = Mutex<[(VerificationEndpoint, EndpointObservation)]>([])
    let open: Bool
    /// The attempt's wall clock: the test's, or the real one.
    let clock: (any DaemonClock)?

    init(open: Bool = true, clock: (any DaemonClock)? = nil) {
        self.open = open
        self.clock = clock
    }

    func now() -> Date { clock?.now() ?? Date() }

    func acquire(_ endpoint: VerificationEndpoint) async -> Bool { open }

    func report(_ endpoint: VerificationEndpoint, _ observation: EndpointObservation, retryAfter: Duration?, rateLimited: Bool) async {
        reports.withLock { $0.append((endpoint, observation)) }
    }

    var observations: [EndpointObservation] { reports.withLock { $0.map(\.1) } }
}

func answer(_ body: String) -> HTTPExchangeResult {
    answer(200, body)
}

func answer(_ status: Int, _ body: String, headers: [HTTPHeader] = []) -> HTTPExchangeResult {
    HTTPExchangeResult(.success(HTTPResponse(status: status, headers: headers, body: Array(body.utf8))), latency: .milliseconds(3))
}

func failure(_ kind: HTTPFailure.Kind) -> HTTPExchangeResult {
    HTTPExchangeResult(.failure(HTTPFailure(kind, "scripted")), latency: .milliseconds(3))
}

func claimed(_ orderID: String = "A1", receipt: String? = "QUJD", attempt: Int = 1, grant: Grant? = nil) -> ClaimedOrder {
    ClaimedOrder(
        reference: 1, orderID: orderID, productID: "gems", kind: grant == nil ? .verify : .deliver,
        proof: OrderProof(receipt: receipt), applicationUsername: "u-1", userID: "user-9", amount: "4.99", currency: "EUR",
        receivedAt: Date(timeIntervalSince1970: 1_800_000_000), attempt: attempt, grant: grant)
}
