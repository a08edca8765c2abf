// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//
// The reference Argon2 library (Debian: libargon2-dev), for Argon2id password hashing.
#include <argon2.h>
