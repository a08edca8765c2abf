//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import NIOHTTP1

extension Problem {
    /// The answer to a request whose framing broke while its body was read (a malformed chunk
    /// size, say): the client's fault, 400, and nothing of it in the log above notice level.
    static let malformedFraming = Problem(
        "malformed-request", .badRequest, "The request is malformed.", detail: "the body's framing (its chunked encoding) is malformed")

    /// Whether `error` is the HTTP parser's, thrown by a body read when the framing broke.
    static func isMalformedFraming(_ error: any Error) -> Bool {
        error is HTTPParserError
    }
}
