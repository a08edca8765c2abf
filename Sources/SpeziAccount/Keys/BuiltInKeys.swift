//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation

// The built-in keys, written by hand in the shape the @AccountKey / @KeyEntry macros generate.

extension AccountDetails {
    /// The key of accountId.
    public struct __Key_accountId: RequiredAccountKey {
        /// The type of the key's value.
        public typealias Value = String
        /// The stable identifier the value is stored under.
        public static let identifier: String = "accountId"
        /// The name shown to users.
        public static let name: String = "Account Id"
        /// The group the key is shown in.
        public static let category: AccountKeyCategory = .credentials
        /// How the key may be displayed and changed.
        public static let options: AccountKeyOptions = .display
        /// The value a new form field starts with.
        public static var initialValue: InitialValue<Value> { .empty("") }
    }

    /// The key of userId.
    public struct __Key_userId: RequiredAccountKey {
        /// The type of the key's value.
        public typealias Value = String
        /// The stable identifier the value is stored under.
        public static let identifier: String = "userId"
        /// The name shown to users.
        public static let name: String = "User Id"
        /// The group the key is shown in.
        public static let category: AccountKeyCategory = .credentials
        /// How the key may be displayed and changed.
        public static let options: AccountKeyOptions = .default
        /// The value a new form field starts with.
        public static var initialValue: InitialValue<Value> { .empty("") }
    }

    /// The key of password.
    public struct __Key_password: AccountKey {
        /// The type of the key's value.
        public typealias Value = String
        /// The stable identifier the value is stored under.
        public static let identifier: String = "password"
        /// The name shown to users.
        public static let name: String = "Password"
        /// The group the key is shown in.
        public static let category: AccountKeyCategory = .credentials
        /// How the key may be displayed and changed.
        public static let options: AccountKeyOptions = .default
        /// The value a new form field starts with.
        public static var initialValue: InitialValue<Value> { .empty("") }
    }

    /// The key of name.
    public struct __Key_name: AccountKey {
        /// The type of the key's value.
        public typealias Value = PersonNameComponents
        /// The stable identifier the value is stored under.
        public static let identifier: String = "name"
        /// The name shown to users.
        public static let name: String = "Name"
        /// The group the key is shown in.
        public static let category: AccountKeyCategory = .name
        /// How the key may be displayed and changed.
        public static let options: AccountKeyOptions = .default
        /// The value a new form field starts with.
        public static var initialValue: InitialValue<Value> { .empty(PersonNameComponents()) }
    }

    /// The key of dateOfBirth.
    public struct __Key_dateOfBirth: AccountKey {
        /// The type of the key's value.
        public typealias Value = Date
        /// The stable identifier the value is stored under.
        public static let identifier: String = "dateOfBirth"
        /// The name shown to users.
        public static let name: String = "Date of Birth"
        /// The group the key is shown in.
        public static let category: AccountKeyCategory = .personalDetails
        /// How the key may be displayed and changed.
        public static let options: AccountKeyOptions = .default
        /// The value a new form field starts with.
        public static var initialValue: InitialValue<Value> { .empty(Date(timeIntervalSince1970: 0)) }
    }

    /// The key of genderIdentity.
    public struct __Key_genderIdentity: AccountKey {
        /// The type of the key's value.
        public typealias Value = GenderIdentity
        /// The stable identifier the value is stored under.
        public static let identifier: String = "genderIdentity"
        /// The name shown to users.
        public static let name: String = "Gender Identity"
        /// The group the key is shown in.
        public static let category: AccountKeyCategory = .personalDetails
        /// How the key may be displayed and changed.
        public static let options: AccountKeyOptions = .default
        /// The value a new form field starts with.
        public static var initialValue: InitialValue<Value> { .default(.preferNotToState) }
    }

    /// The key of email.
    public struct __Key_email: AccountKey {
        /// The type of the key's value.
        public typealias Value = String
        /// The stable identifier the value is stored under.
        public static let identifier: String = "email"
        /// The name shown to users.
        public static let name: String = "Email Address"
        /// The group the key is shown in.
        public static let category: AccountKeyCategory = .contactDetails
        /// How the key may be displayed and changed.
        public static let options: AccountKeyOptions = .default
        /// The value a new form field starts with.
        public static var initialValue: InitialValue<Value> { .empty("") }
    }

