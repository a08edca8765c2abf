// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//
// The reference Argon2 library (Debian: libargon2-dev), for measuring Argon2id against scrypt.
#include <argon2.h>
