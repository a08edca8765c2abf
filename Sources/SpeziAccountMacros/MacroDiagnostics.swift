//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import SwiftDiagnostics
import SwiftSyntax

/// The errors the `@AccountKey` macro reports.
enum AccountKeyDiagnostic: DiagnosticMessage {
    case notAVariable
    case notVar
    case staticProperty
    case multipleBindings
    case notASimpleName
    case missingTypeAnnotation(property: String)
    case notOptional(property: String, type: String)
    case typeMismatch(property: String, propertyType: String, valueType: String)
    case hasInitializer(property: String)
    case hasAccessors(property: String)
    case missingArgument(label: String)
    case unexpectedArgument(label: String)
    case notAPlainStringLiteral(label: String)
    case emptyIdentifier
    case invalidIdentifier(String)
    case invalidValueType

    var message: String {
        switch self {
        case .notAVariable:
            "'@AccountKey' can only be attached to a 'var' property declaration"
        case .notVar:
            "'@AccountKey' requires a 'var' property; a 'let' property cannot have accessors"
        case .staticProperty:
            "'@AccountKey' cannot be attached to a static property"
        case .multipleBindings:
            "'@AccountKey' can only be attached to a declaration of exactly one property"
        case .notASimpleName:
            "'@AccountKey' requires the property to be declared with a simple name"
        case let .missingTypeAnnotation(property):
            "'@AccountKey' property '\(property)' requires an explicit Optional type annotation, e.g. 'var \(property): String?'"
        case let .notOptional(property, type):
            "'@AccountKey' property '\(property)' must have an Optional type; declare it as '\(type)?' instead of '\(type)'"
        case let .typeMismatch(property, propertyType, valueType):
            "'@AccountKey' property '\(property)' wraps type '\(propertyType)', which does not match the value type "
                + "'\(valueType)' given in 'as:'; declare it as '\(valueType)?' or pass 'as: \(propertyType).self'"
        case let .hasInitializer(property):
            "'@AccountKey' property '\(property)' must not have an initial value; "
                + "its value is stored in 'AccountDetails' (use the 'initial:' argument for the default entry value)"
        case let .hasAccessors(property):
            "'@AccountKey' property '\(property)' must not declare its own accessors; the macro generates them"
        case let .missingArgument(label):
            "'@AccountKey' requires a '\(label):' argument"
        case let .unexpectedArgument(label):
            "'@AccountKey' does not accept an argument labeled '\(label)'"
        case let .notAPlainStringLiteral(label):
            "'\(label):' argument of '@AccountKey' must be a plain string literal without interpolation"
        case .emptyIdentifier:
            "'id:' argument of '@AccountKey' must not be empty"
        case let .invalidIdentifier(identifier):
            "'id:' argument of '@AccountKey' (\"\(identifier)\") may only contain ASCII letters, digits, '_', '-' and '.'"
        case .invalidValueType:
            "'as:' argument of '@AccountKey' must be a type written as 'Type.self', e.g. 'as: String.self'"
        }
    }

    var diagnosticID: MessageID {
        MessageID(domain: "SpeziAccountMacros.AccountKey", id: caseName)
    }

    var severity: DiagnosticSeverity {
        .error
    }

    private var caseName: String {
        switch self {
        case .notAVariable: "notAVariable"
        case .notVar: "notVar"
        case .staticProperty: "staticProperty"
        case .multipleBindings: "multipleBindings"
        case .notASimpleName: "notASimpleName"
        case .missingTypeAnnotation: "missingTypeAnnotation"
        case .notOptional: "notOptional"
        case .typeMismatch: "typeMismatch"
        case .hasInitializer: "hasInitializer"
        case .hasAccessors: "hasAccessors"
        case .missingArgument: "missingArgument"
        case .unexpectedArgument: "unexpectedArgument"
        case .notAPlainStringLiteral: "notAPlainStringLiteral"
        case .emptyIdentifier: "emptyIdentifier"
        case .invalidIdentifier: "invalidIdentifier"
        case .invalidValueType: "invalidValueType"
        }
    }
}

/// The errors the `@KeyEntry` macro reports.
enum KeyEntryDiagnostic: DiagnosticMessage {
    case notAnExtension
    case wrongExtendedType(String)
    case noArguments
    case invalidKeyPath
    case duplicateKeyPath(String)

    var message: String {
        switch self {
        case .notAnExtension:
            "'@KeyEntry' can only be attached to an extension of 'AccountKeys'"
        case let .wrongExtendedType(type):
            "'@KeyEntry' can only be attached to an extension of 'AccountKeys', not of '\(type)'"
        case .noArguments:
            "'@KeyEntry' requires at least one key path, e.g. '@KeyEntry(\\.biography)'"
        case .invalidKeyPath:
            "'@KeyEntry' arguments must be key paths to a single 'AccountDetails' property, "
                + "written '\\.name' or '\\AccountDetails.name'"
        case let .duplicateKeyPath(name):
            "'@KeyEntry' lists the key path '\\.\(name)' more than once"
        }
    }

    var diagnosticID: MessageID {
        MessageID(domain: "SpeziAccountMacros.KeyEntry", id: caseName)
    }

    var severity: DiagnosticSeverity {
        .error
    }

    private var caseName: String {
        switch self {
        case .notAnExtension: "notAnExtension"
        case .wrongExtendedType: "wrongExtendedType"
        case .noArguments: "noArguments"
        case .invalidKeyPath: "invalidKeyPath"
        case .duplicateKeyPath: "duplicateKeyPath"
        }
    }
}

extension DiagnosticsError {
    /// A single error diagnostic at `node`.
    init(_ message: some DiagnosticMessage, at node: some SyntaxProtocol) {
        self.init(diagnostics: [Diagnostic(node: Syntax(node), message: message)])
    }
}

/// Helpers shared by both macros.
enum MacroSupport {
    /// Reserved words that must be escaped with backticks when used as a declaration name.
    private static let reservedWords: Set<String> = [
        "associatedtype", "class", "deinit", "enum", "extension", "fileprivate", "func", "import", "init",
        "inout", "internal", "let", "open", "operator", "private", "precedencegroup", "protocol", "public",
        "rethrows", "static", "struct", "subscript", "typealias", "var", "break", "case", "catch", "continue",
        "default", "defer", "do", "else", "fallthrough", "for", "guard", "if", "in", "repeat", "return",
        "throw", "switch", "where", "while", "Any", "as", "await", "false", "is", "nil", "self", "Self",
        "super", "throws", "true", "try", "package"
    ]

    /// The name of an identifier token without surrounding backticks.
    static func plainName(of token: TokenSyntax) -> String {
        if let identifier = token.identifier {
            return identifier.name
        }
        var text = token.text
        if text.hasPrefix("`") && text.hasSuffix("`") && text.count >= 2 {
            text = String(text.dropFirst().dropLast())
        }
        return text
    }

    /// `name`, escaped with backticks if it is a reserved word.
    static func declarationName(_ name: String) -> String {
        reservedWords.contains(name) ? "`\(name)`" : name
    }

    /// The access modifier to copy onto generated declarations (with a trailing space), or the empty string.
    static func accessPrefix(for modifiers: DeclModifierListSyntax) -> String {
        for modifier in modifiers {
            switch modifier.name.tokenKind {
            case .keyword(.public):
                return "public "
            case .keyword(.package):
                return "package "
            default:
                continue
            }
        }
        return ""
    }
}
