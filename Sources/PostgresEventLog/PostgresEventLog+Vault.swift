//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import KeyVaultStorage

/// The log keeps the key vault in its own schema (tables `key_vault` and `key_slots`), shared by
/// every app server on the log.
extension PostgresEventLog: KeyVaultHosting {
    package var hostedVaultDescription: String { "the key vault of \(settings) (tables key_vault and key_slots)" }

    package var hostedVaultRestoreHint: String { "restore the tables key_vault and key_slots from a backup of the database" }

    package var hostedVaultPutBackHint: String { "put the log's own key_vault and key_slots tables back" }

    package func hostedVaultExists() throws -> Bool {
        do {
            return try PostgresVaultStorage.exists(at: settings)
        } catch {
            throw KeyVaultHostingError("cannot tell whether \(hostedVaultDescription) exists: \(error)")
        }
    }

    package func hostedVaultStorage(create header: [UInt8]?) throws -> any KeyVaultStorage {
        do {
            return try PostgresVaultStorage(location: settings, create: header)
        } catch let error as PostgresVaultError {
            throw KeyVaultHostingError(error.description)
        }
    }
}
