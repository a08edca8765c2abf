// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
#ifndef CCHECKSUM_H
#define CCHECKSUM_H

#include <stddef.h>
#include <stdint.h>

/// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78) of `length` bytes, continuing from `crc`
/// (pass 0 to start). Uses the CPU's CRC32 instruction (SSE4.2 on x86-64, the CRC extension on
/// ARMv8) when present, and a table otherwise; the result is the same.
uint32_t cchecksum_crc32c(uint32_t crc, const void *bytes, size_t length);

/// 1 when the hardware instruction is used on this machine.
int cchecksum_crc32c_is_hardware(void);

/// The table implementation, whatever the CPU has (for tests that compare both).
uint32_t cchecksum_crc32c_portable(uint32_t crc, const void *bytes, size_t length);

/// Asks the CPU to start loading `length` bytes at `bytes` into its caches (a hint only).
static inline void cchecksum_prefetch(const void *bytes, size_t length) {
    const char *p = (const char *)bytes;
    for (size_t offset = 0; offset < length; offset += 64) {
        __builtin_prefetch(p + offset);
    }
}

#endif
