//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import AccountSecurity

// The types of `AccountSecurity` that the store's public API shows, under the names it has always
// had here: an app that imports `SpeziAccountStore` needs no other import for its options.

/// How passwords are hashed (see `AccountSecurity.PasswordAlgorithm`).
public typealias PasswordAlgorithm = AccountSecurity.PasswordAlgorithm
/// scrypt's parameters (see `AccountSecurity.ScryptParameters`).
public typealias ScryptParameters = AccountSecurity.ScryptParameters
/// Argon2id's parameters (see `AccountSecurity.Argon2idParameters`).
public typealias Argon2idParameters = AccountSecurity.Argon2idParameters
/// Hashes and checks passwords (see `AccountSecurity.PasswordHasher`).
public typealias PasswordHasher = AccountSecurity.PasswordHasher
/// Why hashing or checking a password failed (see `AccountSecurity.PasswordHashingError`).
public typealias PasswordHashingError = AccountSecurity.PasswordHashingError
/// The per-account keys of crypto-shredding (see `AccountSecurity.KeyVault`).
public typealias KeyVault = AccountSecurity.KeyVault
/// Why the key vault failed (see `AccountSecurity.KeyVaultError`).
public typealias KeyVaultError = AccountSecurity.KeyVaultError
/// A Firebase project's password hash parameters (see `AccountSecurity.FirebaseHashParameters`).
public typealias FirebaseHashParameters = AccountSecurity.FirebaseHashParameters
/// Why a Firebase hash could not be checked (see `AccountSecurity.FirebaseHashError`).
public typealias FirebaseHashError = AccountSecurity.FirebaseHashError
