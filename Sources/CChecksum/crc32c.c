// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//
// CRC-32C for record checksums: the hardware instruction where the CPU has one, otherwise
// slicing-by-8 tables. Both give identical results (the tests compare them).

#include "cchecksum.h"
#include <string.h>

static uint32_t table[8][256];
static int table_ready = 0;

static void build_table(void) {
    for (uint32_t byte = 0; byte < 256; byte++) {
        uint32_t crc = byte;
        for (int bit = 0; bit < 8; bit++) {
            crc = (crc & 1) ? (crc >> 1) ^ 0x82F63B78u : crc >> 1;
        }
        table[0][byte] = crc;
    }
    for (uint32_t byte = 0; byte < 256; byte++) {
        uint32_t crc = table[0][byte];
        for (int slice = 1; slice < 8; slice++) {
            crc = table[0][crc & 0xFF] ^ (crc >> 8);
            table[slice][byte] = crc;
        }
    }
    __atomic_store_n(&table_ready, 1, __ATOMIC_RELEASE);
}

static uint32_t crc32c_table(uint32_t crc, const uint8_t *p, size_t n) {
    if (!__atomic_load_n(&table_ready, __ATOMIC_ACQUIRE)) {
        build_table();
    }
    crc = ~crc;
    while (n >= 8) {
        uint64_t word;
        memcpy(&word, p, 8);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        word = __builtin_bswap64(word);
#endif
        uint32_t low = (uint32_t)word ^ crc;
        uint32_t high = (uint32_t)(word >> 32);
        crc = table[7][low & 0xFF] ^ table[6][(low >> 8) & 0xFF] ^ table[5][(low >> 16) & 0xFF] ^ table[4][low >> 24] ^
              table[3][high & 0xFF] ^ table[2][(high >> 8) & 0xFF] ^ table[1][(high >> 16) & 0xFF] ^ table[0][high >> 24];
        p += 8;
        n -= 8;
    }
    while (n--) {
        crc = table[0][(crc ^ *p++) & 0xFF] ^ (crc >> 8);
    }
    return ~crc;
}

#if defined(__x86_64__)
#include <cpuid.h>

// The crc32 instruction takes three cycles before its result can feed the next one, but the
// CPU starts one every cycle: a single chain of them runs at a third of the possible speed. So a
// block of 3 x SPAN bytes is checked as three independent chains, one per third, and the three
// registers are then joined: the register of the first third is carried over SPAN zero bytes (a
// linear map, applied with four 256-entry tables) and combined with the second's by XOR, and the
// same again for the third. Records of a few hundred bytes take one short block; long payloads
// take long ones.
enum { SHORT_SPAN = 128, LONG_SPAN = 2048 };

static uint32_t short_shift[4][256];
static uint32_t long_shift[4][256];
static int shift_ready = 0;

// The register after `count` zero bytes, from `crc` (no inversion: the raw register).
static uint32_t through_zeros(uint32_t crc, size_t count) {
    while (count--) {
        crc = table[0][crc & 0xFF] ^ (crc >> 8);
    }
    return crc;
}

static void build_shift(uint32_t shift[4][256], size_t count) {
    // Carrying a register over zero bytes is linear: the result for a register is the XOR of
    // the results for each of its bytes in its place.
    for (int place = 0; place < 4; place++) {
        for (uint32_t byte = 0; byte < 256; byte++) {
            shift[place][byte] = through_zeros(byte << (8 * place), count);
        }
    }
}

static void build_shifts(void) {
    if (!__atomic_load_n(&table_ready, __ATOMIC_ACQUIRE)) {
        build_table();
    }
    build_shift(short_shift, SHORT_SPAN);
    build_shift(long_shift, LONG_SPAN);
    __atomic_store_n(&shift_ready, 1, __ATOMIC_RELEASE);
}

