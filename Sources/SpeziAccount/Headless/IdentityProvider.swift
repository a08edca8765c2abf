//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Spezi

/// Where an identity provider appears in account setup.
///
/// Setup shows the sections in the order `primary`, `default`, `singleSignOn`.
public enum AccountSetupSection: String, Sendable, Hashable, Codable, Comparable, CaseIterable {
    /// The primary (e.g. user id and password) section.
    case primary
    /// Where a provider declared without a section goes, between primary and single sign-on.
    case `default`
    /// Single-sign-on providers.
    case singleSignOn

    private var rank: Int {
        switch self {
        case .primary: 0
        case .default: 100
        case .singleSignOn: 200
        }
    }

    /// Whether `lhs` is shown before `rhs`.
    ///
    /// - Parameters:
    ///   - lhs: a section.
    ///   - rhs: another section.
    /// - Returns: true when `lhs` comes first.
    public static func < (lhs: AccountSetupSection, rhs: AccountSetupSection) -> Bool {
        lhs.rank < rhs.rank
    }
}

/// A headless description of one way to set up an account (what a setup screen would offer).
public struct AccountSetupOption: Sendable, Hashable {
    /// The name of the property declaring the provider (without the underscore).
    public let name: String
    /// A description of the provider (its wrapped value, described).
    public let description: String
    /// The section it appears in.
    public let section: AccountSetupSection
    /// Whether it is offered.
    public let isEnabled: Bool
}

/// The mutable configuration of an IdentityProvider, its projected value.
public final class IdentityProviderConfiguration: Sendable {
    private let state: SpeziLock<(enabled: Bool, section: AccountSetupSection)>

    init(enabled: Bool, section: AccountSetupSection) {
        self.state = SpeziLock((enabled, section))
    }

    /// Whether the provider is offered.
    public var isEnabled: Bool {
        get { state.current.enabled }
        set { state.withLock { $0.enabled = newValue } }
    }

    /// The section it appears in.
    public var section: AccountSetupSection {
        get { state.current.section }
        set { state.withLock { $0.section = newValue } }
    }
}

/// Declares an entry point to account setup on an AccountService.
///
/// On Linux there are no views: the wrapped value describes the option (e.g. a
/// UserIdPasswordSetup), and AccountService/setupOptions lists the enabled ones.
/// `$provider.isEnabled` changes whether it is offered.
@propertyWrapper
public struct IdentityProvider<Value: Sendable>: Sendable {
    /// The description of the setup option.
    public let wrappedValue: Value
    /// The mutable configuration.
    public let projectedValue: IdentityProviderConfiguration

    /// Declares a provider.
    ///
    /// - Parameters:
    ///   - wrappedValue: the setup option, such as a ``UserIdPasswordSetup``.
    ///   - enabled: whether it is offered at first.
    ///   - section: where it appears among the setup options.
    public init(wrappedValue: Value, enabled: Bool = true, section: AccountSetupSection = .default) {
        self.wrappedValue = wrappedValue
        self.projectedValue = IdentityProviderConfiguration(enabled: enabled, section: section)
    }
}

protocol IdentityProviderDeclaration {
    var configuration: IdentityProviderConfiguration { get }
    var valueDescription: String { get }
}

extension IdentityProvider: IdentityProviderDeclaration {
    var configuration: IdentityProviderConfiguration { projectedValue }
    var valueDescription: String { String(describing: wrappedValue) }
}

/// The headless counterpart of a user id / password setup form.
public struct UserIdPasswordSetup: Sendable, Hashable, CustomStringConvertible {
    /// Whether the service supports password reset.
    public let supportsPasswordReset: Bool

    /// Describes a user id and password setup option.
    ///
    /// - Parameter supportsPasswordReset: whether the service offers a password reset.
    public init(supportsPasswordReset: Bool = true) {
        self.supportsPasswordReset = supportsPasswordReset
    }

    /// A one-line, human-readable description (for logs and error messages).
    public var description: String { "userId and password" }
}

/// The headless counterpart of an anonymous sign-in button.
public struct AnonymousSignupSetup: Sendable, Hashable, CustomStringConvertible {
    /// Describes anonymous sign-in.
    public init() {}

    /// A one-line, human-readable description (for logs and error messages).
    public var description: String { "anonymous sign-in" }
}

extension AccountService {
    /// Every IdentityProvider the service declares, in declaration order (found by reflection).
    public var allSetupOptions: [AccountSetupOption] {
        Mirror(reflecting: self).children.compactMap { child in
            guard let declaration = child.value as? any IdentityProviderDeclaration else {
                return nil
            }
            var name = child.label ?? ""
            if name.hasPrefix("_") {
                name.removeFirst()
            }
            return AccountSetupOption(
                name: name,
                description: declaration.valueDescription,
                section: declaration.configuration.section,
                isEnabled: declaration.configuration.isEnabled
            )
        }
    }

    /// The enabled setup options, by section (primary, default, single sign-on), in declaration
    /// order within a section: what an account setup screen would offer.
    public var setupOptions: [AccountSetupOption] {
        let enabled = allSetupOptions.filter(\.isEnabled)
        return AccountSetupSection.allCases.flatMap { section in enabled.filter { $0.section == section } }
    }
}
