//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation

/// The OpenAPI 3 document of the API (`Sources/AccountServer/openapi.yaml`), served at
/// `/openapi.yaml`. A test checks that it lists exactly the operations the server answers.
enum OpenAPIDocument {
    /// The document's text; empty when its resource bundle is missing (the route then answers 404).
    static let text: String = {
        for url in candidates {
            if let text = try? String(contentsOf: url, encoding: .utf8) { return text }
        }
        return ""
    }()

    /// Where the package's resource bundle sits: beside the executable (how SwiftPM builds and
    /// installs it), or the source tree the binary was built from. Looked up by hand, because
    /// `Bundle.module` stops the process when the bundle is missing.
    private static var candidates: [URL] {
        let bundleName = "SpeziAccountStore_AccountServer.resources"
        var urls = [Bundle.main.bundleURL.appendingPathComponent(bundleName).appendingPathComponent("openapi.yaml")]
        if let executable = Bundle.main.executableURL {
            urls.append(executable.deletingLastPathComponent().appendingPathComponent(bundleName).appendingPathComponent("openapi.yaml"))
        }
        urls.append(URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("openapi.yaml"))
        return urls
    }
}
