//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

extension AccountDetails {
    /// The key under which details hold the configuration of the account service they came from,
    /// as upstream declares it: `details[AccountDetails.AccountServiceConfigurationDetailsKey.self]`.
    ///
    /// It is not an ``AccountKey``: the configuration is never encoded, compared or shown. Setting
    /// it sets ``AccountDetails/userIdType`` to the configuration's kind of user id, which decides
    /// whether ``AccountDetails/email`` falls back to the user id.
    public struct AccountServiceConfigurationDetailsKey: Sendable {
        /// The type of the value held under the key.
        public typealias Value = AccountServiceConfiguration

        /// What ``AccountDetails/accountServiceConfiguration`` reads when no configuration was
        /// given: a service that stores no keys, with an email address as user id.
        public static let defaultValue = AccountServiceConfiguration(supportedKeys: .exactly([]))
    }

    /// The configuration of the account service the details came from, or nil when none was given.
    /// Setting it sets ``AccountDetails/userIdType`` to its kind of user id (nil with it).
    ///
    /// - Parameter key: `AccountServiceConfigurationDetailsKey.self`.
    /// - Returns: the configuration, or nil.
    public subscript(_ key: AccountServiceConfigurationDetailsKey.Type) -> AccountServiceConfiguration? {
        get {
            serviceConfiguration
        }
        set {
            serviceConfiguration = newValue
            userIdType = newValue?.userIdConfiguration.idType
        }
    }

    /// The configuration of the account service that manages these details; ``Account`` sets it when
    /// details are supplied. Without one,
    /// ``AccountDetails/AccountServiceConfigurationDetailsKey/defaultValue``.
    public var accountServiceConfiguration: AccountServiceConfiguration {
        get {
            self[AccountServiceConfigurationDetailsKey.self] ?? AccountServiceConfigurationDetailsKey.defaultValue
        }
        set {
            self[AccountServiceConfigurationDetailsKey.self] = newValue
        }
    }
}
