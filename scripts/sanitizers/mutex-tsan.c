// Makes Synchronization.Mutex visible to ThreadSanitizer on Linux. Loaded with LD_PRELOAD by
// scripts/test-sanitized thread; never part of a product.
//
// Why: Mutex's fast paths (a compare-exchange to lock and to unlock) are inlined into our code
// and instrumented, but under contention it locks in _MutexHandle._lockSlow, inside the
// uninstrumented libswiftSynchronization.so: a spin loop's compare-exchange or the kernel's
// FUTEX_LOCK_PI hands the lock over where ThreadSanitizer cannot see it, and every access the
// Mutex protects is then reported as a race (a three-line program with two threads appending
// to a Mutex<[Int]> is reported). These wrappers interpose the three slow paths and tell
// ThreadSanitizer what they did: an acquire of the handle's address after locking, a release
// before unlocking, the same happens-before edges the inlined fast paths already give it.
// Real races (an access outside any lock) are still reported.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>

// Weak: defined only in a process built with -sanitize=thread; elsewhere (the compiler, swift
// build) the wrappers just call through.
void __tsan_acquire(void *address) __attribute__((weak));
void __tsan_release(void *address) __attribute__((weak));

// Swift passes `self` (the handle's address: it is ~Copyable, borrowed) in the context register.
#define HANDLE void *__attribute__((swift_context)) handle
#define LOCK_SLOW "$s15Synchronization12_MutexHandleV9_lockSlowyys6UInt32VF"
#define UNLOCK_SLOW "$s15Synchronization12_MutexHandleV11_unlockSlowyyF"
#define TRY_LOCK_SLOW "$s15Synchronization12_MutexHandleV12_tryLockSlowSbyF"

typedef __attribute__((swiftcall)) void (*LockSlow)(uint32_t, HANDLE);
typedef __attribute__((swiftcall)) void (*UnlockSlow)(HANDLE);
typedef __attribute__((swiftcall)) bool (*TryLockSlow)(HANDLE);

__attribute__((swiftcall)) void lockSlow(uint32_t threadID, HANDLE) __asm__(LOCK_SLOW);
__attribute__((swiftcall)) void lockSlow(uint32_t threadID, HANDLE) {
    static LockSlow next;
    if (!next) next = (LockSlow)dlsym(RTLD_NEXT, LOCK_SLOW);
    next(threadID, handle);
    if (__tsan_acquire) __tsan_acquire(handle);
}

__attribute__((swiftcall)) void unlockSlow(HANDLE) __asm__(UNLOCK_SLOW);
__attribute__((swiftcall)) void unlockSlow(HANDLE) {
    static UnlockSlow next;
    if (!next) next = (UnlockSlow)dlsym(RTLD_NEXT, UNLOCK_SLOW);
    if (__tsan_release) __tsan_release(handle);
    next(handle);
}

__attribute__((swiftcall)) bool tryLockSlow(HANDLE) __asm__(TRY_LOCK_SLOW);
__attribute__((swiftcall)) bool tryLockSlow(HANDLE) {
    static TryLockSlow next;
    if (!next) next = (TryLockSlow)dlsym(RTLD_NEXT, TRY_LOCK_SLOW);
    bool locked = next(handle);
    if (locked && __tsan_acquire) __tsan_acquire(handle);
    return locked;
}
