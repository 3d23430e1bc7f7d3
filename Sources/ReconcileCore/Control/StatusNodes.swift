import Foundation
import ReconcileFoundation

/// The nodes of a shared store as `status` shows them in JSON (the control socket's answer and
/// `reconcilectl status --json`), and read back.
public enum StatusNodes {
    public static func json(_ nodes: [NodeStatus]) -> JSONValue {
        .array(nodes.map { node in
            .object(JSONObject([
                "name": .string(node.name), "live": .bool(node.live), "last_heartbeat": .string(RFC3339.formatWithMilliseconds(node.lastHeartbeat)),
                "in_flight": .integer(node.inFlight), "leases": .integer(node.leases),
                "started_at": node.startedAt.map { .string(RFC3339.format($0)) } ?? .null, "version": .string(orNull: node.version),
                "circuits": .object(JSONObject(node.circuits.sorted { $0.key < $1.key }.map { JSONObject.Member(key: $0.key, value: .string($0.value)) })),
            ]))
        })
    }

    public static func parse(_ value: JSONValue?) -> [NodeStatus] {
        (value?.arrayValue ?? []).compactMap { item in
            guard let object = item.objectValue, let name = object["name"]?.stringValue,
                let last = object["last_heartbeat"]?.stringValue.flatMap(RFC3339.parse)
            else { return nil }
            var circuits: [String: String] = [:]
            for member in object["circuits"]?.objectValue?.members ?? [] { circuits[member.key] = member.value.stringValue }
            return NodeStatus(
                name: name, lastHeartbeat: last, live: object["live"]?.boolValue ?? false, inFlight: Int(object["in_flight"]?.int64Value ?? 0),
                circuits: circuits, startedAt: object["started_at"]?.stringValue.flatMap(RFC3339.parse), version: object["version"]?.stringValue,
                leases: Int(object["leases"]?.int64Value ?? 0))
        }
    }
}
