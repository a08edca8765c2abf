// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT

// Unicode security mechanisms (UTS #39) from ICU's spoof checker, behind plain C types so that
// ICU's own headers never meet the copy of ICU that Foundation carries.

#ifndef C_UNICODE_SECURITY_H
#define C_UNICODE_SECURITY_H

#include <stdint.h>

/// Writes the confusable skeleton (UTS #39, section 4) of `text` (`length` bytes of UTF-8) to
/// `output` (`capacity` bytes) and returns its length in bytes; -1 when the checker cannot be made
/// or the text is not UTF-8; a length above `capacity` when `output` is too small (nothing useful
/// is written then: call again with that much room).
int32_t spezi_confusable_skeleton(const char *text, int32_t length, char *output, int32_t capacity);

/// The restriction level (UTS #39, section 5.2) of `text` (`length` bytes of UTF-8): 1 ASCII only,
/// 2 single script, 3 highly restrictive, 4 moderately restrictive, 5 minimally restrictive,
/// 6 unrestricted; -1 when the checker cannot be made or the text is not UTF-8.
int32_t spezi_restriction_level(const char *text, int32_t length);

#endif
