//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Crypto
import Foundation
import Hummingbird

/// The audit console's page at `/admin/`: one HTML document with its style sheet and script inline,
/// all three resource files of this target (`Console/console.html`, `.css`, `.js`), served by
/// this server (no CDN, no external library). The page holds no data: without a session its
/// script shows the sign-in form, which opens one (`POST /admin/api/session`); with one, the
/// console, whose data come from the admin API.
struct AdminConsole: Sendable {
    /// The page as served.
    let document: String
    /// The page's Content-Security-Policy: only its script runs, by the SHA-256 of the bytes
    /// served, and it talks only to this server.
    let policy: String

    init(_ resources: ServerResources) {
        document = resources.consoleHTML
            .replacingOccurrences(of: "<style></style>", with: "<style>\n\(resources.consoleCSS)</style>")
            .replacingOccurrences(of: "<script></script>", with: "<script>\(resources.consoleScript)</script>")
        policy = Self.policy(script: resources.consoleScript)
    }

    /// The policy for a page whose only script is `script`.
    static func policy(script: String) -> String {
        let hash = Data(SHA256.hash(data: Data(script.utf8))).base64EncodedString()
        return "default-src 'none'; script-src 'sha256-\(hash)'; style-src 'unsafe-inline'; connect-src 'self'; img-src data:; "
            + "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    }

    func page() -> Response {
        Response(
            status: .ok, headers: [.contentType: "text/html; charset=utf-8", .contentSecurityPolicy: policy],
            body: ResponseBody(byteBuffer: ByteBuffer(string: document)))
    }
}
