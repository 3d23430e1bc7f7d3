/// A part of the daemon that a reload (SIGHUP, `reconcilectl reload`; DESIGN §8) hands the new
/// configuration to. The daemon first checks the whole configuration — the files, the secrets
/// and keys they name, the keys that need a restart — and only a reload that passed gives each
/// part its change, in the order of ``Daemon/reloadables``. A new reloadable part conforms here
/// (its mapping from configuration to its own settings beside its conformance) and joins that
/// list.
protocol Reloadable: Sendable {
    func reload(_ change: ConfigurationChange) async
}
