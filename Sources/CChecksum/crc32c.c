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

__attribute__((target("sse4.2")))
static uint32_t crc32c_hardware(uint32_t crc, const uint8_t *p, size_t n) {
    uint64_t c = ~crc;
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