static inline uint32_t apply_shift(const uint32_t shift[4][256], uint32_t crc) {
    return shift[0][crc & 0xFF] ^ shift[1][(crc >> 8) & 0xFF] ^ shift[2][(crc >> 16) & 0xFF] ^ shift[3][crc >> 24];
}

__attribute__((target("sse4.2")))
static inline uint64_t crc32c_three(uint64_t crc, const uint8_t *p, size_t span, const uint32_t shift[4][256]) {
    uint64_t first = crc, second = 0, third = 0;
    const uint8_t *end = p + span;
    while (p < end) {
        uint64_t a, b, c;
        memcpy(&a, p, 8);
        memcpy(&b, p + span, 8);
        memcpy(&c, p + 2 * span, 8);
        first = __builtin_ia32_crc32di(first, a);
        second = __builtin_ia32_crc32di(second, b);
        third = __builtin_ia32_crc32di(third, c);
        p += 8;
    }
    uint32_t joined = apply_shift(shift, (uint32_t)first) ^ (uint32_t)second;
    return apply_shift(shift, joined) ^ (uint32_t)third;
}

__attribute__((target("sse4.2")))
static uint32_t crc32c_hardware(uint32_t crc, const uint8_t *p, size_t n) {
    uint64_t c = ~crc;
    if (n >= 3 * SHORT_SPAN) {
        if (!__atomic_load_n(&shift_ready, __ATOMIC_ACQUIRE)) {
            build_shifts();
        }
        while (n >= 3 * LONG_SPAN) {
            c = crc32c_three(c, p, LONG_SPAN, long_shift);
            p += 3 * LONG_SPAN;
            n -= 3 * LONG_SPAN;
        }
        while (n >= 3 * SHORT_SPAN) {
            c = crc32c_three(c, p, SHORT_SPAN, short_shift);
            p += 3 * SHORT_SPAN;
            n -= 3 * SHORT_SPAN;
        }
    }
    while (n >= 8) {
        uint64_t word;
        memcpy(&word, p, 8);
        c = __builtin_ia32_crc32di(c, word);
        p += 8;
        n -= 8;
    }
    uint32_t c32 = (uint32_t)c;
    while (n--) {
        c32 = __builtin_ia32_crc32qi(c32, *p++);
    }
    return ~c32;
}

static int detect_hardware(void) {
    unsigned int eax, ebx, ecx, edx;
    if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return 0;
    return (ecx & bit_SSE4_2) != 0;
}
#elif defined(__aarch64__) && defined(__ARM_FEATURE_CRC32)
#include <arm_acle.h>

static uint32_t crc32c_hardware(uint32_t crc, const uint8_t *p, size_t n) {
    crc = ~crc;
    while (n >= 8) {
        uint64_t word;
        memcpy(&word, p, 8);
        crc = __crc32cd(crc, word);
        p += 8;
        n -= 8;
    }
    while (n--) {
        crc = __crc32cb(crc, *p++);
    }
    return ~crc;
}

static int detect_hardware(void) { return 1; }
#else
static uint32_t crc32c_hardware(uint32_t crc, const uint8_t *p, size_t n) { return crc32c_table(crc, p, n); }
static int detect_hardware(void) { return 0; }
#endif

static int hardware = -1;

int cchecksum_crc32c_is_hardware(void) {
    int known = __atomic_load_n(&hardware, __ATOMIC_RELAXED);
    if (known < 0) {
        known = detect_hardware();
        __atomic_store_n(&hardware, known, __ATOMIC_RELAXED);
    }
    return known;
}

uint32_t cchecksum_crc32c(uint32_t crc, const void *bytes, size_t length) {
    if (cchecksum_crc32c_is_hardware()) {
        return crc32c_hardware(crc, (const uint8_t *)bytes, length);
    }
    return crc32c_table(crc, (const uint8_t *)bytes, length);
}

// For the tests: the table path even where the hardware exists.
uint32_t cchecksum_crc32c_portable(uint32_t crc, const void *bytes, size_t length) {
    return crc32c_table(crc, (const uint8_t *)bytes, length);
}
