#ifndef RECONCILE_CCRYPTO_SHIM_H
#define RECONCILE_CCRYPTO_SHIM_H

#include <openssl/evp.h>
#include <openssl/sha.h>

#endif
