/// Exit statuses of `reconciled` and `reconcilectl` (sysexits.h where one fits).
public enum ExitStatus {
    /// Clean stop, or the command did what was asked.
    public static let success: Int32 = 0
    /// A runtime failure (the message says which).
    public static let failure: Int32 = 1
    /// A wrong command line (`EX_USAGE`).
    public static let usage: Int32 = 64
    /// A bad configuration (`EX_CONFIG`): systemd's `RestartPreventExitStatus=78` keeps a broken
    /// configuration from restart-looping.
    public static let configuration: Int32 = 78
}
