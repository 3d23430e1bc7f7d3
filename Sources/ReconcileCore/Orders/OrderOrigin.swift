/// Who made an order that no spool file brought (DESIGN §5b): the daemon, for a purchase a store
/// reported that no phone order claimed within the grace, or an operator's `reconcilectl
/// recover`. An order from the phone's spool file has none. Kept on the order, shown by `show`,
/// and sent in the delivery body.
public enum OrderOrigin: String, Sendable, Hashable, CaseIterable {
    case store
    case `operator`
}
