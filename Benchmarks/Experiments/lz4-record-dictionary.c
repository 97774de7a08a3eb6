// Experiment (not part of any build): would compressing each record on its own, against a dictionary kept per
// segment, beat today's LZ4-compressed 4 KiB pages on size and on the cost of reading one record?
//
// Reads the records of a store written with uncompressed pages (docs/FORMAT.md, "Page"), packs them again into
// pages as the writer does and compresses those (LZ4 fast, as commits do; LZ4HC 9, as compaction does), then
// compresses every whole record alone against a dictionary sampled from the records, and times random reads of one
// record both ways. Build and run (docs/proposals/record-compression.md gives the figures):
//
//   cc -O2 -o /tmp/lz4-record-dictionary Benchmarks/Experiments/lz4-record-dictionary.c -llz4
//   B=Benchmarks/.build/release/lucid-compare
//   $B --child load_random --dir /tmp/raw --records 100000 --engine lucid-coremanager-raw
//   /tmp/lz4-record-dictionary 16384 /tmp/raw/lucid-coremanager-raw-random/*.seg
#define LZ4F_STATIC_LINKING_ONLY
#include <lz4.h>
#include <lz4hc.h>
#include <lz4frame.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct { const uint8_t *bytes; int length; } Span;
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
static uint64_t state = 88172645463325252ull;
static uint64_t next(void) { state ^= state << 13; state ^= state >> 7; state ^= state << 17; return state; }
static uint64_t varint(const uint8_t **p) { uint64_t v = 0; int s = 0; while (**p & 0x80) { v |= (uint64_t)(*(*p)++ & 0x7f) << s; s += 7; } v |= (uint64_t)(*(*p)++) << s; return v; }
static uint32_t u32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }

static Span *records; static int count, capacity;
static void add(Span s) { if (count == capacity) { capacity = capacity ? capacity * 2 : 1 << 16; records = realloc(records, sizeof(Span) * capacity); } records[count++] = s; }

// The records of one segment's uncompressed data pages.
static void readSegment(const char *path) {
    FILE *f = fopen(path, "rb"); if (!f) { perror(path); exit(1); }
    fseek(f, 0, SEEK_END); long n = ftell(f); fseek(f, 0, SEEK_SET);
    uint8_t *file = malloc(n); if (fread(file, 1, n, f) != (size_t)n) exit(1); fclose(f);
    for (long at = 64; at + 48 <= n;) {
        const uint8_t *h = file + at;
        if (u32(h) != 0x4C504147) break;
        uint32_t stored = u32(h + 16);
        if (h[4] == 1) {
            if (h[5] & 1) { fprintf(stderr, "%s: a compressed page; write the store with uncompressed pages\n", path); exit(1); }
            const uint8_t *p = h + 48;
            for (int r = 0; r < (h[6] | h[7] << 8); r++) {
                const uint8_t *start = p;
                p++; varint(&p);
                uint64_t l = varint(&p); p += l; l = varint(&p); p += l; l = varint(&p); p += l;
                uint64_t terms = varint(&p);
                for (uint64_t t = 0; t < terms; t++) { l = varint(&p); p += l; l = varint(&p); p += l; }
                add((Span){start, (int)(p - start)});
            }
        }
        at += 48 + stored;
    }
}

