//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
import Testing

@testable import AccountSecurity

@Suite("base64url without padding, byte by byte")
struct Base64URLTests {
    @Test("the same text as Foundation's base64 with - and _ and no padding, for every length to 70 bytes")
    func matchesFoundation() {
        var generator = SystemRandomNumberGenerator()
        for length in 0...70 {
            for _ in 0..<20 {
                let bytes = (0..<length).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
                let expected = Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
                    .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
                #expect(base64urlString(bytes) == expected, "\(bytes)")
            }
        }
        // Every symbol of the alphabet, the two that differ from base64's among them.
        #expect(base64urlString([0xfb, 0xff, 0xbf]) == "-_-_")
        #expect(base64urlString([]) == "")
    }
}
