//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import SpeziAccountMacros
import SwiftSyntaxMacros
import SwiftSyntaxMacrosTestSupport
import XCTest

private let macros: [String: any Macro.Type] = ["KeyEntry": KeyEntryMacro.self]

final class KeyEntryMacroTests: XCTestCase {
    func testInternalEntries() {
        assertMacroExpansion(
            """
            @KeyEntry(\\.biography, \\.nickname)
            extension AccountKeys {}
            """,
            expandedSource: """
                extension AccountKeys {

                    var biography: AccountDetails.__Key_biography.Type {
                        AccountDetails.__Key_biography.self
                    }

                    static var biography: AccountDetails.__Key_biography.Type {
                        AccountDetails.__Key_biography.self
                    }

                    var nickname: AccountDetails.__Key_nickname.Type {
                        AccountDetails.__Key_nickname.self
                    }

                    static var nickname: AccountDetails.__Key_nickname.Type {
                        AccountDetails.__Key_nickname.self
                    }
                }
                """,
            macros: macros
        )
    }

    func testPublicExtensionAndExplicitRoot() {
        assertMacroExpansion(
            """
            @KeyEntry(\\AccountDetails.biography)
            public extension AccountKeys {}
            """,
            expandedSource: """
                public extension AccountKeys {

                    public var biography: AccountDetails.__Key_biography.Type {
                        AccountDetails.__Key_biography.self
                    }

                    public static var biography: AccountDetails.__Key_biography.Type {
                        AccountDetails.__Key_biography.self
                    }
                }
                """,
            macros: macros
        )
    }

    func testQualifiedExtendedTypeAndReservedName() {
        assertMacroExpansion(
            """
            @KeyEntry(\\SpeziAccount.AccountDetails.default)
            extension SpeziAccount.AccountKeys {}
            """,
            expandedSource: """
                extension SpeziAccount.AccountKeys {

                    var `default`: AccountDetails.__Key_default.Type {
                        AccountDetails.__Key_default.self
                    }

                    static var `default`: AccountDetails.__Key_default.Type {
                        AccountDetails.__Key_default.self
                    }
                }
                """,
            macros: macros
        )
    }

    // MARK: - Diagnostics

    func testNotAnExtension() {
        assertMacroExpansion(
            """
            @KeyEntry(\\.biography)
            struct AccountKeys {}
            """,
            expandedSource: """
                struct AccountKeys {}
                """,
            diagnostics: [
                DiagnosticSpec(message: "'@KeyEntry' can only be attached to an extension of 'AccountKeys'", line: 1, column: 1)
            ],
            macros: macros
        )
    }

    func testWrongExtendedType() {
        assertMacroExpansion(
            """
            @KeyEntry(\\.biography)
            extension AccountDetails {}
            """,
            expandedSource: """
                extension AccountDetails {}
                """,
            diagnostics: [
                DiagnosticSpec(
                    message: "'@KeyEntry' can only be attached to an extension of 'AccountKeys', not of 'AccountDetails'",
                    line: 2,
                    column: 11
                )
            ],
            macros: macros
        )
    }

    func testNoArguments() {
        let message = "'@KeyEntry' requires at least one key path, e.g. '@KeyEntry(\\.biography)'"
        for attribute in ["@KeyEntry", "@KeyEntry()"] {
            assertMacroExpansion(
                """
                \(attribute)
                extension AccountKeys {}
                """,
                expandedSource: """
                    extension AccountKeys {}
                    """,
                diagnostics: [DiagnosticSpec(message: message, line: 1, column: 1)],
                macros: macros
            )
        }
    }

    func testInvalidArgumentsAreReportedAndValidOnesExpanded() {
        let message =
            "'@KeyEntry' arguments must be key paths to a single 'AccountDetails' property, "
            + "written '\\.name' or '\\AccountDetails.name'"
        assertMacroExpansion(
            """
            @KeyEntry(\\.name.count, \\Other.name, "name", \\.biography, key: \\.nickname, \\.items[0], \\.name?)
            extension AccountKeys {}
            """,
            expandedSource: """
                extension AccountKeys {

                    var biography: AccountDetails.__Key_biography.Type {
                        AccountDetails.__Key_biography.self
                    }

                    static var biography: AccountDetails.__Key_biography.Type {
                        AccountDetails.__Key_biography.self
                    }
                }
                """,
            diagnostics: [
                DiagnosticSpec(message: message, line: 1, column: 11),
                DiagnosticSpec(message: message, line: 1, column: 25),
                DiagnosticSpec(message: message, line: 1, column: 38),
                DiagnosticSpec(message: message, line: 1, column: 64),
                DiagnosticSpec(message: message, line: 1, column: 76),
                DiagnosticSpec(message: message, line: 1, column: 88)
            ],
            macros: macros
        )
    }

    func testDuplicateKeyPath() {
        assertMacroExpansion(
            """
            @KeyEntry(\\.biography, \\AccountDetails.biography)
            extension AccountKeys {}
            """,
            expandedSource: """
                extension AccountKeys {

                    var biography: AccountDetails.__Key_biography.Type {
                        AccountDetails.__Key_biography.self
                    }

                    static var biography: AccountDetails.__Key_biography.Type {
                        AccountDetails.__Key_biography.self
                    }
                }
                """,
            diagnostics: [
                DiagnosticSpec(message: "'@KeyEntry' lists the key path '\\.biography' more than once", line: 1, column: 24)
            ],
            macros: macros
        )
    }
}