int main(int argc, char **argv) {
    if (argc < 3) { fprintf(stderr, "usage: %s dictionary-bytes segment...\n", argv[0]); return 2; }
    int dictionarySize = atoi(argv[1]);
    for (int i = 2; i < argc; i++) readSegment(argv[i]);
    long raw = 0; for (int i = 0; i < count; i++) raw += records[i].length;
    printf("%d records, %ld bytes (%.1f per record)\n", count, raw, (double)raw / count);
    static uint8_t out[1 << 20], page[1 << 20];

    // Today: records packed into 4 KiB pages (a record that does not fit starts the next), each page compressed.
    int *pageOf = malloc(sizeof(int) * count), *endIn = malloc(sizeof(int) * count);
    uint8_t **pages = malloc(sizeof(void *) * count); int *pageLength = malloc(sizeof(int) * count);
    int pageCount = 0, used = 0; long fast = 0, high = 0; double fastTime = 0, highTime = 0;
    for (int i = 0; i <= count; i++) {
        if (i == count || (used + records[i].length > 4096 && used > 0)) {
            double t = now();
            pages[pageCount] = malloc(LZ4_compressBound(used));
            pageLength[pageCount] = LZ4_compress_default((char *)page, (char *)pages[pageCount], used, LZ4_compressBound(used));
            fastTime += now() - t; t = now();
            high += LZ4_compress_HC((char *)page, (char *)out, used, sizeof out, 9);
            highTime += now() - t;
            fast += pageLength[pageCount] + 48; high += 48; pageCount++; used = 0;
            if (i == count) break;
        }
        memcpy(page + used, records[i].bytes, records[i].length); used += records[i].length;
        pageOf[i] = pageCount; endIn[i] = used;
    }
    printf("4 KiB pages: %d; LZ4 %ld bytes (%.2f us/record), LZ4HC 9 %ld bytes (%.2f us/record), headers included\n",
           pageCount, fast, fastTime / count * 1e6, high, highTime / count * 1e6);
    const int reads = 2000000; long sink = 0;
    double t = now();
    for (int g = 0; g < reads; g++) {
        int i = next() % count, p = pageOf[i];
        sink += LZ4_decompress_safe_partial((char *)pages[p], (char *)out, pageLength[p], endIn[i], sizeof out);
    }
    printf("  one record from a page (decoded up to its end): %.3f us\n", (now() - t) / reads * 1e6);

    // Proposed: a dictionary of records sampled at random, each record compressed alone against it.
    uint8_t *dictionary = malloc(dictionarySize); int dictionaryLength = 0;
    while (dictionaryLength < dictionarySize) {
        Span s = records[next() % count]; int c = s.length < dictionarySize - dictionaryLength ? s.length : dictionarySize - dictionaryLength;
        memcpy(dictionary + dictionaryLength, s.bytes, c); dictionaryLength += c;
    }
    uint8_t **compressed = malloc(sizeof(void *) * count); int *compressedLength = malloc(sizeof(int) * count);
    LZ4_stream_t prepared, work; LZ4_initStream(&prepared, sizeof prepared);
    LZ4_loadDict(&prepared, (const char *)dictionary, dictionaryLength);
    long alone = 0; t = now();
    for (int i = 0; i < count; i++) {
        memcpy(&work, &prepared, sizeof prepared);   // stable API: a copy of the prepared state per record
        int c = LZ4_compress_fast_continue(&work, (const char *)records[i].bytes, (char *)out, records[i].length, sizeof out, 1);
        compressed[i] = malloc(c); memcpy(compressed[i], out, c); compressedLength[i] = c;
        alone += c + (c < 128 ? 1 : 2) + (records[i].length < 128 ? 1 : 2);   // + stored and raw lengths as varints
    }
    double copyTime = now() - t;
    alone += pageCount * 48 + dictionaryLength;   // as many page headers, and the dictionary once (per segment)
    LZ4F_CDict *cdict = LZ4F_createCDict(dictionary, dictionaryLength); LZ4F_cctx *cctx;
    LZ4F_createCompressionContext(&cctx, LZ4F_VERSION);
    LZ4F_preferences_t preferences; memset(&preferences, 0, sizeof preferences);
    t = now();
    for (int i = 0; i < count; i++)
        LZ4F_compressFrame_usingCDict(cctx, out, sizeof out, records[i].bytes, records[i].length, cdict, &preferences);
    double cdictTime = now() - t;
    printf("each record alone, %d-byte dictionary: %ld bytes (%.2f of LZ4 pages, %.2f of LZ4HC pages); "
           "%.2f us/record copying a prepared stream, %.2f us with LZ4F's attached dictionary (static-only API)\n",
           dictionaryLength, alone, (double)alone / fast, (double)alone / high, copyTime / count * 1e6, cdictTime / count * 1e6);
    for (int i = 0; i < count; i++) {
        int d = LZ4_decompress_safe_usingDict((char *)compressed[i], (char *)out, compressedLength[i], sizeof out, (char *)dictionary, dictionaryLength);
        if (d != records[i].length || memcmp(out, records[i].bytes, d)) { fprintf(stderr, "record %d does not round-trip\n", i); return 1; }
    }
    t = now();
    for (int g = 0; g < reads; g++) {
        int i = next() % count;
        sink += LZ4_decompress_safe_usingDict((char *)compressed[i], (char *)out, compressedLength[i], sizeof out, (char *)dictionary, dictionaryLength);
    }
    printf("  one record alone: %.3f us (checksum %ld)\n", (now() - t) / reads * 1e6, sink);
    return 0;
}
