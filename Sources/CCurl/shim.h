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

#endif
