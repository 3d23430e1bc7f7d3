import Foundation
import Glibc

/// Runs a command to its end through `posix_spawn`, with no descriptor of the test process's but
/// its standard streams (input `/dev/null`, output and errors into a log): for commands that
/// leave a daemon behind (`pg_ctl start`), which would otherwise inherit the descriptor that
/// Foundation's `Process` watches for its child's end, and keep it from ever seeing it.
public enum SpawnedCommand {
    /// Runs `command` (an absolute path first) and returns its exit status (128 + signal when
    /// killed, -1 when it could not start).
    public static func run(_ command: [String], log: String) -> Int32 {
        let argv: [UnsafeMutablePointer<CChar>?] = command.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        let output = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
        guard output >= 0 else { return -1 }
        defer { close(output) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, output, 1)
        posix_spawn_file_actions_adddup2(&actions, output, 2)
        // glibc's closefrom action, which Swift's Glibc module hides (it needs _GNU_SOURCE).
        if let closeFrom = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np") {
            typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
            _ = unsafeBitCast(closeFrom, to: CloseFrom.self)(&actions, 3)
        }
        var child: pid_t = 0
        guard posix_spawn(&child, command[0], &actions, nil, argv, environ) == 0 else { return -1 }
        var status: Int32 = 0
        while waitpid(child, &status, 0) < 0 && errno == EINTR {}
        return status & 0x7f == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
    }
}
