//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

// Placeholder: the LMDB target is being built.
enum _LMDBPlaceholder {}
