#ifndef RECONCILE_CCURL_SHIM_H
#define RECONCILE_CCURL_SHIM_H

// libcurl (OpenSSL flavour) for the daemon's HTTP transport. curl_easy_setopt,
// curl_multi_setopt and curl_easy_getinfo are variadic, which Swift cannot call: these wrappers
// fix one argument type each.

#include <curl/curl.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/pem.h>
#include <openssl/err.h>
#include <errno.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

static inline CURLcode reconcile_curl_setopt_long(CURL *handle, CURLoption option, long value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode reconcile_curl_setopt_pointer(CURL *handle, CURLoption option, const void *value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode reconcile_curl_setopt_write_function(CURL *handle, CURLoption option, curl_write_callback callback) {
    return curl_easy_setopt(handle, option, callback);
}

/// Sets a blob option (CURLOPT_CAINFO_BLOB): libcurl copies the bytes.
static inline CURLcode reconcile_curl_setopt_blob_copy(CURL *handle, CURLoption option, const void *data, size_t length) {
    struct curl_blob blob;
    blob.data = (void *)data;
    blob.len = length;
    blob.flags = CURL_BLOB_COPY;
    return curl_easy_setopt(handle, option, &blob);
}

/// An X509_STORE holding every certificate of a PEM bundle, parsed once (NULL when it holds
/// none), with libcurl's default of accepting a trusted intermediate as an anchor.
static inline X509_STORE *reconcile_store_from_pem(const void *data, int length) {
    BIO *bio = BIO_new_mem_buf(data, length);
    if (!bio) {
        ERR_clear_error();
        return NULL;
    }
    STACK_OF(X509_INFO) *infos = PEM_X509_INFO_read_bio(bio, NULL, NULL, NULL);
    BIO_free(bio);
    if (!infos) {
        ERR_clear_error();
        return NULL;
    }
    X509_STORE *store = X509_STORE_new();
    int added = 0;
    for (int index = 0; store && index < sk_X509_INFO_num(infos); index++) {
        X509_INFO *info = sk_X509_INFO_value(infos, index);
        if (info->x509 && X509_STORE_add_cert(store, info->x509) == 1) added++;
    }
    sk_X509_INFO_pop_free(infos, X509_INFO_free);
    ERR_clear_error();
    if (store && added == 0) {
        X509_STORE_free(store);
        return NULL;
    }
    if (store) X509_STORE_set_flags(store, X509_V_FLAG_PARTIAL_CHAIN);
    return store;
}

static CURLcode reconcile_use_cert_store(CURL *handle, void *ssl_ctx, void *store) {
    (void)handle;
    if (store) SSL_CTX_set1_cert_store((SSL_CTX *)ssl_ctx, (X509_STORE *)store);
    return CURLE_OK;
}

/// Verifies the request's connections against `store` (kept alive by the caller while the
/// transfer runs): libcurl calls back as each new connection's SSL_CTX is set up, after it
/// loaded its own CA options, and the store replaces what they loaded.
static inline CURLcode reconcile_curl_use_cert_store(CURL *handle, X509_STORE *store) {
    CURLcode code = curl_easy_setopt(handle, CURLOPT_SSL_CTX_FUNCTION, reconcile_use_cert_store);
    if (code != CURLE_OK) return code;
    return curl_easy_setopt(handle, CURLOPT_SSL_CTX_DATA, (void *)store);
}

static inline CURLMcode reconcile_curl_multi_setopt_long(CURLM *multi, CURLMoption option, long value) {
    return curl_multi_setopt(multi, option, value);
}

static inline CURLcode reconcile_curl_getinfo_long(CURL *handle, CURLINFO info, long *value) {
    return curl_easy_getinfo(handle, info, value);
}

static inline CURLcode reconcile_curl_getinfo_pointer(CURL *handle, CURLINFO info, char **value) {
    return curl_easy_getinfo(handle, info, value);
}

/// How many PEM certificates `length` bytes hold (text outside the BEGIN/END blocks is skipped,
/// as OpenSSL does): 0 for none (DER, a key alone, garbage), -1 when a block is damaged.
static inline int reconcile_count_pem_certificates(const void *bytes, int length) {
    ERR_clear_error();
    BIO *bio = BIO_new_mem_buf(bytes, length);
    if (!bio) return -1;
    int count = 0;
    X509 *certificate;
    while ((certificate = PEM_read_bio_X509(bio, NULL, NULL, NULL)) != NULL) {
        X509_free(certificate);
        count++;
    }
    BIO_free(bio);
    unsigned long error = ERR_peek_last_error();
    int clean = error == 0 || (ERR_GET_LIB(error) == ERR_LIB_PEM && ERR_GET_REASON(error) == PEM_R_NO_START_LINE);
    ERR_clear_error();
    return clean ? count : -1;
}

// MARK: - The socket-action loop (CurlTransport)
//
// libcurl's socket interface: libcurl says, through two callbacks, which sockets it wants
// watched for what and when it next wants its time-out action; the transport's thread waits on
// one epoll set for exactly those sockets (and an eventfd that new requests ring), and tells
// libcurl which socket is ready. With curl_multi_perform and curl_multi_poll every handle and
// every socket was looked at at every wake-up: ~14 % of the daemon's CPU went to poll() over 64
// sockets in the end-to-end profile. The callbacks are here, in C, because they only keep the
// epoll set and the deadline in step and run inside libcurl's calls.

/// The epoll set, libcurl's deadline, and the eventfd that wakes the loop.
typedef struct reconcile_curl_events {
    int epoll;
    int wake;
    CURLM *multi;
    /// CLOCK_MONOTONIC nanoseconds at which libcurl wants curl_multi_socket_action with
    /// CURL_SOCKET_TIMEOUT; -1: no deadline.
    int64_t deadline;
} reconcile_curl_events;

static inline int64_t reconcile_monotonic_nanoseconds(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
}

/// CURLMOPT_SOCKETFUNCTION: keeps the epoll set in step with what libcurl wants watched. A
/// socket libcurl has not been told about (socketp NULL) is added and marked; a marked one is
/// modified. EEXIST and ENOENT cover a descriptor number closed and reused in between.
static int reconcile_curl_socket_changed(CURL *easy, curl_socket_t socket, int what, void *context, void *socketp) {
    (void)easy;
    reconcile_curl_events *events = (reconcile_curl_events *)context;
    if (what == CURL_POLL_REMOVE) {
        // Fails harmlessly (EBADF, ENOENT) when libcurl closed the socket first.
        epoll_ctl(events->epoll, EPOLL_CTL_DEL, socket, NULL);
        curl_multi_assign(events->multi, socket, NULL);
        return 0;
    }
    struct epoll_event event;
    event.events = ((what & CURL_POLL_IN) ? EPOLLIN : 0) | ((what & CURL_POLL_OUT) ? EPOLLOUT : 0);
    event.data.u64 = 0;
    event.data.fd = socket;
    if (socketp == NULL) {
        if (epoll_ctl(events->epoll, EPOLL_CTL_ADD, socket, &event) != 0 && errno == EEXIST)
            epoll_ctl(events->epoll, EPOLL_CTL_MOD, socket, &event);
        curl_multi_assign(events->multi, socket, (void *)events);
    } else if (epoll_ctl(events->epoll, EPOLL_CTL_MOD, socket, &event) != 0 && errno == ENOENT) {
        epoll_ctl(events->epoll, EPOLL_CTL_ADD, socket, &event);
    }
    return 0;
}

/// CURLMOPT_TIMERFUNCTION: when libcurl next wants its time-out action (-1: never).
static int reconcile_curl_timer_changed(CURLM *multi, long timeout_ms, void *context) {
    (void)multi;
    reconcile_curl_events *events = (reconcile_curl_events *)context;
    events->deadline = timeout_ms < 0 ? -1 : reconcile_monotonic_nanoseconds() + (int64_t)timeout_ms * 1000000;
    return 0;
}

/// Sets up the epoll set and the eventfd and hands libcurl the callbacks. 0, or -1 with errno.
static inline int reconcile_curl_events_attach(reconcile_curl_events *events, CURLM *multi) {
    events->multi = multi;
    events->deadline = -1;
    events->epoll = epoll_create1(EPOLL_CLOEXEC);
    if (events->epoll < 0) return -1;
    events->wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (events->wake < 0) return -1;
    struct epoll_event event;
    event.events = EPOLLIN;
    event.data.u64 = 0;
    event.data.fd = events->wake;
    if (epoll_ctl(events->epoll, EPOLL_CTL_ADD, events->wake, &event) != 0) return -1;
    curl_multi_setopt(multi, CURLMOPT_SOCKETFUNCTION, reconcile_curl_socket_changed);
    curl_multi_setopt(multi, CURLMOPT_SOCKETDATA, (void *)events);
    curl_multi_setopt(multi, CURLMOPT_TIMERFUNCTION, reconcile_curl_timer_changed);
    curl_multi_setopt(multi, CURLMOPT_TIMERDATA, (void *)events);
    return 0;
}

/// Rings the loop (from any thread).
static inline void reconcile_curl_events_wake(reconcile_curl_events *events) {
    uint64_t one = 1;
    ssize_t written = write(events->wake, &one, sizeof one);
    (void)written;  // EAGAIN: the counter is full, so the loop is rung already.
}

/// Reads the eventfd's count back to zero (the loop polling without epoll).
static inline void reconcile_curl_events_clear(reconcile_curl_events *events) {
    uint64_t value;
    ssize_t got = read(events->wake, &value, sizeof value);
    (void)got;
}

/// One round of the loop: waits for a ready socket, libcurl's deadline or a ring (at most
/// `idle_ms` when libcurl has no deadline: -1 for ever), then tells libcurl what happened.
/// Returns 1 when the loop was rung (new requests to start), 0 otherwise, -1 when epoll_wait
/// failed (libcurl's deadline is acted on all the same).
static inline int reconcile_curl_events_run_once(reconcile_curl_events *events, int idle_ms) {
    int timeout = idle_ms;
    if (events->deadline >= 0) {
        int64_t left = events->deadline - reconcile_monotonic_nanoseconds();
        // In milliseconds, rounded up (waking a little early would only loop once more), and
        // capped before it is narrowed to an int: a deadline weeks away must not wrap.
        int64_t milliseconds = left <= 0 ? 0 : (left + 999999) / 1000000;
        if (idle_ms >= 0 && milliseconds > idle_ms) milliseconds = idle_ms;
        if (milliseconds > INT32_MAX) milliseconds = INT32_MAX;
        timeout = (int)milliseconds;
    }
    struct epoll_event ready[64];
    int count = epoll_wait(events->epoll, ready, 64, timeout);
    int rung = 0;
    if (count < 0) {
        rung = errno == EINTR ? 0 : -1;
        count = 0;
    }
    int running = 0;
    for (int index = 0; index < count; index++) {
        int fd = ready[index].data.fd;
        if (fd == events->wake) {
            uint64_t value;
            ssize_t got = read(events->wake, &value, sizeof value);
            (void)got;
            rung = 1;
            continue;
        }
        uint32_t what = ready[index].events;
        // An error or hang-up is given as readable and writable too: libcurl then does the I/O
        // and meets the socket's own error (ECONNRESET, EPIPE), whatever it was waiting for.
        // (libcurl 7.88 fails a transfer at once only for CURL_CSELECT_ERR alone, and would
        // otherwise do nothing with a socket it only writes to, and be told again: a spin.)
        int mask = ((what & EPOLLIN) ? CURL_CSELECT_IN : 0) | ((what & EPOLLOUT) ? CURL_CSELECT_OUT : 0);
        if (what & (EPOLLERR | EPOLLHUP)) mask |= CURL_CSELECT_IN | CURL_CSELECT_OUT | CURL_CSELECT_ERR;
        curl_multi_socket_action(events->multi, fd, mask, &running);
    }
    if (events->deadline >= 0 && events->deadline <= reconcile_monotonic_nanoseconds()) {
        events->deadline = -1;
        curl_multi_socket_action(events->multi, CURL_SOCKET_TIMEOUT, 0, &running);
    }
    return rung;
}

#endif
