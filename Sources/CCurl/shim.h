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

#endif
