//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import SwiftDiagnostics
import SwiftSyntax
import SwiftSyntaxBuilder
import SwiftSyntaxMacros

/// `@KeyEntry(\.a, \.b, ...)`, attached to an extension of `AccountKeys`.
///
/// Adds, for each key path, a computed property to `AccountKeys` that returns the key type that
/// `@AccountKey` generated for the `AccountDetails` property of the same name.
public struct KeyEntryMacro: MemberMacro {
    public static func expansion(
        of node: AttributeSyntax,
        providingMembersOf declaration: some DeclGroupSyntax,
        conformingTo protocols: [TypeSyntax],
        in context: some MacroExpansionContext
    ) throws -> [DeclSyntax] {
        guard let extensionDecl = declaration.as(ExtensionDeclSyntax.self) else {
            throw DiagnosticsError(KeyEntryDiagnostic.notAnExtension, at: node)
        }
        let extendedType = extensionDecl.extendedType
        guard Self.isType(extendedType, named: "AccountKeys") else {
            throw DiagnosticsError(
                KeyEntryDiagnostic.wrongExtendedType(extendedType.trimmedDescription),
                at: extendedType
            )
        }
        let arguments = node.arguments?.as(LabeledExprListSyntax.self) ?? []
        guard !arguments.isEmpty else {
            throw DiagnosticsError(KeyEntryDiagnostic.noArguments, at: node)
        }

        let access = MacroSupport.accessPrefix(for: extensionDecl.modifiers)
        var seen: Set<String> = []
        var members: [DeclSyntax] = []
        for argument in arguments {
            guard argument.label == nil, let name = Self.propertyName(of: argument.expression) else {
                context.diagnose(Diagnostic(node: argument.expression, message: KeyEntryDiagnostic.invalidKeyPath))
                continue
            }
            guard seen.insert(name).inserted else {
                context.diagnose(Diagnostic(node: argument.expression, message: KeyEntryDiagnostic.duplicateKeyPath(name)))
                continue
            }
            // An instance member for key paths (`\.name`) and a static one for `AccountKeys.name`, as upstream.
            for kind in ["", "static "] {
                members.append(
                    """
                    \(raw: access)\(raw: kind)var \(raw: MacroSupport.declarationName(name)): AccountDetails.__Key_\(raw: name).Type {
                        AccountDetails.__Key_\(raw: name).self
                    }
                    """
                )
            }
        }
        return members
    }

    /// The property name of a key path literal `\.name` or `\AccountDetails.name`, or `nil` for anything else.
    private static func propertyName(of expression: ExprSyntax) -> String? {
        guard let keyPath = expression.as(KeyPathExprSyntax.self) else {
            return nil
        }
        var components = Array(keyPath.components)
        if let root = keyPath.root, !isType(root, named: "AccountDetails") {
            // `\SpeziAccount.AccountDetails.name` parses as root `SpeziAccount` with two components.
            guard root.as(IdentifierTypeSyntax.self)?.name.text == "SpeziAccount",
                root.as(IdentifierTypeSyntax.self)?.genericArgumentClause == nil,
                components.count == 2,
                case let .property(first) = components[0].component,
                first.declName.baseName.text == "AccountDetails",
                first.declName.argumentNames == nil,
                first.genericArgumentClause == nil
            else {
                return nil
            }
            components.removeFirst()
        }
        guard components.count == 1,
            let component = components.first,
            component.period != nil,
            case let .property(property) = component.component,
            property.genericArgumentClause == nil,
            property.declName.argumentNames == nil
        else {
            return nil
        }
        return MacroSupport.plainName(of: property.declName.baseName)
    }

    /// Whether `type` is written `name` or `SpeziAccount.name`.
    private static func isType(_ type: TypeSyntax, named name: String) -> Bool {
        if let identifier = type.as(IdentifierTypeSyntax.self) {
            return identifier.name.text == name && identifier.genericArgumentClause == nil
        }
        if let member = type.as(MemberTypeSyntax.self) {
            return member.name.text == name
                && member.genericArgumentClause == nil
                && member.baseType.as(IdentifierTypeSyntax.self)?.name.text == "SpeziAccount"
        }
        return false
    }
}
