// CRC32C (Castagnoli). The only C in the engine besides liblz4: a hardware path via the SSE4.2
// crc32 instruction (three interleaved chains on long buffers), chosen at run time, and a portable slicing-by-8
// table fallback.
#include "lucid_support.h"
#include <pthread.h>
#include <string.h>

static uint32_t table[8][256];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;
static int hw_available = 0;

static void build_table(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : (c >> 1);
        table[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = table[0][i];
        for (int t = 1; t < 8; t++) { c = table[0][c & 0xFF] ^ (c >> 8); table[t][i] = c; }
    }
}

static uint32_t crc_sw(uint32_t crc, const unsigned char *p, size_t n) {
    pthread_once(&table_once, build_table);
    while (n >= 8) {
        uint64_t v; memcpy(&v, p, 8);
        uint32_t lo = (uint32_t)v ^ crc, hi = (uint32_t)(v >> 32);
        crc = table[7][lo & 0xFF] ^ table[6][(lo >> 8) & 0xFF] ^ table[5][(lo >> 16) & 0xFF] ^ table[4][lo >> 24]
            ^ table[3][hi & 0xFF] ^ table[2][(hi >> 8) & 0xFF] ^ table[1][(hi >> 16) & 0xFF] ^ table[0][hi >> 24];
        p += 8; n -= 8;
    }
    while (n--) crc = table[0][(crc ^ *p++) & 0xFF] ^ (crc >> 8);
    return crc;
}

#if defined(__x86_64__)
// The crc32 instruction takes 3 cycles and can start every cycle, so one chain of it runs at a third of the
// processor's rate. Buffers of at least 3 * STRIDE bytes are taken in chunks of three STRIDE-byte streams, each
// with its own chain, and the three registers are then combined: the register after A ‖ B is the register after A
// moved through |B| zero bytes, XOR the register after B started from 0 (the update is linear over GF(2)). Moving a
// register through STRIDE zero bytes is a linear map too, tabulated per byte of the register (shift_table).
#define STRIDE 128

static uint32_t shift_table[4][256];
static pthread_once_t shift_once = PTHREAD_ONCE_INIT;

static void build_shift_table(void) {
    pthread_once(&table_once, build_table);
    for (int k = 0; k < 4; k++) {
        for (uint32_t v = 0; v < 256; v++) {
            uint32_t r = v << (8 * k);
            for (int i = 0; i < STRIDE; i++) r = table[0][r & 0xFF] ^ (r >> 8);
            shift_table[k][v] = r;
        }
    }
}

static inline uint32_t shift_stride(uint32_t r) {
    return shift_table[0][r & 0xFF] ^ shift_table[1][(r >> 8) & 0xFF] ^ shift_table[2][(r >> 16) & 0xFF]
        ^ shift_table[3][r >> 24];
}

__attribute__((target("sse4.2")))
static uint32_t crc_hw(uint32_t crc, const unsigned char *p, size_t n) {
    uint64_t c = crc;
    if (n >= 3 * STRIDE) {
        pthread_once(&shift_once, build_shift_table);
        do {
            uint64_t c1 = 0, c2 = 0;
            for (size_t i = 0; i < STRIDE; i += 8) {
                uint64_t a, b, d;
                memcpy(&a, p + i, 8);
                memcpy(&b, p + STRIDE + i, 8);
                memcpy(&d, p + 2 * STRIDE + i, 8);
                c = __builtin_ia32_crc32di(c, a);
                c1 = __builtin_ia32_crc32di(c1, b);
                c2 = __builtin_ia32_crc32di(c2, d);
            }
            c = shift_stride((uint32_t)c) ^ (uint32_t)c1;
            c = shift_stride((uint32_t)c) ^ (uint32_t)c2;
            p += 3 * STRIDE;
            n -= 3 * STRIDE;
        } while (n >= 3 * STRIDE);
    }
    while (n >= 8) { uint64_t v; memcpy(&v, p, 8); c = __builtin_ia32_crc32di(c, v); p += 8; n -= 8; }
    uint32_t c32 = (uint32_t)c;
    while (n--) c32 = __builtin_ia32_crc32qi(c32, *p++);
    return c32;
}
#endif

static pthread_once_t hw_once = PTHREAD_ONCE_INIT;

static void check_hardware(void) {
#if defined(__x86_64__)
    __builtin_cpu_init();
    hw_available = __builtin_cpu_supports("sse4.2") ? 1 : 0;
#endif
}

int lucid_crc32c_hardware(void) {
    pthread_once(&hw_once, check_hardware);
    return hw_available;
}

uint32_t lucid_crc32c_extend_portable(uint32_t crc, const void *data, size_t length) {
    return crc_sw(crc ^ 0xFFFFFFFFu, (const unsigned char *)data, length) ^ 0xFFFFFFFFu;
}

uint32_t lucid_crc32c_extend(uint32_t crc, const void *data, size_t length) {
    const unsigned char *p = (const unsigned char *)data;
    uint32_t c = crc ^ 0xFFFFFFFFu;
#if defined(__x86_64__)
    if (lucid_crc32c_hardware()) return crc_hw(c, p, length) ^ 0xFFFFFFFFu;
#endif
    return crc_sw(c, p, length) ^ 0xFFFFFFFFu;
}
