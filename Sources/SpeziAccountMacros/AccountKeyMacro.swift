//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import SwiftDiagnostics
import SwiftSyntax
import SwiftSyntaxBuilder
import SwiftSyntaxMacros

/// `@AccountKey(id:name:category:options:as:initial:)`, attached to a property in an `AccountDetails` extension.
///
/// Generates a getter and setter that subscript `AccountDetails` with a generated key type, and that key type
/// (`__Key_<property>`, conforming to `AccountKey`) as a peer.
public struct AccountKeyMacro: AccessorMacro, PeerMacro {
    public static func expansion(
        of node: AttributeSyntax,
        providingAccessorsOf declaration: some DeclSyntaxProtocol,
        in context: some MacroExpansionContext
    ) throws -> [AccessorDeclSyntax] {
        // The compiler always expands the accessor role of a property (it needs it to decide the storage), while it
        // may expand the peer lazily; so this role reports the problems and the peer role stays quiet about them.
        let key = try AccountKeyDeclaration(attribute: node, declaration: declaration)
        let keyType = "__Key_\(key.propertyName)"
        return [
            "get { self[\(raw: keyType).self] }",
            "set { self[\(raw: keyType).self] = newValue }"
        ]
    }

    public static func expansion(
        of node: AttributeSyntax,
        providingPeersOf declaration: some DeclSyntaxProtocol,
        in context: some MacroExpansionContext
    ) throws -> [DeclSyntax] {
        let key: AccountKeyDeclaration
        do {
            key = try AccountKeyDeclaration(attribute: node, declaration: declaration)
        } catch {
            // Without a property there is no accessor expansion to report the problem; otherwise it already has.
            guard declaration.is(VariableDeclSyntax.self) else {
                throw error
            }
            return []
        }
        let access = key.accessPrefix
        var members = """
            \(access)typealias Value = \(key.valueType)
            \(access)static let identifier: String = "\(key.identifier)"
            \(access)static let name: String = \(key.nameLiteral)
            \(access)static let category: AccountKeyCategory = \(key.category)
            \(access)static let options: AccountKeyOptions = \(key.options)
            """
        if let initial = key.initial {
            members += "\n\(access)static var initialValue: InitialValue<Value> { \(initial) }"
        }
        let decl: DeclSyntax = """
            \(raw: access)struct __Key_\(raw: key.propertyName): AccountKey {
            \(raw: members)
            }
            """
        return [decl]
    }
}

/// The validated contents of an `@AccountKey` attribute and the property it is attached to.
struct AccountKeyDeclaration {
    /// The property name, without backticks.
    var propertyName: String
    /// `"public "`, `"package "` or `""`.
    var accessPrefix: String
    /// The wrapped type of the property's Optional type, as written.
    var valueType: String
    /// The account key identifier (the `id:` argument or the property name).
    var identifier: String
    /// The `name:` string literal, as written.
    var nameLiteral: String
    /// The `category:` expression, as written.
    var category: String
    /// The `options:` expression, as written.
    var options: String
    /// The `initial:` expression, as written, if present.
    var initial: String?

    init(attribute: AttributeSyntax, declaration: some DeclSyntaxProtocol) throws {
        let property = try Self.property(of: declaration, attribute: attribute)
        let arguments = try AccountKeyArguments(attribute: attribute)

        let binding = property.binding
        propertyName = property.name
        accessPrefix = MacroSupport.accessPrefix(for: property.variable.modifiers)

        guard let annotation = binding.typeAnnotation else {
            throw DiagnosticsError(AccountKeyDiagnostic.missingTypeAnnotation(property: propertyName), at: binding.pattern)
        }
        guard let wrapped = Self.wrappedType(ofOptional: annotation.type) else {
            throw DiagnosticsError(
                AccountKeyDiagnostic.notOptional(property: propertyName, type: annotation.type.trimmedDescription),
                at: annotation.type
            )
        }
        if Self.tokenTexts(of: wrapped) != Self.tokenTexts(of: arguments.valueType) {
            throw DiagnosticsError(
                AccountKeyDiagnostic.typeMismatch(
                    property: propertyName,
                    propertyType: wrapped.trimmedDescription,
                    valueType: arguments.valueType.trimmedDescription
                ),
                at: annotation.type
            )
        }
        if let initializer = binding.initializer {
            throw DiagnosticsError(AccountKeyDiagnostic.hasInitializer(property: propertyName), at: initializer)
        }
        if let accessors = binding.accessorBlock {
            throw DiagnosticsError(AccountKeyDiagnostic.hasAccessors(property: propertyName), at: accessors)
        }

        valueType = wrapped.trimmedDescription
        identifier = arguments.identifier ?? propertyName
        nameLiteral = arguments.nameLiteral
        category = arguments.category ?? ".other"
        options = arguments.options ?? ".default"
        initial = arguments.initial
    }

