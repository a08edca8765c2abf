//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Testing

@Test func placeholderSpeziAccountMacrosTests() { #expect(Bool(true)) }
