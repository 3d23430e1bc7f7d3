import Foundation
import ReconcileCore

/// Sends outbox actions of one endpoint (DESIGN §5a): the requests one action needs, and what the
/// answers mean. Never throws and never touches the store: the scheduler applies the outcome.
public protocol OutboxSender: Sendable {
    /// The endpoint its actions are stored under (the scheduler takes the first request's token
    /// and admits claims by this endpoint's circuit).
    var endpoint: VerificationEndpoint { get }

    func send(_ action: ClaimedAction, gate: any EndpointGate) async -> OutboxOutcome
}
