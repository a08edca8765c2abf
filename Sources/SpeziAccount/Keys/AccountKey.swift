//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation

/// A typed piece of account information (a user id, a name, a biography …).
///
/// Declare keys with the `@AccountKey` macro in an `extension AccountDetails` and register them in
/// `AccountKeys` with `@KeyEntry`; the macro generates a nested `__Key_<name>` type conforming to
/// this protocol. Values are stored in AccountDetails under identifier.
public protocol AccountKey: Sendable {
    /// The stored value type.
    associatedtype Value: Sendable, Equatable, Codable

    /// The stable identifier used to encode the value; never change it once data exists.
    static var identifier: String { get }
    /// A human-readable name (used in errors, e.g. missing required values).
    static var name: String { get }
    /// The category the key is grouped under.
    static var category: AccountKeyCategory { get }
    /// Whether the key is displayed and whether the user may change it.
    static var options: AccountKeyOptions { get }
    /// The value a data-entry form starts with.
    static var initialValue: InitialValue<Value> { get }
}

/// An AccountKey whose value every account must have (e.g. `accountId`, `userId`).
public protocol RequiredAccountKey: AccountKey {}

extension AccountKey {
    /// By default a key is displayed and mutable.
    public static var options: AccountKeyOptions { .default }

    /// Whether the key is a RequiredAccountKey.
    public static var isRequired: Bool { self is any RequiredAccountKey.Type }
}

extension AccountKey where Value == String {
    /// Strings start empty.
    public static var initialValue: InitialValue<Value> { .empty("") }
}

extension AccountKey where Value == Bool {
    /// Booleans start as `false`.
    public static var initialValue: InitialValue<Value> { .default(false) }
}

extension AccountKey where Value: AdditiveArithmetic {
    /// Numbers start at zero.
    public static var initialValue: InitialValue<Value> { .empty(.zero) }
}

extension AccountKey where Value: ExpressibleByArrayLiteral {
    /// Arrays start empty.
    public static var initialValue: InitialValue<Value> { .empty([]) }
}

/// The value a data-entry form starts with.
public enum InitialValue<Value> {
    /// A placeholder the user must replace (a required key with this initial value counts as missing
    /// until the user supplies a value).
    case empty(Value)
    /// A meaningful default the user may keep.
    case `default`(Value)

    /// The wrapped value.
    public var value: Value {
        switch self {
        case let .empty(value), let .default(value):
            value
        }
    }
}

extension InitialValue: Sendable where Value: Sendable {}
extension InitialValue: Equatable where Value: Equatable {}

/// Whether a key is shown and whether it can be changed by the user.
public struct AccountKeyOptions: OptionSet, Sendable, Hashable {
    /// The key is shown (in overviews, signup forms).
    public static let display = AccountKeyOptions(rawValue: 1 << 0)
    /// The user may change the key.
    public static let mutable = AccountKeyOptions(rawValue: 1 << 1)
    /// Displayed and mutable.
    public static let `default`: AccountKeyOptions = [.display, .mutable]

    /// The raw bits of the options.
    public let rawValue: UInt8

    /// Creates options from their raw bits.
    public init(rawValue: UInt8) {
        self.rawValue = rawValue
    }
}

/// The group a key is shown under.
public struct AccountKeyCategory: Sendable, Hashable, CustomStringConvertible {
    /// A stable identifier of the category.
    public let id: String
    /// A title, if the category has one.
    public let title: String?

    /// Credentials such as the user id and the password.
    public static let credentials = AccountKeyCategory(id: "credentials", title: nil)
    /// The name.
    public static let name = AccountKeyCategory(id: "name", title: "Name")
    /// Contact details such as the email address.
    public static let contactDetails = AccountKeyCategory(id: "contactDetails", title: "Contact Details")
    /// Personal details such as the date of birth.
    public static let personalDetails = AccountKeyCategory(id: "personalDetails", title: "Personal Details")
    /// Anything else.
    public static let other = AccountKeyCategory(id: "other", title: nil)

    /// A custom category with a title.
    ///
    /// - Parameter title: the category's title; its identifier is derived from it.
    /// - Returns: the category.
    public static func custom(_ title: String) -> AccountKeyCategory {
        AccountKeyCategory(id: "custom.\(title)", title: title)
    }

    /// A one-line, human-readable description (for logs and error messages).
    public var description: String { id }
}

/// The namespace of key-path entries for account keys (`\.userId`, `\.password` …).
///
/// Add entries with `@KeyEntry(\.biography) extension AccountKeys {}`.
public struct AccountKeys: Sendable {
    /// Creates the (empty) namespace value used to resolve key paths.
    public init() {}

    /// Resolves a key path to its key type.
    ///
    /// - Parameter keyPath: a key path into ``AccountKeys``, such as `\.userId`.
    /// - Returns: the key type the path names.
    public static func key<Key: AccountKey>(_ keyPath: KeyPath<AccountKeys, Key.Type>) -> Key.Type {
        AccountKeys()[keyPath: keyPath]
    }
}
