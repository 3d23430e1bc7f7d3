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

#endif
