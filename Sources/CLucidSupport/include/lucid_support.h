#ifndef LUCID_SUPPORT_H
#define LUCID_SUPPORT_H
#include <stddef.h>
#include <stdint.h>

/// Extends a CRC32C (Castagnoli, reflected, init/xorout 0xFFFFFFFF handled inside) over `length` bytes.
/// Pass 0 as `crc` to start. Uses the SSE4.2 `crc32` instruction when the CPU has it, a table otherwise.
uint32_t lucid_crc32c_extend(uint32_t crc, const void *data, size_t length);

/// `lucid_crc32c_extend` on the portable table path, whatever the CPU (tests compare the two paths).
uint32_t lucid_crc32c_extend_portable(uint32_t crc, const void *data, size_t length);

/// 1 when the hardware path is in use (for tests and diagnostics).
int lucid_crc32c_hardware(void);

/// Asks the CPU to start loading the cache line holding `address` (a hint: never faults, whatever the address).
static inline void lucid_prefetch(const void *address) { __builtin_prefetch(address); }

/// `lucid_prefetch` of every cache line the `length` bytes from `start` lie on (the first one when `length` is 0).
static inline void lucid_prefetch_range(const void *start, size_t length) {
    uintptr_t line = (uintptr_t)start & ~(uintptr_t)63;
    uintptr_t end = (uintptr_t)start + (length > 0 ? length : 1);
    do {
        __builtin_prefetch((const void *)line);
        line += 64;
    } while (line < end);
}

/// Whether bit `bit` of the bit array `words` is set (an atomic load with acquire ordering).
static inline int lucid_bits_test(const uint64_t *words, size_t bit) {
    return (int)((__atomic_load_n(&words[bit >> 6], __ATOMIC_ACQUIRE) >> (bit & 63)) & 1);
}

/// Sets bit `bit` of the bit array `words` (an atomic OR with release ordering: concurrent setters of other bits
/// of the same word lose nothing).
static inline void lucid_bits_set(uint64_t *words, size_t bit) {
    __atomic_fetch_or(&words[bit >> 6], (uint64_t)1 << (bit & 63), __ATOMIC_RELEASE);
}

#endif
