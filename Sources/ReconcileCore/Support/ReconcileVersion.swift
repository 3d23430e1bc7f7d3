/// The version of reconcile, printed by `--version`.
public enum ReconcileVersion {
    public static let current = "0.1.0"
}
