//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import CUnicodeSecurity
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
        /// A part of the user id mixes scripts beyond UTS #39's moderately restrictive level: the
        /// part before the last `@` or a label of the domain after it (Latin with Cyrillic or
        /// Greek letters, say). Whole-script look-alikes are caught by the skeleton instead
        /// (``UserIdNormalization/skeletons(_:)``).
        case mixedScript = "userIdMixedScript"
        /// A character carries more than ``UserIdNormalization/maxCombiningMarks`` combining marks
        /// (general categories Mn and Me) in a row.
        case combiningMarks = "userIdCombiningMarks"

        /// The message of the validation error (it never repeats the user id).
        public var message: String {
            switch self {
            case .empty: "The user id is empty."
            case .controlCharacter: "The user id contains a control character."
            case .invisibleCharacter: "The user id contains an invisible or formatting character."
            case .unassigned: "The user id contains an unassigned Unicode code point."
            case .privateUse: "The user id contains a private-use character."
            case .mixedScript: "The user id mixes scripts in one part."
            case .combiningMarks: "The user id stacks too many combining marks on one character."
            }
        }
    }

    /// The normalized user id (the profile above). It is defined for every string, refused or not.
    ///
    /// - Parameter userId: A user id as entered.
    /// - Returns: The user id after the profile's rounds, repeated (at most four times) until stable.
    public static func normalized(_ userId: String) -> String {
        asciiNormalized(userId) ?? normalizedByRounds(userId)
    }

    /// ``normalized(_:)`` by the profile's rounds, whatever the characters.
    static func normalizedByRounds(_ userId: String) -> String {
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
        // For ASCII, trimming and `lowercased()` are what the fast path does.
        asciiNormalized(userId) ?? userId.trimmingCharacters(in: .whitespacesAndNewlines).lowercased()
    }

    /// Why the store refuses `userId` for a new account or a changed user id, or nil when it takes it.
    /// The characters are checked in the user id as given (without white space at its ends) and in
    /// its normalized form; the scripts (UTS #39 restriction levels, by ICU) and the combining
    /// marks in the normalized form.
    ///
    /// - Parameter userId: A user id as entered.
    /// - Returns: The first rule it breaks, or nil when the store accepts it.
    public static func refusal(of userId: String) -> Refusal? {
        if let refusal = characterRefusal(of: userId) { return refusal }
        return lookAlikeRefusal(ofNormalized: Self.normalized(userId))
    }

    /// The rules on characters every user id passes, old or new.
    private static func characterRefusal(of userId: String) -> Refusal? {
        let folded = Self.normalized(userId)
        if folded.isEmpty { return .empty }
        let given = userId.trimmingCharacters(in: .whitespacesAndNewlines)
        for scalar in given.unicodeScalars + folded.unicodeScalars {
            if let refusal = refusal(of: scalar) { return refusal }
        }
        return nil
    }

    /// The rules on scripts and marks that new user ids pass (UTS #39).
    private static func lookAlikeRefusal(ofNormalized folded: String) -> Refusal? {
        var marks = 0
        for scalar in folded.unicodeScalars {
            switch scalar.properties.generalCategory {
            case .nonspacingMark, .enclosingMark:
                marks += 1
                if marks > maxCombiningMarks { return .combiningMarks }
            default:
                marks = 0
            }
        }
        for part in parts(of: folded) where restrictionLevel(of: part) > 4 {
            return .mixedScript
        }
        return nil
    }

    /// The most combining marks (Mn, Me) a user id may carry in a row on one character.
    public static let maxCombiningMarks = 4

    /// The rule on scripts a user id had to pass before the store checked look-alikes: no Latin,
    /// Cyrillic and Greek letters in the part before the last `@`, nor in the part after it.
    private static func olderScriptRefusal(ofNormalized folded: String) -> Refusal? {
        let halves: [Substring]
        if let at = folded.lastIndex(of: "@") {
            halves = [folded[..<at], folded[folded.index(after: at)...]]
        } else {
            halves = [folded[...]]
        }
        for half in halves where Set(half.unicodeScalars.compactMap(script(of:))).count > 1 {
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

    /// Whether a lookup may use the normalized claim of `userId`: it passes the character rules,
    /// and either today's rules on scripts or the rule accounts were created under before
    /// look-alikes were checked (see ``AccountLog/accountId(forUserId:)``).
    static func isLookupAcceptable(_ userId: String) -> Bool {
        // ASCII has one script and no invisible, unassigned or private-use character: only an
        // empty user id and control characters are refused.
        if let ascii = asciiNormalized(userId) { return !ascii.isEmpty && !ascii.utf8.contains { $0 < 0x20 || $0 == 0x7f } }
        return isLookupAcceptableByProperties(userId)
    }

    /// ``isLookupAcceptable(_:)`` by each character's Unicode properties, whatever the characters.
    static func isLookupAcceptableByProperties(_ userId: String) -> Bool {
        guard characterRefusal(of: userId) == nil else { return false }
        let folded = normalized(userId)
        return olderScriptRefusal(ofNormalized: folded) == nil || lookAlikeRefusal(ofNormalized: folded) == nil
    }

    /// The confusable skeletons of a user id: what decides whether two user ids collide (UTS #39,
    /// section 4, through ICU's spoof checker and its Unicode confusables data). Two user ids look
    /// alike when they share a skeleton (`асе` in Cyrillic and `ace`, `օ` and `o`, `rn` and `m`),
    /// and a store gives an account to only one of them.
    ///
    /// A skeleton is a form of the user id (its normalized form, and the form as typed after NFKC:
    /// user ids are compared without case, and a capital can look like another script's letter
    /// that its small form does not), with a combining dot above dropped after a soft-dotted letter
    /// (`i̇` is `i`), mapped to its UTS #39 skeleton and normalized, repeated until that changes
    /// nothing (at most three rounds). Usually both forms give the same skeleton.
    ///
    /// - Parameter userId: A user id as entered.
    /// - Returns: One or two skeletons; the normalized user id itself when ICU cannot be used.
    public static func skeletons(_ userId: String) -> Set<String> {
        let typed = userId.precomposedStringWithCompatibilityMapping.trimmingCharacters(in: .whitespacesAndNewlines)
        return [settledSkeleton(normalized(userId)), settledSkeleton(typed)]
    }

    private static func settledSkeleton(_ start: String) -> String {
        var current = withoutDotsOnDottedLetters(start)
        for _ in 0..<3 {
            let next = withoutDotsOnDottedLetters(normalized(icuSkeleton(current)))
            if next == current { return current }
            current = next
        }
        return current
    }

    /// The part before the last `@` and each dot-separated label after it (the whole user id as one
    /// part without an `@`).
    static func parts(of folded: String) -> [Substring] {
        guard let at = folded.lastIndex(of: "@") else { return [folded[...]] }
        return [folded[..<at]] + folded[folded.index(after: at)...].split(separator: ".", omittingEmptySubsequences: false)
    }

    /// UTS #39's restriction level of `text`: 1 ASCII, 2 single script, 3 highly, 4 moderately,
    /// 5 minimally restrictive, 6 unrestricted (6 when ICU cannot tell).
    static func restrictionLevel(of text: Substring) -> Int {
        var text = String(text)
        let level = text.withUTF8 { bytes in
            bytes.withMemoryRebound(to: CChar.self) { spezi_restriction_level($0.baseAddress, Int32($0.count)) }
        }
        return level < 0 ? 6 : Int(level)
    }

    private static func icuSkeleton(_ text: String) -> String {
        var text = text
        return text.withUTF8 { bytes in
            bytes.withMemoryRebound(to: CChar.self) { input in
                var capacity = max(64, input.count * 4)
                for _ in 0..<2 {
                    var output = [CChar](repeating: 0, count: capacity)
                    let length = spezi_confusable_skeleton(input.baseAddress, Int32(input.count), &output, Int32(capacity))
                    if length < 0 { return String(decoding: bytes, as: UTF8.self) }
                    if Int(length) <= capacity {
                        return String(decoding: output[0..<Int(length)].map { UInt8(bitPattern: $0) }, as: UTF8.self)
                    }
                    capacity = Int(length)
                }
                return String(decoding: bytes, as: UTF8.self)
            }
        }
    }

    /// `text` without U+0307 COMBINING DOT ABOVE right after a soft-dotted letter (`i`, `j` and
    /// their kin, which show a dot already).
    private static func withoutDotsOnDottedLetters(_ text: String) -> String {
        guard text.unicodeScalars.contains("\u{0307}") else { return text }
        var scalars = String.UnicodeScalarView()
        var previousSoftDotted = false
        for scalar in text.unicodeScalars {
            if scalar == "\u{0307}", previousSoftDotted { continue }
            previousSoftDotted = scalar.properties.isSoftDotted
            scalars.append(scalar)
        }
        return String(scalars)
    }

    /// ``normalized(_:)`` of a user id of ASCII characters only (nearly every e-mail address), nil
    /// for any other: NFKC leaves ASCII as it is, case folding maps only `A`–`Z` (to `a`–`z`), and
    /// the trimmed whitespace of ASCII is tab, line feed, vertical tab, form feed, carriage return
    /// and space. The same result as the rounds, without Foundation's string bridging, which made
    /// the normalizations of one sign-in (its route, throttle, lookup and device cookie) cost more
    /// than the rest of its work (`UserIdNormalizationTests` compares the two on every ASCII
    /// character).
    static func asciiNormalized(_ userId: String) -> String? {
        var userId = userId
        return userId.withUTF8 { bytes -> String? in
            guard bytes.allSatisfy({ $0 < 0x80 }) else { return nil }
            func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || (0x09...0x0d).contains(byte) }
            guard let first = bytes.firstIndex(where: { !isSpace($0) }), let last = bytes.lastIndex(where: { !isSpace($0) }) else { return "" }
            let kept = bytes[first...last]
            return String(unsafeUninitializedCapacity: kept.count) { text in
                for (offset, byte) in kept.enumerated() { text[offset] = (0x41...0x5a).contains(byte) ? byte | 0x20 : byte }
                return kept.count
            }
        }
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