    /// All built-in keys.
    public static let builtInKeys: [any AccountKey.Type] = [
        __Key_accountId.self, __Key_userId.self, __Key_password.self, __Key_name.self,
        __Key_dateOfBirth.self, __Key_genderIdentity.self, __Key_email.self
    ]

    /// The stable, unique identifier of the account, assigned by the account service.
    ///
    /// - Precondition: the details contain an account id (every signed-in account's details do).
    public var accountId: String {
        get {
            guard let accountId = self[__Key_accountId.self] else {
                preconditionFailure("AccountDetails has no accountId; check `contains(AccountKeys.key(\\.accountId))` first")
            }
            return accountId
        }
        set { self[__Key_accountId.self] = newValue }
    }

    /// The user id (an email address or a user name); falls back to accountId when not set.
    public var userId: String {
        get { self[__Key_userId.self] ?? accountId }
        set { self[__Key_userId.self] = newValue }
    }

    /// The password (only present in signup details and modifications; Account never keeps it).
    public var password: String? {
        get { self[__Key_password.self] }
        set { self[__Key_password.self] = newValue }
    }

    /// The name of the user.
    public var name: PersonNameComponents? {
        get { self[__Key_name.self] }
        set { self[__Key_name.self] = newValue }
    }

    /// The date of birth.
    public var dateOfBirth: Date? {
        get { self[__Key_dateOfBirth.self] }
        set { self[__Key_dateOfBirth.self] = newValue }
    }

    /// The gender identity.
    public var genderIdentity: GenderIdentity? {
        get { self[__Key_genderIdentity.self] }
        set { self[__Key_genderIdentity.self] = newValue }
    }

    /// The email address; falls back to userId when the user id is an email address.
    public var email: String? {
        get {
            if let email = self[__Key_email.self] {
                return email
            }
            guard userIdType == .emailAddress, let userId = self[__Key_userId.self] else {
                return nil
            }
            return userId
        }
        set { self[__Key_email.self] = newValue }
    }
}

extension AccountKeys {
    /// The account id key.
    public var accountId: AccountDetails.__Key_accountId.Type { AccountDetails.__Key_accountId.self }
    /// The user id key.
    public var userId: AccountDetails.__Key_userId.Type { AccountDetails.__Key_userId.self }
    /// The password key.
    public var password: AccountDetails.__Key_password.Type { AccountDetails.__Key_password.self }
    /// The name key.
    public var name: AccountDetails.__Key_name.Type { AccountDetails.__Key_name.self }
    /// The date-of-birth key.
    public var dateOfBirth: AccountDetails.__Key_dateOfBirth.Type { AccountDetails.__Key_dateOfBirth.self }
    /// The gender-identity key.
    public var genderIdentity: AccountDetails.__Key_genderIdentity.Type { AccountDetails.__Key_genderIdentity.self }
    /// The email key.
    public var email: AccountDetails.__Key_email.Type { AccountDetails.__Key_email.self }

    /// The account id key (`AccountKeys.accountId`).
    public static var accountId: AccountDetails.__Key_accountId.Type { AccountDetails.__Key_accountId.self }
    /// The user id key (`AccountKeys.userId`).
    public static var userId: AccountDetails.__Key_userId.Type { AccountDetails.__Key_userId.self }
    /// The password key (`AccountKeys.password`).
    public static var password: AccountDetails.__Key_password.Type { AccountDetails.__Key_password.self }
    /// The name key (`AccountKeys.name`).
    public static var name: AccountDetails.__Key_name.Type { AccountDetails.__Key_name.self }
    /// The date-of-birth key (`AccountKeys.dateOfBirth`).
    public static var dateOfBirth: AccountDetails.__Key_dateOfBirth.Type { AccountDetails.__Key_dateOfBirth.self }
    /// The gender-identity key (`AccountKeys.genderIdentity`).
    public static var genderIdentity: AccountDetails.__Key_genderIdentity.Type { AccountDetails.__Key_genderIdentity.self }
    /// The email key (`AccountKeys.email`).
    public static var email: AccountDetails.__Key_email.Type { AccountDetails.__Key_email.self }
}
