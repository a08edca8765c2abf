//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

/// The gender identity of a user.
public enum GenderIdentity: String, Sendable, Codable, CaseIterable, Hashable, CustomStringConvertible {
    /// Female.
    case female
    /// Male.
    case male
    /// Transgender.
    case transgender
    /// Non-binary.
    case nonBinary
    /// The user prefers not to state it.
    case preferNotToState

    /// A display string.
    public var description: String {
        switch self {
        case .female: "Female"
        case .male: "Male"
        case .transgender: "Transgender"
        case .nonBinary: "Non-binary"
        case .preferNotToState: "Prefer not to state"
        }
    }
}
