//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import SpeziAccountMacros
import SwiftDiagnostics
import SwiftParser
import SwiftSyntax
import SwiftSyntaxMacroExpansion
import SwiftSyntaxMacros
import SwiftSyntaxMacrosTestSupport
import XCTest

private let macros: [String: any Macro.Type] = ["AccountKey": AccountKeyMacro.self]

/// The errors of `@AccountKey`, each with its message and position.
final class AccountKeyMacroDiagnosticTests: XCTestCase {
    /// Expands `declaration` (one line, inside an `AccountDetails` extension, below `attribute`) and expects one error.
    private func assertError(
        _ attribute: String,
        _ declaration: String,
        message: String,
        line: Int,
        column: Int,
        file: StaticString = #filePath,
        testLine: UInt = #line
    ) {
        assertMacroExpansion(
            """
            extension AccountDetails {
                \(attribute)
                \(declaration)
            }
            """,
            expandedSource: """
                extension AccountDetails {
                    \(declaration)
                }
                """,
            diagnostics: [DiagnosticSpec(message: message, line: line, column: column)],
            macros: macros,
            file: file,
            line: testLine
        )
    }

    func testNotAProperty() {
        assertError(
            #"@AccountKey(name: "Name", as: String.self)"#,
            "func name() -> String? { nil }",
            message: "'@AccountKey' can only be attached to a 'var' property declaration",
            line: 2,
            column: 5
        )
    }

    func testLetProperty() {
        assertError(
            #"@AccountKey(name: "Name", as: String.self)"#,
            "let name: String?",
            message: "'@AccountKey' requires a 'var' property; a 'let' property cannot have accessors",
            line: 3,
            column: 5
        )
    }

    func testStaticProperty() {
        assertError(
            #"@AccountKey(name: "Name", as: String.self)"#,
            "static var name: String?",
            message: "'@AccountKey' cannot be attached to a static property",
            line: 3,
            column: 5
        )
    }

    func testMultipleBindings() throws {
        // The expansion machinery (like the compiler) rejects accessor and peer macros on a declaration
        // with several bindings before it calls the macro ...
        assertMacroExpansion(
            """
            extension AccountDetails {
                @AccountKey(name: "Name", as: String.self)
                var first: String?, last: String?
            }
            """,
            expandedSource: """
                extension AccountDetails {
                    var first: String?, last: String?
                }
                """,
            diagnostics: [
                DiagnosticSpec(message: "accessor macro can only be applied to a single variable", line: 2, column: 5),
                DiagnosticSpec(message: "peer macro can only be applied to a single variable", line: 2, column: 5)
            ],
            macros: macros
        )

        // ... and the macro itself reports it too, should it be called anyway.
        let source = Parser.parse(
            source: """
                @AccountKey(name: "Name", as: String.self)
                var first: String?, last: String?
                """
        )
        let variable = try XCTUnwrap(source.statements.first?.item.as(VariableDeclSyntax.self))
        let attribute = try XCTUnwrap(variable.attributes.first?.as(AttributeSyntax.self))
        let context = BasicMacroExpansionContext()
        // The accessor role reports the problem (the compiler always expands it); the peer role then adds nothing.
        XCTAssertThrowsError(try AccountKeyMacro.expansion(of: attribute, providingAccessorsOf: variable, in: context)) { error in
            let diagnostics = (error as? DiagnosticsError)?.diagnostics ?? []
            XCTAssertEqual(
                diagnostics.map(\.message),
                ["'@AccountKey' can only be attached to a declaration of exactly one property"]
            )
            let location = diagnostics.first?.location(converter: SourceLocationConverter(fileName: "", tree: source))
            XCTAssertEqual(location?.line, 2)
            XCTAssertEqual(location?.column, 5)
        }
        let peers = try AccountKeyMacro.expansion(of: attribute, providingPeersOf: variable, in: context)
        XCTAssertTrue(peers.isEmpty)
    }

