//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation

/// How user ids are compared, and which user ids the store refuses (FORMAT.md, "The normalized
/// user id").
///
/// The normalized user id is the user id after one round of
/// 1. Unicode NFKC (compatibility decomposition, canonical composition: fullwidth letters,
///    ligatures such as `ﬃ` and decomposed accents become their plain, composed forms),
/// 2. full Unicode case folding without the Turkic mappings (`CaseFolding.txt` status C and F,
///    through Foundation's `folding(options: .caseInsensitive, locale: nil)`: `ß` and `ẞ` fold to
///    `ss`, `ς` to `σ`, `İ` to `i` followed by U+0307),
/// 3. NFKC again,
/// 4. trimming white space and newlines at both ends,
///
/// repeated until a round changes nothing (at most four rounds; one more round never changes the
/// result). NFKC and case folding are stable for assigned code points, and unassigned ones are
/// refused, so the normalized form of an accepted user id does not change with the Unicode version.
///
/// Before this profile, user ids were compared trimmed and `lowercased()` (``legacyNormalized(_:)``);
/// claims written then keep that form.
public enum UserIdNormalization {
    /// Why a user id is refused. The raw value is the validation rule's id.
    public enum Refusal: String, Sendable, CaseIterable {
        /// Nothing is left after normalization.
        case empty = "userIdEmpty"
        /// A control character (general category Cc, such as NUL, tab or newline inside), or a line
        /// or paragraph separator (Zl, Zp).
        case controlCharacter = "userIdControlCharacter"
        /// A character that does not show: a format character (Cf: zero-width joiners, bidi
        /// overrides, soft hyphens) or any other default-ignorable code point (variation selectors,
        /// Hangul fillers).
        case invisibleCharacter = "userIdInvisibleCharacter"
        /// A code point that is not assigned in this Unicode version, or a noncharacter (Cn).
        case unassigned = "userIdUnassigned"
        /// A private-use code point (Co).
        case privateUse = "userIdPrivateUse"
        /// The part before the last `@`, or the part after it, has letters of more than one of the
        /// Latin, Cyrillic and Greek scripts.
        case mixedScript = "userIdMixedScript"

        /// The message of the validation error (it never repeats the user id).
        public var message: String {
            switch self {
            case .empty: "The user id is empty."
            case .controlCharacter: "The user id contains a control character."
            case .invisibleCharacter: "The user id contains an invisible or formatting character."
            case .unassigned: "The user id contains an unassigned Unicode code point."
            case .privateUse: "The user id contains a private-use character."
            case .mixedScript: "The user id mixes Latin, Cyrillic or Greek letters in one part."
            }
        }
    }

    /// The normalized user id (the profile above). It is defined for every string, refused or not.
    ///
    /// - Parameter userId: A user id as entered.
    /// - Returns: The user id after the profile's rounds, repeated (at most four times) until stable.
    public static func normalized(_ userId: String) -> String {
        var current = userId
        for _ in 0..<4 {
            let next = round(current)
            if next == current { return next }
            current = next
        }
        return current
    }

    /// The form claims were written in before this profile: trimmed and `lowercased()`.
    ///
    /// - Parameter userId: A user id as entered.
    /// - Returns: The user id without white space at its ends, lowercased.
    public static func legacyNormalized(_ userId: String) -> String {
        userId.trimmingCharacters(in: .whitespacesAndNewlines).lowercased()
    }

    /// Why the store refuses `userId` for a new account or a changed user id, or nil when it takes it.
    /// The characters are checked in the user id as given (without white space at its ends) and in
    /// its normalized form; the scripts in the normalized form.
    ///
    /// - Parameter userId: A user id as entered.
    /// - Returns: The first rule it breaks, or nil when the store accepts it.
    public static func refusal(of userId: String) -> Refusal? {
        let folded = Self.normalized(userId)
        if folded.isEmpty { return .empty }
        let given = userId.trimmingCharacters(in: .whitespacesAndNewlines)
        for scalar in given.unicodeScalars + folded.unicodeScalars {
            if let refusal = refusal(of: scalar) { return refusal }
        }
        let parts: [Substring]
        if let at = folded.lastIndex(of: "@") {
            parts = [folded[..<at], folded[folded.index(after: at)...]]
        } else {
            parts = [folded[...]]
        }
        for part in parts where Set(part.unicodeScalars.compactMap(script(of:))).count > 1 {
            return .mixedScript
        }
        return nil
    }

    /// Whether the store takes `userId` (``refusal(of:)`` is nil).
    ///
    /// - Parameter userId: A user id as entered.
    /// - Returns: True when the store accepts it for a new account or a change of user id.
    public static func isAcceptable(_ userId: String) -> Bool {
        refusal(of: userId) == nil
    }

    /// One round of the profile.
    private static func round(_ text: String) -> String {
        text.precomposedStringWithCompatibilityMapping
            .folding(options: [.caseInsensitive], locale: nil)
            .precomposedStringWithCompatibilityMapping
            .trimmingCharacters(in: .whitespacesAndNewlines)
    }

    private static func refusal(of scalar: Unicode.Scalar) -> Refusal? {
        let properties = scalar.properties
        switch properties.generalCategory {
        case .control, .lineSeparator, .paragraphSeparator: return .controlCharacter
        case .format: return .invisibleCharacter
        case .unassigned: return .unassigned
        case .privateUse: return .privateUse
        case .surrogate: return .unassigned
        default: return properties.isDefaultIgnorableCodePoint ? .invisibleCharacter : nil
        }
    }

    /// The scripts the mixed-script rule tells apart.
    private enum Script {
        case latin
        case cyrillic
        case greek
    }

    /// The script of a letter (general category L*) in the Latin, Cyrillic and Greek blocks;
    /// nil for anything else (digits, punctuation, combining marks, other scripts).
    private static func script(of scalar: Unicode.Scalar) -> Script? {
        switch scalar.properties.generalCategory {
        case .uppercaseLetter, .lowercaseLetter, .titlecaseLetter, .modifierLetter, .otherLetter: break
        default: return nil
        }
        switch scalar.value {
        case 0x41...0x5A, 0x61...0x7A, 0xAA, 0xBA, 0xC0...0x24F, 0x250...0x2AF, 0x1E00...0x1EFF, 0x2C60...0x2C7F,
            0xA720...0xA7FF, 0xAB30...0xAB6F, 0xFB00...0xFB06, 0xFF21...0xFF3A, 0xFF41...0xFF5A:
            return .latin
        case 0x400...0x52F, 0x1C80...0x1C8F, 0x2DE0...0x2DFF, 0xA640...0xA69F:
            return .cyrillic
        case 0x370...0x3FF, 0x1F00...0x1FFF:
            return .greek
        default:
            return nil
        }
    }
}
