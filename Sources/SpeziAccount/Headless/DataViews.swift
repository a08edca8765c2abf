//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

/// What SpeziAccount shows a key's value with. On Apple platforms the seed's `DataDisplayView` is
/// a SwiftUI view; on Linux there is no view to draw, and a key's display view is accepted by
/// ``AccountKey(id:name:category:options:as:initial:displayView:entryView:)`` and never used. The
/// protocol keeps the seed's initializer, so a view type written for the seed needs only its
/// `body` left out (or kept behind `#if canImport(SwiftUI)`).
public protocol DataDisplayView {
    /// The key's value type.
    associatedtype Value
    /// A view that shows `value`.
    ///
    /// - Parameter value: the value to show.
    init(_ value: Value)
}

/// What SpeziAccount lets a user enter a key's value with (the seed's `DataEntryView`, a SwiftUI
/// view with a `Binding`). On Linux, forms are headless (`SignupForm`, `AccountEditForm`) and the
/// entry view is accepted by the macro and never used.
public protocol DataEntryView {
    /// The key's value type.
    associatedtype Value
}
