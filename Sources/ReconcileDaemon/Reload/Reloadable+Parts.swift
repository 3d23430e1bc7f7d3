import ReconcileCore
import ReconcileEngine
import ReconcileHTTP
import ReconcileSpool
import Synchronization

// What each reloadable part takes from a reload. The parts live in other targets and know
// nothing of reloading; these conformances map the new configuration to their own settings.

extension CurlTransport: Reloadable {
    /// `CAFile=` files are read again (their contents may have changed under the same name).
    func reload(_ change: ConfigurationChange) async { reloadTrustAnchors() }
}

extension Scheduler: Reloadable {
    /// Verifiers, delivery, limits, retry policy; circuits go half-open (DESIGN §6).
    func reload(_ change: ConfigurationChange) async { apply(change.configured.settings, senders: change.configured.senders) }
}

extension EscalationRunner: Reloadable {
    func reload(_ change: ConfigurationChange) async { apply(change.next.escalation) }
}

extension SpoolIngestor: Reloadable {
    func reload(_ change: ConfigurationChange) async { apply(Daemon.ingestSettings(change.next, change.configured.notifications)) }
}

extension AppStoreNotificationPoller: Reloadable {
    func reload(_ change: ConfigurationChange) async { apply(change.configured.polling) }
}

extension PlayVoidedPurchasePoller: Reloadable {
    func reload(_ change: ConfigurationChange) async { apply(change.configured.playPolling) }
}

extension PlayPubSubPuller: Reloadable {
    func reload(_ change: ConfigurationChange) async { apply(change.configured.pubSubPulling) }
}

extension PlayPushConfirmer: Reloadable {
    func reload(_ change: ConfigurationChange) async { apply(change.configured.pushConfirming) }
}

extension MetricsPublisher: Reloadable {
    func reload(_ change: ConfigurationChange) async { retarget(change.next.daemon.metricsFile) }
}

extension SpoolWatchService: Reloadable {
    func reload(_ change: ConfigurationChange) async { apply(rescanInterval: change.next.spool.rescanInterval) }
}

extension PruneService: Reloadable {
    func reload(_ change: ConfigurationChange) async { apply(keepFinished: change.next.state.keepFinished) }
}

extension ControlHandler: Reloadable {
    /// Which verifiers `reconcilectl` actions may send orders to, and the stores' credentials
    /// `lookup` and `recover` use.
    func reload(_ change: ConfigurationChange) async {
        verifiers.withLock { $0 = change.next.verifiers }
        support.withLock { $0 = change.configured.support }
    }
}
