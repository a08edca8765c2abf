//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import SpeziAccount
import Testing

/// A display view for a `String` key (not drawn on Linux).
private struct MottoDisplay: DataDisplayView {
    init(_ value: String) {}
}

/// An entry view for an `Int` key (not drawn on Linux).
private struct ShoeSizeEntry: DataEntryView {
    typealias Value = Int
}

extension AccountDetails {
    @AccountKey(name: "Motto", category: .personalDetails, as: String.self, displayView: MottoDisplay.self)
    var motto: String?

    @AccountKey(name: "Shoe size", as: Int.self, initial: .default(42), entryView: ShoeSizeEntry.self)
    var shoeSize: Int?

    @AccountKey(name: "Nickname", as: String.self, initial: .empty(""), displayView: MottoDisplay.self)
    var upstreamNickname: String?

    @AccountKey(name: "Pets", as: Int.self, entryView: ShoeSizeEntry.self)
    var petCount: Int?
}

@KeyEntry(\.motto, \.shoeSize, \.upstreamNickname, \.petCount)
extension AccountKeys {}

@Suite("Upstream key shapes: one custom view alone, static AccountKeys members")
struct MacroUpstreamShapesTests {
    @Test("@AccountKey accepts displayView: or entryView: alone")
    func singleViews() {
        #expect(AccountKeys.key(\.motto).name == "Motto")
        #expect(AccountKeys.key(\.motto).category == .personalDetails)
        #expect(AccountKeys.key(\.shoeSize).initialValue == .default(42))
        #expect(AccountKeys.key(\.upstreamNickname).initialValue == .empty(""))
        #expect(AccountKeys.key(\.petCount).initialValue == .empty(0))
        var details = AccountDetails()
        details.motto = "Let the wind of freedom blow"
        details.shoeSize = 44
        #expect(details.identifiers == ["motto", "shoeSize"])
    }

    @Test("@KeyEntry and the built-in keys offer static members: AccountKeys.x")
    func staticMembers() {
        #expect(AccountKeys.motto == AccountDetails.__Key_motto.self)
        #expect(AccountKeys.shoeSize.identifier == "shoeSize")
        #expect(AccountKeys.name.identifier == "name")
        #expect(AccountKeys.userId.identifier == "userId")
        #expect(AccountKeys.email == AccountKeys.key(\.email))
        var details = AccountDetails()
        details[AccountKeys.shoeSize] = 41
        #expect(details.shoeSize == 41)
    }
}
