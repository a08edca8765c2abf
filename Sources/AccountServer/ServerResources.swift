//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation

/// The files the server serves, from the target's resource bundle (SwiftPM `resources:`): the
/// OpenAPI document (`openapi.yaml`, served at `/openapi.yaml`) and the audit console's page, style
/// sheet and script (`Console/`). Read once, when the server starts: a missing or unreadable file
/// stops it there with ``ServerResourceError``, never an empty answer later.
struct ServerResources: Sendable {
    /// The OpenAPI 3 document, as it is in the repository.
    let openAPIDocument: String
    /// The console's page, with an empty `<style></style>` and `<script></script>` that
    /// ``AdminConsole`` fills with the two files below.
    let consoleHTML: String
    let consoleCSS: String
    let consoleScript: String

    /// The files, by their path in the bundle.
    static let files = (
        openAPI: "openapi.yaml", html: "Console/console.html", css: "Console/console.css", script: "Console/console.js"
    )

    /// The package's bundle, read on first use (`Bundle.module` stops the process, naming the
    /// paths it tried, when the bundle itself is missing).
    static let bundled = Result { () throws(ServerResourceError) in try ServerResources(bundle: .module) }

    /// Reads every file from `bundle`.
    init(bundle: Bundle) throws(ServerResourceError) {
        func read(_ path: String) throws(ServerResourceError) -> String {
            let url = bundle.bundleURL.appendingPathComponent(path)
            guard let data = FileManager.default.contents(atPath: url.path), !data.isEmpty else {
                throw ServerResourceError(file: path, bundle: bundle.bundleURL.path)
            }
            return String(decoding: data, as: UTF8.self)
        }
        openAPIDocument = try read(Self.files.openAPI)
        consoleHTML = try read(Self.files.html)
        consoleCSS = try read(Self.files.css)
        consoleScript = try read(Self.files.script)
    }
}

/// A file the server serves is missing from its resource bundle (or empty): the server does not
/// start. Install the bundle (`SpeziAccountStore_AccountServer.resources`) beside the executable.
public struct ServerResourceError: Error, CustomStringConvertible, Equatable {
    /// The file's path inside the bundle.
    public let file: String
    /// The bundle's folder.
    public let bundle: String

    /// One line for the log and the terminal.
    public var description: String {
        "the server's resource \(file) is missing or empty in \(bundle): install the resource bundle beside the executable"
    }
}