    func testMissingTypeAnnotation() {
        assertError(
            #"@AccountKey(name: "Name", as: String.self)"#,
            "var name",
            message: "'@AccountKey' property 'name' requires an explicit Optional type annotation, e.g. 'var name: String?'",
            line: 3,
            column: 9
        )
    }

    func testNotOptional() {
        assertError(
            #"@AccountKey(name: "Name", as: String.self)"#,
            "var name: String",
            message: "'@AccountKey' property 'name' must have an Optional type; declare it as 'String?' instead of 'String'",
            line: 3,
            column: 15
        )
    }

    func testTypeMismatch() {
        assertError(
            #"@AccountKey(name: "Age", as: Int.self)"#,
            "var age: Optional<UInt8>",
            message: "'@AccountKey' property 'age' wraps type 'UInt8', which does not match the value type 'Int' "
                + "given in 'as:'; declare it as 'Int?' or pass 'as: UInt8.self'",
            line: 3,
            column: 14
        )
    }

    func testInitializer() {
        assertError(
            #"@AccountKey(name: "Name", as: String.self)"#,
            #"var name: String? = "x""#,
            message: "'@AccountKey' property 'name' must not have an initial value; its value is stored in "
                + "'AccountDetails' (use the 'initial:' argument for the default entry value)",
            line: 3,
            column: 23
        )
    }

    func testOwnAccessors() {
        assertMacroExpansion(
            """
            extension AccountDetails {
                @AccountKey(name: "Name", as: String.self)
                var name: String? { nil }
            }
            """,
            expandedSource: """
                extension AccountDetails {
                    var name: String? { nil }
                }
                """,
            diagnostics: [
                DiagnosticSpec(
                    message: "'@AccountKey' property 'name' must not declare its own accessors; the macro generates them",
                    line: 3,
                    column: 23
                )
            ],
            macros: macros
        )
    }

    func testInterpolatedName() {
        assertError(
            #"@AccountKey(name: "Name \(suffix)", as: String.self)"#,
            "var name: String?",
            message: "'name:' argument of '@AccountKey' must be a plain string literal without interpolation",
            line: 2,
            column: 29
        )
    }

    func testNameNotALiteral() {
        assertError(
            #"@AccountKey(name: localizedName, as: String.self)"#,
            "var name: String?",
            message: "'name:' argument of '@AccountKey' must be a plain string literal without interpolation",
            line: 2,
            column: 23
        )
    }

    func testInterpolatedIdentifier() {
        assertError(
            #"@AccountKey(id: "\(prefix)name", name: "Name", as: String.self)"#,
            "var name: String?",
            message: "'id:' argument of '@AccountKey' must be a plain string literal without interpolation",
            line: 2,
            column: 22
        )
    }

    func testEmptyIdentifier() {
        assertError(
            #"@AccountKey(id: "", name: "Name", as: String.self)"#,
            "var name: String?",
            message: "'id:' argument of '@AccountKey' must not be empty",
            line: 2,
            column: 21
        )
    }

    func testInvalidIdentifierCharacters() {
        assertError(
            #"@AccountKey(id: "first name", name: "Name", as: String.self)"#,
            "var name: String?",
            message: #"'id:' argument of '@AccountKey' ("first name") may only contain ASCII letters, digits, '_', '-' and '.'"#,
            line: 2,
            column: 21
        )
    }

    func testValueTypeNotSelf() {
        assertError(
            #"@AccountKey(name: "Name", as: String)"#,
            "var name: String?",
            message: "'as:' argument of '@AccountKey' must be a type written as 'Type.self', e.g. 'as: String.self'",
            line: 2,
            column: 35
        )
    }

    func testMissingName() {
        assertError(
            "@AccountKey(as: String.self)",
            "var name: String?",
            message: "'@AccountKey' requires a 'name:' argument",
            line: 2,
            column: 5
        )
    }
}
