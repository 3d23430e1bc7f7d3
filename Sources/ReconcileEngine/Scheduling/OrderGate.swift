import Foundation
import ReconcileCore

/// The scheduler's gate as one attempt of one order sees it: what its exchanges say about their
/// endpoint is reported with the order, so that a failure that follows the order is told from
/// one of the endpoint (``FailureAttribution``).
struct OrderGate: EndpointGate {
    let scheduler: Scheduler
    let order: Int64

    func acquire(_ endpoint: VerificationEndpoint) async -> Bool {
        await scheduler.acquire(endpoint)
    }

    func report(_ endpoint: VerificationEndpoint, _ observation: EndpointObservation, retryAfter: Duration?, rateLimited: Bool) async {
        // Google's token endpoint is asked for the service account, not for the order.
        await scheduler.report(
            endpoint, observation, retryAfter: retryAfter, rateLimited: rateLimited, order: endpoint == .googlePlayToken ? nil : order)
    }

    func now() -> Date {
        scheduler.now()
    }
}