    /// The single `var` binding of the declaration, or a diagnostic explaining why there is none.
    private static func property(
        of declaration: some DeclSyntaxProtocol,
        attribute: AttributeSyntax
    ) throws -> (variable: VariableDeclSyntax, binding: PatternBindingSyntax, name: String) {
        guard let variable = declaration.as(VariableDeclSyntax.self) else {
            throw DiagnosticsError(AccountKeyDiagnostic.notAVariable, at: attribute)
        }
        guard variable.bindingSpecifier.tokenKind == .keyword(.var) else {
            throw DiagnosticsError(AccountKeyDiagnostic.notVar, at: variable.bindingSpecifier)
        }
        if let modifier = variable.modifiers.first(where: {
            $0.name.tokenKind == .keyword(.static) || $0.name.tokenKind == .keyword(.class)
        }) {
            throw DiagnosticsError(AccountKeyDiagnostic.staticProperty, at: modifier)
        }
        guard variable.bindings.count == 1, let binding = variable.bindings.first else {
            throw DiagnosticsError(AccountKeyDiagnostic.multipleBindings, at: variable.bindings)
        }
        guard let pattern = binding.pattern.as(IdentifierPatternSyntax.self) else {
            throw DiagnosticsError(AccountKeyDiagnostic.notASimpleName, at: binding.pattern)
        }
        return (variable, binding, MacroSupport.plainName(of: pattern.identifier))
    }

    /// `T` for `T?`, `Optional<T>` and `Swift.Optional<T>`; `nil` for any other type.
    private static func wrappedType(ofOptional type: TypeSyntax) -> Syntax? {
        if let optional = type.as(OptionalTypeSyntax.self) {
            return Syntax(optional.wrappedType)
        }
        let genericArguments: GenericArgumentClauseSyntax?
        if let identifier = type.as(IdentifierTypeSyntax.self), identifier.name.text == "Optional" {
            genericArguments = identifier.genericArgumentClause
        } else if let member = type.as(MemberTypeSyntax.self),
            member.name.text == "Optional",
            member.baseType.as(IdentifierTypeSyntax.self)?.name.text == "Swift"
        {
            genericArguments = member.genericArgumentClause
        } else {
            return nil
        }
        guard let arguments = genericArguments?.arguments, arguments.count == 1, let argument = arguments.first else {
            return nil
        }
        switch argument.argument {
        case let .type(wrapped):
            return Syntax(wrapped)
        case .expr:
            return nil
        }
    }

    /// The texts of the tokens of `node`: compares types as written, ignoring whitespace and comments.
    static func tokenTexts(of node: some SyntaxProtocol) -> [String] {
        node.tokens(viewMode: .sourceAccurate).map(\.text)
    }
}

/// The labeled arguments of an `@AccountKey` attribute.
private struct AccountKeyArguments {
    var identifier: String?
    var nameLiteral: String
    var category: String?
    var options: String?
    /// The base expression of the `as: X.self` argument (`X`).
    var valueType: ExprSyntax
    var initial: String?

    init(attribute: AttributeSyntax) throws {
        var identifier: String?
        var nameLiteral: String?
        var valueType: ExprSyntax?
        let arguments = attribute.arguments?.as(LabeledExprListSyntax.self) ?? []

        for argument in arguments {
            let label = argument.label?.text ?? "_"
            switch label {
            case "id":
                if argument.expression.is(NilLiteralExprSyntax.self) {
                    continue
                }
                let value = try Self.plainString(argument.expression, label: label)
                try Self.validate(identifier: value, at: argument.expression)
                identifier = value
            case "name":
                _ = try Self.plainString(argument.expression, label: label)
                nameLiteral = argument.expression.trimmedDescription
            case "category":
                category = argument.expression.trimmedDescription
            case "options":
                options = argument.expression.trimmedDescription
            case "as":
                guard let member = argument.expression.as(MemberAccessExprSyntax.self),
                    member.declName.baseName.tokenKind == .keyword(.self),
                    member.declName.argumentNames == nil,
                    let base = member.base
                else {
                    throw DiagnosticsError(AccountKeyDiagnostic.invalidValueType, at: argument.expression)
                }
                valueType = base
            case "initial":
                initial = argument.expression.trimmedDescription
            case "displayView", "entryView":
                // The seed's SwiftUI views: type-checked by the macro's signature, not drawn on Linux.
                continue
            default:
                throw DiagnosticsError(AccountKeyDiagnostic.unexpectedArgument(label: label), at: argument)
            }
        }

        guard let nameLiteral else {
            throw DiagnosticsError(AccountKeyDiagnostic.missingArgument(label: "name"), at: attribute)
        }
        guard let valueType else {
            throw DiagnosticsError(AccountKeyDiagnostic.missingArgument(label: "as"), at: attribute)
        }
        self.identifier = identifier
        self.nameLiteral = nameLiteral
        self.valueType = valueType
    }

    /// The contents of a string literal without interpolation.
    private static func plainString(_ expression: ExprSyntax, label: String) throws -> String {
        guard let literal = expression.as(StringLiteralExprSyntax.self) else {
            throw DiagnosticsError(AccountKeyDiagnostic.notAPlainStringLiteral(label: label), at: expression)
        }
        var value = ""
        for segment in literal.segments {
            guard let text = segment.as(StringSegmentSyntax.self) else {
                throw DiagnosticsError(AccountKeyDiagnostic.notAPlainStringLiteral(label: label), at: segment)
            }
            value += text.content.text
        }
        return value
    }

    private static func validate(identifier: String, at expression: ExprSyntax) throws {
        if identifier.isEmpty {
            throw DiagnosticsError(AccountKeyDiagnostic.emptyIdentifier, at: expression)
        }
        let allowed = identifier.unicodeScalars.allSatisfy { scalar in
            switch scalar {
            case "a"..."z", "A"..."Z", "0"..."9", "_", "-", ".":
                true
            default:
                false
            }
        }
        if !allowed {
            throw DiagnosticsError(AccountKeyDiagnostic.invalidIdentifier(identifier), at: expression)
        }
    }
}
