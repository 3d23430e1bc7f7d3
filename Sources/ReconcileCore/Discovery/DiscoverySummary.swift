import Foundation
import ReconcileFoundation

/// The purchases the stores reported that need watching (`reconcilectl status`, the metrics):
/// those waiting for the phone's order and those left for a person — each read through its own
/// index, never by counting the whole table (a store reports every purchase, most of them
/// joined to the phone's order at once).
public struct DiscoverySummary: Sendable, Hashable {
    /// Purchases waiting out their grace.
    public var waiting: Int
    /// When the longest-waiting one was first reported.
    public var oldestWaitingDiscoveredAt: Date?
    /// Purchases kept `no_account`: no order can be made without a person.
    public var noAccount: Int

    public init(waiting: Int = 0, oldestWaitingDiscoveredAt: Date? = nil, noAccount: Int = 0) {
        self.waiting = waiting
        self.oldestWaitingDiscoveredAt = oldestWaitingDiscoveredAt
        self.noAccount = noAccount
    }
}

extension DiscoverySummary {
    /// As `status --json` and the daemon's status answer carry it: `{"waiting", "no_account",
    /// "oldest_waiting"}`, every field always present.
    public var json: JSONObject {
        JSONObject([
            "waiting": .integer(waiting), "no_account": .integer(noAccount),
            "oldest_waiting": oldestWaitingDiscoveredAt.map { .string(RFC3339.format($0)) } ?? .null,
        ])
    }

    /// Reads ``json`` back; what is missing counts as none.
    public init(json value: JSONValue?) {
        self.init(
            waiting: Int(value?["waiting"]?.int64Value ?? 0), oldestWaitingDiscoveredAt: value?["oldest_waiting"]?.stringValue.flatMap(RFC3339.parse),
            noAccount: Int(value?["no_account"]?.int64Value ?? 0))
    }
}
