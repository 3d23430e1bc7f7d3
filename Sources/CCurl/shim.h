#ifndef RECONCILE_CCURL_SHIM_H
#define RECONCILE_CCURL_SHIM_H

// libcurl (OpenSSL flavour) for the daemon's HTTP transport. curl_easy_setopt,
// curl_multi_setopt and curl_easy_getinfo are variadic, which Swift cannot call: these wrappers
// fix one argument type each.

#include <curl/curl.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/pem.h>

static inline CURLcode reconcile_curl_setopt_long(CURL *handle, CURLoption option, long value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode reconcile_curl_setopt_pointer(CURL *handle, CURLoption option, const void *value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode reconcile_curl_setopt_write_function(CURL *handle, CURLoption option, curl_write_callback callback) {
    return curl_easy_setopt(handle, option, callback);
}

typedef CURLcode (*reconcile_ssl_ctx_callback)(CURL *handle, void *ssl_ctx, void *user);

static inline CURLcode reconcile_curl_setopt_ssl_ctx_function(CURL *handle, reconcile_ssl_ctx_callback callback) {
    return curl_easy_setopt(handle, CURLOPT_SSL_CTX_FUNCTION, callback);
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

/// Adds trust anchors to the OpenSSL context libcurl is about to use, on top of the system's
/// bundle (for `CAFile=`). Returns how many were added.
static inline int reconcile_add_trust_anchors(void *ssl_ctx, X509 *const *certificates, int count) {
    X509_STORE *store = SSL_CTX_get_cert_store((SSL_CTX *)ssl_ctx);
    int added = 0;
    for (int index = 0; index < count; index++) {
        if (X509_STORE_add_cert(store, certificates[index]) == 1) added++;
    }
    return added;
}

/// Reads every certificate of a PEM file. The caller frees each with X509_free.
static inline int reconcile_read_pem_certificates(const char *path, X509 **out, int capacity) {
    FILE *file = fopen(path, "r");
    if (!file) return -1;
    int count = 0;
    while (count < capacity) {
        X509 *certificate = PEM_read_X509(file, NULL, NULL, NULL);
        if (!certificate) break;
        out[count++] = certificate;
    }
    fclose(file);
    return count;
}

#endif
