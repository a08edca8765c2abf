//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

/// The coordinator of a Spezi configuration: modules state requirements on it as constraint protocols.
///
/// A constraint is a protocol refining `Standard`; modules reach the standard through StandardActor.
public protocol Standard: Actor, Module {}

/// The standard used when a Configuration is created without one; it satisfies no constraint.
public actor DefaultStandard: Standard {
    /// Creates the default standard.
    public init() {}
}
