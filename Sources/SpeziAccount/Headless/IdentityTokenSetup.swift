//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

/// The headless counterpart of the single sign-on buttons a setup screen shows (Sign in with Apple,
/// Sign in with Google, an organization's own): the providers whose identity tokens the service
/// signs in with, by the ids the account server knows them by. A service declares it with
/// ``IdentityProvider`` in the `singleSignOn` section.
public struct IdentityTokenSetup: Sendable, Hashable, CustomStringConvertible {
    /// The providers' ids (`apple`, `google`, …), in the order the buttons are shown.
    public let providers: [String]

    /// Describes the single sign-on options.
    ///
    /// - Parameter providers: The providers' ids.
    public init(providers: [String]) {
        self.providers = providers
    }

    /// A one-line, human-readable description (for logs and error messages).
    public var description: String {
        "sign in with " + (providers.isEmpty ? "no provider" : providers.joined(separator: ", "))
    }
}
