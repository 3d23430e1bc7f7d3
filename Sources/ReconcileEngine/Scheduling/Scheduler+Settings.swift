import Foundation
import ReconcileCore
import ReconcileFoundation

extension Scheduler {
    /// What the scheduler needs from the configuration — limits, retry policy, lease and turn
    /// timing — as plain values, compared and replaced whole on reload. The parts that send the
    /// requests are ``Senders``.
    public struct Settings: Sendable, Hashable {
        /// `[Verifier]`'s limits: its orders, deliveries, revocation notices and consumption
        /// answers (the `main` pool; `maxRate` per endpoint).
        public var main: PoolLimits
        /// Google Play's own limits when `[GooglePlay]` is configured (its orders and outbox
        /// actions have a pool of their own); `nil`: none.
        public var googlePlay: PoolLimits?
        public var resolver: AttemptResolver
        /// The longest single request, for the lease.
        public var requestTimeout: Duration
        /// The sandbox's share of `maxRate` (a tenth for the App Store Server API).
        public var sandboxRateFactor = 1.0
        /// `[State] LeaseTime=` for a shared store: how long a lease lasts (renewed while the
        /// attempt runs); `nil` (SQLite) leases for twice the request time-out plus a minute.
        public var leaseTime: Duration?
        /// The shortest time from one turn's start to the next (`nil`: none). While attempts
        /// finish by the hundred a second, a turn for each would keep the scheduler busy
        /// committing a couple at a time; spaced, each turn commits what finished meanwhile in
        /// one transaction, and the attempts refill their slots from the work leased ahead.
        public var turnSpacing: Duration? = Scheduler.defaultTurnSpacing
        /// `[Discovery]`: what a purchase the stores reported does once its grace has ended
        /// (DESIGN §5b).
        public var discovery = DiscoverySettings()
        /// The verifiers configured: an order a discovered purchase becomes is taken in
        /// `pending` or `waiting` by them, as a spool file is.
        public var verifiers = ConfiguredVerifiers(kind: nil)

        /// Requests per second for `endpoint`; `nil` is unlimited.
        public func rate(for endpoint: VerificationEndpoint) -> Double? {
            if endpoint.isGooglePlay, let googlePlay { return googlePlay.maxRate }
            return endpoint == .sandbox ? main.maxRate.map { max(0.001, $0 * sandboxRateFactor) } : main.maxRate
        }

        public init(
            resolver: AttemptResolver, maxInFlight: Int, maxRate: Double?, burst: Int, circuitThreshold: Int, circuitCooldown: Duration,
            circuitMaxCooldown: Duration, requestTimeout: Duration
        ) {
            self.resolver = resolver
            self.main = PoolLimits(
                maxInFlight: maxInFlight, maxRate: maxRate, burst: burst, circuitThreshold: circuitThreshold,
                circuitCooldown: circuitCooldown, circuitMaxCooldown: circuitMaxCooldown)
            self.requestTimeout = requestTimeout
        }
    }

    /// One pool's limits: a section's `MaxInFlight=`, `MaxRate=`, `Burst=` and circuit keys.
    public struct PoolLimits: Sendable, Hashable {
        public var maxInFlight: Int
        /// Requests per second to each of the pool's endpoints; `nil` is unlimited.
        public var maxRate: Double?
        public var burst: Int
        public var circuitThreshold: Int
        public var circuitCooldown: Duration
        public var circuitMaxCooldown: Duration

        public init(
            maxInFlight: Int, maxRate: Double?, burst: Int, circuitThreshold: Int, circuitCooldown: Duration, circuitMaxCooldown: Duration
        ) {
            self.maxInFlight = maxInFlight
            self.maxRate = maxRate
            self.burst = burst
            self.circuitThreshold = circuitThreshold
            self.circuitCooldown = circuitCooldown
            self.circuitMaxCooldown = circuitMaxCooldown
        }

