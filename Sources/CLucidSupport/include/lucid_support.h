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

#endif
