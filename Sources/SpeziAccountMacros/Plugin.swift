//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import SwiftCompilerPlugin
import SwiftSyntaxMacros

@main
struct SpeziAccountMacrosPlugin: CompilerPlugin {
    let providingMacros: [any Macro.Type] = [
        AccountKeyMacro.self,
        KeyEntryMacro.self
    ]
}
