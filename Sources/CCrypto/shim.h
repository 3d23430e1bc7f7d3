#ifndef RECONCILE_CCRYPTO_SHIM_H
#define RECONCILE_CCRYPTO_SHIM_H

#include <openssl/asn1.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/ecdsa.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/objects.h>
#include <openssl/pem.h>
#include <openssl/pkcs7.h>
#include <openssl/sha.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>

// Wrappers for what Swift cannot import: OpenSSL's macros (stacks, BIO controls, PKCS#7 type
// tests) and union members. Each one only forwards to OpenSSL.

// MARK: - PEM

/// A pass-phrase callback that refuses: an encrypted PEM fails to load instead of prompting on
/// the terminal (OpenSSL's default callback would read from it).
static inline int reconcile_pem_no_passphrase(char *buffer, int size, int rwflag, void *userdata) {
    (void)buffer;
    (void)size;
    (void)rwflag;
    (void)userdata;
    return -1;
}

static inline EVP_PKEY *reconcile_pem_read_private_key(BIO *bio) {
    return PEM_read_bio_PrivateKey(bio, NULL, reconcile_pem_no_passphrase, NULL);
}

static inline EVP_PKEY *reconcile_pem_read_public_key(BIO *bio) {
    return PEM_read_bio_PUBKEY(bio, NULL, reconcile_pem_no_passphrase, NULL);
}

static inline X509 *reconcile_pem_read_certificate(BIO *bio) {
    return PEM_read_bio_X509(bio, NULL, reconcile_pem_no_passphrase, NULL);
}

// MARK: - BIO

/// BIO_get_mem_data (a macro): the bytes written to a memory BIO so far.
static inline long reconcile_bio_mem_data(BIO *bio, char **data) {
    return BIO_get_mem_data(bio, data);
}

// MARK: - STACK_OF(X509)

static inline STACK_OF(X509) *reconcile_x509_stack_new(void) {
    return sk_X509_new_null();
}

/// Frees the stack only; the certificates in it stay owned by the caller.
static inline void reconcile_x509_stack_free(STACK_OF(X509) *stack) {
    sk_X509_free(stack);
}

/// Frees the stack and releases one reference to every certificate in it.
static inline void reconcile_x509_stack_pop_free(STACK_OF(X509) *stack) {
    sk_X509_pop_free(stack, X509_free);
}

static inline int reconcile_x509_stack_push(STACK_OF(X509) *stack, X509 *certificate) {
    return sk_X509_push(stack, certificate);
}

static inline int reconcile_x509_stack_count(const STACK_OF(X509) *stack) {
    return sk_X509_num(stack);
}

static inline X509 *reconcile_x509_stack_value(const STACK_OF(X509) *stack, int index) {
    return sk_X509_value(stack, index);
}

// MARK: - STACK_OF(ASN1_TYPE) (ASN1_SEQUENCE_ANY)

static inline int reconcile_asn1_any_count(const ASN1_SEQUENCE_ANY *stack) {
    return sk_ASN1_TYPE_num(stack);
}

static inline ASN1_TYPE *reconcile_asn1_any_value(const ASN1_SEQUENCE_ANY *stack, int index) {
    return sk_ASN1_TYPE_value(stack, index);
}

static inline void reconcile_asn1_any_free(ASN1_SEQUENCE_ANY *stack) {
    sk_ASN1_TYPE_pop_free(stack, ASN1_TYPE_free);
}

/// The string-shaped value of an ASN1_TYPE (the union member every string, INTEGER, SEQUENCE and
/// SET shares), or NULL for the types that hold something else (BOOLEAN, NULL, OBJECT).
static inline const ASN1_STRING *reconcile_asn1_type_string(const ASN1_TYPE *value) {
    switch (value->type) {
    case V_ASN1_BOOLEAN:
    case V_ASN1_NULL:
    case V_ASN1_OBJECT:
        return NULL;
    default:
        return value->value.asn1_string;
    }
}

// MARK: - PKCS#7

static inline int reconcile_pkcs7_is_signed(const PKCS7 *p7) {
    return PKCS7_type_is_signed(p7);
}

/// The content of a SignedData whose content type is pkcs7-data: its OCTET STRING, or NULL when
/// the message is detached or carries another content type.
static inline const ASN1_OCTET_STRING *reconcile_pkcs7_signed_data_content(const PKCS7 *p7) {
    if (!PKCS7_type_is_signed(p7) || p7->d.sign == NULL) {
        return NULL;
    }
    const PKCS7 *inner = p7->d.sign->contents;
    if (inner == NULL || !PKCS7_type_is_data(inner)) {
        return NULL;
    }
    return inner->d.data;
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
