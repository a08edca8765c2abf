//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

/// Declares an account key: attach it to an Optional `var` in an extension of ``AccountDetails``.
///
/// The macro generates the property's getter and setter and a peer type `__Key_<property>` conforming to
/// ``AccountKey``. The identifier defaults to the property name.
///
/// ```swift
/// extension AccountDetails {
///     @AccountKey(id: "bio", name: "Biography", category: .personalDetails, as: String.self, initial: .empty(""))
///     public var biography: String?
/// }
/// ```
@attached(accessor, names: named(get), named(set))
@attached(peer, names: prefixed(__Key_))
public macro AccountKey<Value>(
    id: StaticString? = nil,
    name: StaticString,
    category: AccountKeyCategory = .other,
    options: AccountKeyOptions = .default,
    as value: Value.Type,
    initial: InitialValue<Value>
) = #externalMacro(module: "SpeziAccountMacros", type: "AccountKeyMacro")

/// Declares an account key whose `Value` has a natural initial value (strings, booleans, numbers, arrays).
///
/// See ``AccountKey(id:name:category:options:as:initial:)``.
@attached(accessor, names: named(get), named(set))
@attached(peer, names: prefixed(__Key_))
public macro AccountKey<Value>(
    id: StaticString? = nil,
    name: StaticString,
    category: AccountKeyCategory = .other,
    options: AccountKeyOptions = .default,
    as value: Value.Type
) = #externalMacro(module: "SpeziAccountMacros", type: "AccountKeyMacro")

/// Declares an account key with the seed's custom views (accepted and ignored on Linux, where
/// nothing is drawn; see ``DataDisplayView`` and ``DataEntryView``).
@attached(accessor, names: named(get), named(set))
@attached(peer, names: prefixed(__Key_))
public macro AccountKey<Value, DisplayView: DataDisplayView, EntryView: DataEntryView>(
    id: StaticString? = nil,
    name: StaticString,
    category: AccountKeyCategory = .other,
    options: AccountKeyOptions = .default,
    as value: Value.Type,
    initial: InitialValue<Value>,
    displayView: DisplayView.Type,
    entryView: EntryView.Type
) = #externalMacro(module: "SpeziAccountMacros", type: "AccountKeyMacro") where DisplayView.Value == Value, EntryView.Value == Value

/// Declares an account key whose `Value` has a natural initial value, with the seed's custom views
/// (accepted and ignored on Linux).
@attached(accessor, names: named(get), named(set))
@attached(peer, names: prefixed(__Key_))
public macro AccountKey<Value, DisplayView: DataDisplayView, EntryView: DataEntryView>(
    id: StaticString? = nil,
    name: StaticString,
    category: AccountKeyCategory = .other,
    options: AccountKeyOptions = .default,
    as value: Value.Type,
    displayView: DisplayView.Type,
    entryView: EntryView.Type
) = #externalMacro(module: "SpeziAccountMacros", type: "AccountKeyMacro") where DisplayView.Value == Value, EntryView.Value == Value

/// Declares an account key with only the seed's custom display view (accepted and ignored on Linux).
@attached(accessor, names: named(get), named(set))
@attached(peer, names: prefixed(__Key_))
public macro AccountKey<Value, DisplayView: DataDisplayView>(
    id: StaticString? = nil,
    name: StaticString,
    category: AccountKeyCategory = .other,
    options: AccountKeyOptions = .default,
    as value: Value.Type,
    initial: InitialValue<Value>,
    displayView: DisplayView.Type
) = #externalMacro(module: "SpeziAccountMacros", type: "AccountKeyMacro") where DisplayView.Value == Value

/// Declares an account key with only the seed's custom entry view (accepted and ignored on Linux).
@attached(accessor, names: named(get), named(set))
@attached(peer, names: prefixed(__Key_))
public macro AccountKey<Value, EntryView: DataEntryView>(
    id: StaticString? = nil,
    name: StaticString,
    category: AccountKeyCategory = .other,
    options: AccountKeyOptions = .default,
    as value: Value.Type,
    initial: InitialValue<Value>,
    entryView: EntryView.Type
) = #externalMacro(module: "SpeziAccountMacros", type: "AccountKeyMacro") where EntryView.Value == Value

/// Declares an account key with a natural initial value and only a custom display view.
@attached(accessor, names: named(get), named(set))
@attached(peer, names: prefixed(__Key_))
public macro AccountKey<Value, DisplayView: DataDisplayView>(
    id: StaticString? = nil,
    name: StaticString,
    category: AccountKeyCategory = .other,
    options: AccountKeyOptions = .default,
    as value: Value.Type,
    displayView: DisplayView.Type
) = #externalMacro(module: "SpeziAccountMacros", type: "AccountKeyMacro") where DisplayView.Value == Value

/// Declares an account key with a natural initial value and only a custom entry view.
@attached(accessor, names: named(get), named(set))
@attached(peer, names: prefixed(__Key_))
public macro AccountKey<Value, EntryView: DataEntryView>(
    id: StaticString? = nil,
    name: StaticString,
    category: AccountKeyCategory = .other,
    options: AccountKeyOptions = .default,
    as value: Value.Type,
    entryView: EntryView.Type
) = #externalMacro(module: "SpeziAccountMacros", type: "AccountKeyMacro") where EntryView.Value == Value

/// Adds entries to ``AccountKeys`` for account keys declared with ``AccountKey(id:name:category:options:as:initial:)``:
/// an instance member for key paths (`\.biography`) and a static one (`AccountKeys.biography`).
///
/// ```swift
/// @KeyEntry(\.biography, \.nickname)
/// extension AccountKeys {}
/// ```
@attached(member, names: arbitrary)
public macro KeyEntry<each Value>(
    _ key: repeat KeyPath<AccountDetails, (each Value)?>
) = #externalMacro(module: "SpeziAccountMacros", type: "KeyEntryMacro")
