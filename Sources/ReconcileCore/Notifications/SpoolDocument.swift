import ReconcileFoundation

/// What a spool file holds (DESIGN §3): an order, or a store notification dropped by the web
/// handler that received it — an App Store Server Notification V2 (`{"signedPayload":…}`) or a
/// Cloud Pub/Sub push of a Play developer notification (`{"message":{"data":…}}`).
public enum SpoolDocument: Sendable, Hashable {
    case order
    case appStoreNotification
    case playNotification

    /// Sorts a file by its top-level keys; anything else is read as an order (and refused as
    /// one, with the order parser's reason, when it is not).
    public static func classify(_ bytes: [UInt8]) -> SpoolDocument {
        guard case .object(let object)? = try? JSONParser(allowsDuplicateKeys: true).parse(bytes) else { return .order }
        if object["order_id"] != nil { return .order }
        if case .string? = object["signedPayload"] { return .appStoreNotification }
        if case .object(let message)? = object["message"], message["data"] != nil { return .playNotification }
        return .order
    }
}