        /// The limits `[GooglePlay]` sets.
        public init(_ section: Configuration.GooglePlaySettings) {
            self.init(
                maxInFlight: section.maxInFlight, maxRate: section.maxRate, burst: section.burst, circuitThreshold: section.circuitThreshold,
                circuitCooldown: section.circuitCooldown, circuitMaxCooldown: section.circuitMaxCooldown)
        }
    }

    /// The parts that send requests, built from the configuration and replaced on reload with
    /// the settings: the verifiers, the delivery client and the outbox's senders.
    public struct Senders: Sendable {
        /// `[Verifier]`'s verifier; `nil` for a Google Play-only daemon.
        public var verifier: (any OrderVerifier)?
        /// The delivery client, when `[Delivery] URL=` is set.
        public var delivery: DeliveryClient?
        /// `[GooglePlay]`'s verifier, when configured: Google Play orders and their outbox
        /// actions (with ``Settings/googlePlay``'s limits).
        public var googlePlay: GooglePlayVerifier?
        /// The revocation sender, when `[Revocation] URL=` is set (DESIGN §5a). Its notices count
        /// against `[Verifier]`'s `MaxInFlight=` (the `main` pool; 16 by default, also for a
        /// Google Play-only daemon) and its endpoint has `[Verifier]`'s rate and circuit limits,
        /// as `delivery` does.
        public var revocation: RevocationSender?
        /// The consumption answer senders, one per App Store Server API environment, when
        /// `[Notifications] ConsumptionAnswer=on` with `Kind=appstore` (DESIGN §5a). They count
        /// against `[Verifier]`'s `MaxInFlight=` and share its endpoints' rate and circuit.
        public var consumption: [ConsumptionSender] = []

        public init(verifier: (any OrderVerifier)?, delivery: DeliveryClient? = nil) {
            self.verifier = verifier
            self.delivery = delivery
        }

        /// What verifies orders of `kind`: the first configured verifier that takes that work —
        /// for Google Play orders `[GooglePlay]`'s before `[Verifier]`'s (a `Kind=http` merchant
        /// takes them too), for deliveries the delivery client. `nil`: nothing configured can
        /// (deliveries: none is needed).
        public func verifier(for kind: WorkKind) -> (any OrderVerifier)? {
            let candidates: [(any OrderVerifier)?] = [googlePlay, verifier, delivery]
            return candidates.lazy.compactMap { $0 }.first { $0.work.contains(kind) }
        }

        /// The endpoints these senders talk to.
        public var endpoints: [VerificationEndpoint] {
            var used: [VerificationEndpoint] = []
            if let verifier {
                used.append(verifier.firstEndpoint)
                if verifier.firstEndpoint == .production { used.append(.sandbox) }
            }
            if let delivery { used.append(delivery.firstEndpoint) }
            if googlePlay != nil { used += [.googlePlay, .googlePlayToken] }
            if let revocation { used.append(revocation.endpoint) }
            return used
        }
    }

    // MARK: - Limits

    /// The admission limits of a configuration.
    static func limits(_ settings: Settings, share: Double = 1) -> EndpointAdmission.Limits {
        var rates: [VerificationEndpoint: Double] = [:]
        for endpoint in VerificationEndpoint.allCases { rates[endpoint] = settings.rate(for: endpoint) }
        var perEndpoint: [VerificationEndpoint: EndpointAdmission.EndpointLimits] = [:]
        if let play = settings.googlePlay {
            for endpoint in [VerificationEndpoint.googlePlay, .googlePlayToken] {
                perEndpoint[endpoint] = EndpointAdmission.EndpointLimits(
                    circuitThreshold: play.circuitThreshold, circuitCooldown: play.circuitCooldown,
                    circuitMaxCooldown: play.circuitMaxCooldown, burst: play.burst)
            }
        }
        return EndpointAdmission.Limits(
            circuitThreshold: settings.main.circuitThreshold, circuitCooldown: settings.main.circuitCooldown,
            circuitMaxCooldown: settings.main.circuitMaxCooldown, burst: settings.main.burst, rates: rates, perEndpoint: perEndpoint
        ).shared(share)
    }
}
