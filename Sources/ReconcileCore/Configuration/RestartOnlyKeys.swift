/// The keys a reload may not change (DESIGN §8): the daemon holds them open (the spool watch,
/// the database and its lock, the control socket), so a change needs a restart.
public enum RestartOnlyKeys {
    /// The restart-only keys that differ between two configurations, as `[Section] Key=`.
    public static func changed(from old: Configuration, to new: Configuration) -> [String] {
        var keys: [String] = []
        if old.spool.directory != new.spool.directory { keys.append("[Spool] Directory=") }
        if old.state.database != new.state.database { keys.append("[State] Database=") }
        if old.state.password != new.state.password { keys.append("[State] PasswordCredential=/PasswordFile=") }
        if old.control.socket != new.control.socket { keys.append("[Control] Socket=") }
        if old.daemon.node != new.daemon.node { keys.append("[Daemon] Node=") }
        return keys
    }
}
