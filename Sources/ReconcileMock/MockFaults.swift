import Foundation
import ReconcileCore
import ReconcileFoundation

/// Faults the mock injects, set at start (`--faults JSON`) or at run time (`POST /_mock/config`).
///
/// Rates are probabilities per request; `statusRates` maps an HTTP status to its probability.
/// Faults apply to the verification and delivery endpoints, never to `/_mock/…`.
public struct MockFaults: Sendable, Hashable {
    public var latency: Duration = .zero
    /// Every request answers 503 (or resets, with `outageResets`).
    public var outage = false
    public var outageResets = false
    public var statusRates: [Int: Double] = [:]
    public var resetRate = 0.0
    public var resetMidBodyRate = 0.0
    public var truncateRate = 0.0
    public var garbageRate = 0.0
    public var slowBodyRate = 0.0
    public var slowBodyPause: Duration = .milliseconds(200)
    /// Sent with every 429 and 503.
    public var retryAfter: String?
    /// Every answer is a redirect to this URL.
    public var redirectTo: String?
    /// Every answer is padded to this many bytes (an oversized body).
    public var bodyBytes: Int?
    /// Every answer has this content type.
    public var contentType: String?
    /// Apply only to paths with this prefix (nil: every endpoint).
    public var pathPrefix: String?

    public init() {}

    /// Applies a JSON object of changes (`{"latency_ms": 50, "status_rates": {"503": 0.5}, …}`);
    /// `{"reset": true}` first returns to no faults.
    public mutating func apply(_ object: JSONObject) throws(MockServerError) {
        if object["reset"]?.boolValue == true { self = MockFaults() }
        for member in object.members {
            let value = member.value
            switch member.key {
            case "reset": continue
            case "latency_ms": latency = .milliseconds(value.int64Value ?? 0)
            case "outage": outage = value.boolValue ?? false
            case "outage_resets": outageResets = value.boolValue ?? false
            case "status_rates":
                statusRates = [:]
                for rate in value.objectValue?.members ?? [] {
                    guard let status = Int(rate.key), let probability = rate.value.numberText.flatMap(Double.init) else {
                        throw MockServerError("status_rates wants {\"503\": 0.5}")
                    }
                    statusRates[status] = probability
                }
            case "reset_rate": resetRate = Self.rate(value)
            case "reset_mid_body_rate": resetMidBodyRate = Self.rate(value)
            case "truncate_rate": truncateRate = Self.rate(value)
            case "garbage_rate": garbageRate = Self.rate(value)
            case "slow_body_rate": slowBodyRate = Self.rate(value)
            case "slow_body_pause_ms": slowBodyPause = .milliseconds(value.int64Value ?? 200)
            case "retry_after": retryAfter = value.stringOrNumberText
            case "redirect_to": redirectTo = value.stringValue
            case "body_bytes": bodyBytes = value.int64Value.map(Int.init)
            case "content_type": contentType = value.stringValue
            case "path_prefix": pathPrefix = value.stringValue
            default: throw MockServerError("unknown fault \"\(member.key)\"")
            }
        }
    }

    static func rate(_ value: JSONValue) -> Double {
        value.numberText.flatMap(Double.init) ?? 0
    }
}
