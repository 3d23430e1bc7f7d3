#ifndef RECONCILE_CLINUX_SHIM_H
#define RECONCILE_CLINUX_SHIM_H

#include <pthread.h>

// Linux calls that Glibc's Swift module hides behind _GNU_SOURCE or variadic
// signatures, wrapped with fixed argument lists.

#include <sys/types.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/inotify.h>
#include <sys/timerfd.h>
#include <sys/eventfd.h>
#include <poll.h>
#include <unistd.h>
#include <fcntl.h>
#include <errno.h>
#include <time.h>
#include <sys/wait.h>

/// The credentials of the process at the other end of a Unix socket (SO_PEERCRED).
struct reconcile_peer_credentials {
    pid_t pid;
    uid_t uid;
    gid_t gid;
};

#ifndef SO_PEERCRED
#define SO_PEERCRED 17
#endif

static inline int reconcile_get_peer_credentials(int fd, struct reconcile_peer_credentials *out) {
    socklen_t len = sizeof(*out);
    return getsockopt(fd, SOL_SOCKET, SO_PEERCRED, out, &len);
}

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
#endif

/// rename(2) that fails with EEXIST instead of replacing the target.
static inline int reconcile_rename_noreplace(int olddirfd, const char *oldpath, int newdirfd, const char *newpath) {
    return (int)syscall(SYS_renameat2, olddirfd, oldpath, newdirfd, newpath, RENAME_NOREPLACE);
}

// glibc declares pthread_setname_np only under _GNU_SOURCE, which would also change how other
// headers define shared types (fd_set) for every module that includes them; declared here alone.
extern int pthread_setname_np(pthread_t thread, const char *name);

/// Names the calling thread (15 bytes at most), as `ps -L` and /proc/self/task/*/comm show it.
static inline int reconcile_name_this_thread(const char *name) {
    return pthread_setname_np(pthread_self(), name);
}

/// open(2) is variadic in C; this form always passes a mode.
static inline int reconcile_openat(int dirfd, const char *path, int flags, mode_t mode) {
    return openat(dirfd, path, flags, mode);
}

/// fcntl(2) is variadic in C.
static inline int reconcile_fcntl_setfl(int fd, int flags) {
    return fcntl(fd, F_SETFL, flags);
}

static inline int reconcile_fcntl_getfl(int fd) {
    return fcntl(fd, F_GETFL);
}

#ifndef TFD_TIMER_CANCEL_ON_SET
#define TFD_TIMER_CANCEL_ON_SET (1 << 1)
#endif

/// Arms a CLOCK_REALTIME timerfd far in the future with TFD_TIMER_CANCEL_ON_SET: a read then
/// fails with ECANCELED whenever the wall clock is set (stepped), which is how the scheduler
/// notices a clock step.
static inline int reconcile_timerfd_watch_clock(int fd) {
    struct itimerspec spec = {0};
    spec.it_value.tv_sec = 0x7FFFFFFF;
    return timerfd_settime(fd, TFD_TIMER_ABSTIME | TFD_TIMER_CANCEL_ON_SET, &spec, NULL);
}

#include <spawn.h>
#include <signal.h>

// Hidden behind _GNU_SOURCE in glibc's spawn.h (2.26 and 2.34 on); declared here alone.
#ifndef POSIX_SPAWN_SETSID
#define POSIX_SPAWN_SETSID 0x80
#endif
extern int posix_spawn_file_actions_addclosefrom_np(posix_spawn_file_actions_t *actions, int from);
extern int pipe2(int fds[2], int flags);

/// Starts `path` (argv and envp NULL-terminated) as the leader of a new session, so of a process
/// group of its own that can be signalled whole: standard input and output /dev/null, standard
/// error `stderr_fd`, every other descriptor closed, every signal unblocked and at its default.
/// Returns 0, or the errno of what failed.
static inline int reconcile_spawn_session(pid_t *pid, const char *path, char *const argv[], char *const envp[], int stderr_fd) {
    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attributes;
    int error = posix_spawn_file_actions_init(&actions);
    if (error) return error;
    error = posix_spawnattr_init(&attributes);
    if (error) {
        posix_spawn_file_actions_destroy(&actions);
        return error;
    }
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    if (!error) error = posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    if (!error) error = posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    if (!error) error = posix_spawn_file_actions_adddup2(&actions, stderr_fd, 2);
    if (!error) error = posix_spawn_file_actions_addclosefrom_np(&actions, 3);
    if (!error) error = posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    if (!error) error = posix_spawnattr_setsigmask(&attributes, &none);
    if (!error) error = posix_spawnattr_setsigdefault(&attributes, &all);
    if (!error) error = posix_spawn(pid, path, &actions, &attributes, argv, envp);
    posix_spawnattr_destroy(&attributes);
    posix_spawn_file_actions_destroy(&actions);
    return error;
}

/// The waitpid(2) status macros, which Swift cannot import.
static inline int reconcile_exited(int status) { return WIFEXITED(status); }
static inline int reconcile_exit_status(int status) { return WEXITSTATUS(status); }
static inline int reconcile_signalled(int status) { return WIFSIGNALED(status); }
static inline int reconcile_termination_signal(int status) { return WTERMSIG(status); }

#endif
