//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation

/// Where `accountctl` keeps its store when `--store` is not given.
///
/// `$ACCOUNTCTL_STORE` wins; then `$XDG_DATA_HOME/spezi-account-store`; then
/// `~/.local/share/spezi-account-store` (the XDG default).
enum StoreLocation {
    static let folderName = "spezi-account-store"

    static func resolve(_ explicit: String?, environment: [String: String] = ProcessInfo.processInfo.environment) -> URL {
        if let explicit, !explicit.isEmpty {
            return URL(fileURLWithPath: (explicit as NSString).expandingTildeInPath)
        }
        if let override = environment["ACCOUNTCTL_STORE"], !override.isEmpty {
            return URL(fileURLWithPath: (override as NSString).expandingTildeInPath)
        }
        if let dataHome = environment["XDG_DATA_HOME"], !dataHome.isEmpty {
            return URL(fileURLWithPath: dataHome).appendingPathComponent(folderName)
        }
        let home = environment["HOME"].map { URL(fileURLWithPath: $0) } ?? FileManager.default.homeDirectoryForCurrentUser
        return home.appendingPathComponent(".local/share").appendingPathComponent(folderName)
    }
}
