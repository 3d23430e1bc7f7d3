import Foundation
import ReconcileFoundation

/// One row of the outbox (DESIGN §5a): a follow-up request that must reach a server because an
/// order's state changed, written in the same transaction as the change and sent at least once,
/// with the backoff, circuit and rate limits of its endpoint.
///
/// Its payload holds only what the request needs besides secrets: a purchase token is read from
/// the order when the action is sent, never copied here.
public struct OutboxAction: Sendable, Hashable {
    /// The store's key; 0 for an action not inserted yet.
    public var reference: Int64
    /// The order's key (0 in a plan that inserts the order too: the store fills it in).
    public var orderReference: Int64
    /// The merchant's order id (read with the action; for messages).
    public var orderID: String
    public var kind: OutboxKind
    public var endpoint: VerificationEndpoint
    /// Unique in the store: the same follow-up is never recorded twice.
    public var idempotencyKey: String
    /// A JSON object: what the request needs (never a token or key).
    public var payload: String
    public var state: OutboxState
    /// Requests charged so far.
    public var attempts: Int
    /// Set exactly while the action waits to be sent.
    public var nextAttemptAt: Date?
    public var lease: Lease?
    public var createdAt: Date
    public var updatedAt: Date
    /// When the server stops caring (Google refunds an unacknowledged purchase three days after
    /// it; the daemon's deadline is 48 hours after the purchase).
    public var deadline: Date?
    /// When the deadline warning was given (at most once).
    public var warnedAt: Date?
    /// The code of the last outcome (`play_http_503`, `acknowledged`, `max_attempts`).
    public var reason: ReasonCode?
    /// Its text, for a person (never a secret).
    public var detail: String?

    /// Who sends the action now, until when.
    public struct Lease: Sendable, Hashable {
        public var owner: String
        public var until: Date?

        public init(owner: String, until: Date?) {
            self.owner = owner
            self.until = until
        }
    }

    public init(
        reference: Int64 = 0, orderReference: Int64 = 0, orderID: String, kind: OutboxKind, endpoint: VerificationEndpoint,
        idempotencyKey: String, payload: String, state: OutboxState = .pending, attempts: Int = 0, nextAttemptAt: Date? = nil,
        lease: Lease? = nil, createdAt: Date, updatedAt: Date, deadline: Date? = nil, warnedAt: Date? = nil, reason: ReasonCode? = nil,
        detail: String? = nil
    ) {
        self.reference = reference
        self.orderReference = orderReference
        self.orderID = orderID
        self.kind = kind
        self.endpoint = endpoint
        self.idempotencyKey = idempotencyKey
        self.payload = payload
        self.state = state
        self.attempts = attempts
        self.nextAttemptAt = nextAttemptAt
        self.lease = lease
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.deadline = deadline
        self.warnedAt = warnedAt
        self.reason = reason
        self.detail = detail
    }

    /// A member of the payload, when it is a string.
    public func payloadText(_ key: String) -> String? {
        guard case .object(let object)? = try? JSONParser().parse(Array(payload.utf8)) else { return nil }
        return object[key]?.stringValue
    }
}
