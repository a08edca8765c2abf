//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Crypto
import Foundation
import _CryptoExtras

/// A Firebase project's password hash parameters, as its console shows them under
/// Authentication → Users → Password hash parameters (and as `firebase auth:import` takes them).
///
/// Firebase hashes with a modified scrypt: scrypt(password, salt ‖ salt separator, N = 2^memCost,
/// r = rounds, p = 1) gives a key, and the stored hash is the project's signer key encrypted with
/// that key's first 32 bytes under AES-256 in counter mode with a zero nonce. The signer key is a
/// secret of the project (a pepper): it never goes into the log. Hashes imported from Firebase are
/// stored as `$firebase-scrypt$ln=<memCost>,r=<rounds>,k=<fingerprint>$<salt>$<hash>`, where the
/// fingerprint names the signer key without revealing it, so that a store configured with another
/// project's key says so instead of refusing every password.
public struct FirebaseHashParameters: Sendable, Equatable {
    /// The project's signer key (the console's "base64_signer_key", decoded).
    public let signerKey: [UInt8]
    /// The project's salt separator (the console's "base64_salt_separator", decoded).
    public let saltSeparator: [UInt8]
    /// scrypt's block size r (the console's "rounds").
    public let rounds: Int
    /// log2 of scrypt's cost N (the console's "mem_cost").
    public let memoryCost: Int

    /// Creates the parameters from the console's base64 values.
    ///
    /// - Parameters:
    ///   - signerKey: The base64 signer key.
    ///   - saltSeparator: The base64 salt separator.
    ///   - rounds: The rounds (1–32).
    ///   - memoryCost: The memory cost (1–20).
    /// - Throws: ``FirebaseHashError/invalidParameters(_:)`` for values that are not base64 or out of range.
    public init(base64SignerKey signerKey: String, base64SaltSeparator saltSeparator: String, rounds: Int, memoryCost: Int) throws {
        guard let key = FirebaseScrypt.decodeBase64(signerKey), !key.isEmpty, key.count <= 1_024 else {
            throw FirebaseHashError.invalidParameters("the signer key is not base64 of 1 to 1,024 bytes")
        }
        guard let separator = FirebaseScrypt.decodeBase64(saltSeparator), separator.count <= 64 else {
            throw FirebaseHashError.invalidParameters("the salt separator is not base64 of at most 64 bytes")
        }
        try self.init(signerKey: key, saltSeparator: separator, rounds: rounds, memoryCost: memoryCost)
    }

    /// Creates the parameters from decoded bytes.
    ///
    /// - Parameters:
    ///   - signerKey: The signer key.
    ///   - saltSeparator: The salt separator.
    ///   - rounds: The rounds (1–32).
    ///   - memoryCost: The memory cost (1–20).
    /// - Throws: ``FirebaseHashError/invalidParameters(_:)`` for values out of range.
    public init(signerKey: [UInt8], saltSeparator: [UInt8], rounds: Int, memoryCost: Int) throws {
        guard (1...32).contains(rounds), (1...20).contains(memoryCost) else {
            throw FirebaseHashError.invalidParameters("rounds must be 1–32 and the memory cost 1–20 (got \(rounds), \(memoryCost))")
        }
        guard !signerKey.isEmpty else { throw FirebaseHashError.invalidParameters("the signer key is empty") }
        self.signerKey = signerKey
        self.saltSeparator = saltSeparator
        self.rounds = rounds
        self.memoryCost = memoryCost
    }

    /// Reads the parameters from a JSON file with the console's four fields
    /// (`base64_signer_key`, `base64_salt_separator`, `rounds`, `mem_cost`; camel case is read too).
    ///
    /// - Parameter url: The file.
    /// - Returns: The parameters.
    /// - Throws: ``FirebaseHashError/invalidParameters(_:)`` naming what is missing or wrong.
    public static func read(from url: URL) throws -> FirebaseHashParameters {
        let data: Data
        do {
            data = try Data(contentsOf: url)
        } catch {
            throw FirebaseHashError.invalidParameters("cannot read \(url.path): \(error.localizedDescription)")
        }
        guard data.count <= 16 * 1_024, let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            throw FirebaseHashError.invalidParameters("\(url.path) is not a JSON object of at most 16 KiB")
        }
        func value<T>(_ names: String...) -> T? { names.lazy.compactMap { object[$0] as? T }.first }
        guard let key: String = value("base64_signer_key", "signerKey"),
            let separator: String = value("base64_salt_separator", "saltSeparator"),
            let rounds: Int = value("rounds"), let memoryCost: Int = value("mem_cost", "memCost", "memoryCost")
        else {
            throw FirebaseHashError.invalidParameters(
                "\(url.path) needs base64_signer_key, base64_salt_separator, rounds and mem_cost (as the Firebase console shows them)")
        }
        return try FirebaseHashParameters(base64SignerKey: key, base64SaltSeparator: separator, rounds: rounds, memoryCost: memoryCost)
    }

    /// Four bytes of SHA-256 over the signer key and salt separator, in hex: names the key in stored
    /// hashes without revealing it.
    public var fingerprint: String {
        var hash = SHA256()
        hash.update(data: Array("firebase-signer-key".utf8))
        hash.update(data: signerKey)
        hash.update(data: saltSeparator)
        return hash.finalize().prefix(4).map { String(format: "%02x", $0) }.joined()
    }
}

/// Errors of Firebase's password hashes.
public enum FirebaseHashError: Error, Equatable, CustomStringConvertible {
    /// The project's hash parameters are missing a value or have one out of range.
    case invalidParameters(String)
    /// A hash imported from Firebase was checked, but the store has no Firebase hash parameters.
    case parametersMissing
    /// A hash imported from Firebase names another signer key than the configured one.
    case otherProject(stored: String, configured: String)
    /// A user's exported hash or salt is not base64.
    case malformedUserHash(String)

    /// A one-line, human-readable description (for logs and error messages).
    public var description: String {
        switch self {
        case let .invalidParameters(reason): "Firebase hash parameters: \(reason)"
        case .parametersMissing:
            "a password imported from Firebase was checked, but no Firebase hash parameters are configured "
                + "(AccountStoreOptions.firebaseHashParameters, accountctl serve --firebase-hash-parameters)"
        case let .otherProject(stored, configured):
            "a password imported from Firebase was hashed with signer key \(stored), but the store is configured with \(configured)"
        case let .malformedUserHash(reason): "Firebase user hash: \(reason)"
        }
    }
}

/// Firebase's modified scrypt: checking a password against a hash exported from Firebase.
public enum FirebaseScrypt {
    /// The stored form's prefix.
    public static let prefix = "$firebase-scrypt$"

    /// The stored form of a user's exported hash and salt (both base64, standard or URL-safe).
    ///
    /// - Parameters:
    ///   - passwordHash: The user's `passwordHash` from `firebase auth:export`.
    ///   - salt: The user's `salt`.
    ///   - parameters: The project's hash parameters.
    /// - Returns: The string to store as the account's password hash.
    /// - Throws: ``FirebaseHashError/malformedUserHash(_:)`` when either is not base64 of a plausible length.
    public static func storedHash(passwordHash: String, salt: String, parameters: FirebaseHashParameters) throws -> String {
        guard let hash = decodeBase64(passwordHash), (16...1_024).contains(hash.count) else {
            throw FirebaseHashError.malformedUserHash("passwordHash is not base64 of 16 to 1,024 bytes")
        }
        guard let saltBytes = decodeBase64(salt), (1...256).contains(saltBytes.count) else {
            throw FirebaseHashError.malformedUserHash("salt is not base64 of 1 to 256 bytes")
        }
        return "\(prefix)ln=\(parameters.memoryCost),r=\(parameters.rounds),k=\(parameters.fingerprint)$"
            + "\(PasswordHasher.encodeBase64(saltBytes))$\(PasswordHasher.encodeBase64(hash))"
    }

    /// Whether `stored` is in this form.
    public static func isFirebaseHash(_ stored: String) -> Bool { stored.hasPrefix(prefix) }

    /// The parts of a stored Firebase hash.
    package struct Parsed: Equatable {
        let memoryCost: Int
        let rounds: Int
        let fingerprint: String
        let salt: [UInt8]
        let hash: [UInt8]
    }

    package static func parse(_ stored: String) throws -> Parsed {
        let fields = stored.split(separator: "$", omittingEmptySubsequences: false)
        guard fields.count == 5, fields[0].isEmpty, fields[1] == "firebase-scrypt" else {
            throw PasswordHashingError.malformedHash("expected $firebase-scrypt$ln=…,r=…,k=…$<salt>$<hash>")
        }
        var values: [String: Substring] = [:]
        for pair in fields[2].split(separator: ",") {
            let parts = pair.split(separator: "=", maxSplits: 1)
            guard parts.count == 2 else { throw PasswordHashingError.malformedHash("bad parameter '\(pair)'") }
            values[String(parts[0])] = parts[1]
        }
        guard let memoryCost = values["ln"].flatMap({ Int($0) }), let rounds = values["r"].flatMap({ Int($0) }),
            let fingerprint = values["k"], fingerprint.count == 8,
            (1...20).contains(memoryCost), (1...32).contains(rounds)
        else {
            throw PasswordHashingError.malformedHash("Firebase parameters ln (1–20), r (1–32) and k are required")
        }
        guard let salt = decodeBase64(fields[3]), !salt.isEmpty, let hash = decodeBase64(fields[4]), hash.count >= 16 else {
            throw PasswordHashingError.malformedHash("Firebase salt or hash is not valid base64")
        }
        return Parsed(memoryCost: memoryCost, rounds: rounds, fingerprint: String(fingerprint), salt: salt, hash: hash)
    }

    /// Checks `password` against a stored Firebase hash, comparing in constant time.
    ///
    /// - Parameters:
    ///   - password: The password in the clear.
    ///   - stored: The stored form (``storedHash(passwordHash:salt:parameters:)``).
    ///   - parameters: The project's hash parameters, or nil when none are configured.
    /// - Returns: Whether the password is the one Firebase hashed.
    /// - Throws: ``FirebaseHashError/parametersMissing`` or ``FirebaseHashError/otherProject(stored:configured:)``
    ///   when the key to check with is not there, `PasswordHashingError` for a malformed stored form.
    public static func verify(_ password: String, against stored: String, parameters: FirebaseHashParameters?) throws -> Bool {
        let parsed = try parse(stored)
        guard let parameters else { throw FirebaseHashError.parametersMissing }
        guard parsed.fingerprint == parameters.fingerprint else {
            throw FirebaseHashError.otherProject(stored: parsed.fingerprint, configured: parameters.fingerprint)
        }
        let derived = try hash(
            password, salt: parsed.salt, signerKey: parameters.signerKey, saltSeparator: parameters.saltSeparator,
            rounds: parsed.rounds, memoryCost: parsed.memoryCost)
        return PasswordHasher.constantTimeEquals(derived, parsed.hash)
    }

    /// Firebase's hash of `password`: the signer key encrypted under the first 32 bytes of
    /// scrypt(password, salt ‖ separator, N = 2^memoryCost, r = rounds, p = 1, 64 bytes), AES-256-CTR, zero nonce.
    ///
    /// - Parameters:
    ///   - password: The password in the clear.
    ///   - salt: The user's salt.
    ///   - signerKey: The project's signer key.
    ///   - saltSeparator: The project's salt separator.
    ///   - rounds: scrypt's r.
    ///   - memoryCost: log2 of scrypt's N.
    /// - Returns: The hash, as long as the signer key.
    /// - Throws: ``PasswordHashingError/derivationFailed(_:)`` when scrypt or AES fails.
    public static func hash(
        _ password: String, salt: [UInt8], signerKey: [UInt8], saltSeparator: [UInt8], rounds: Int, memoryCost: Int
    ) throws -> [UInt8] {
        do {
            let derived = try KDF.Scrypt.deriveKey(
                from: Array(password.utf8), salt: salt + saltSeparator, outputByteCount: 64,
                rounds: 1 << memoryCost, blockSize: rounds, parallelism: 1)
            let aesKey = derived.withUnsafeBytes { SymmetricKey(data: Array($0.prefix(32))) }
            let nonce = try AES._CTR.Nonce(nonceBytes: [UInt8](repeating: 0, count: 16))
            return Array(try AES._CTR.encrypt(signerKey, using: aesKey, nonce: nonce))
        } catch {
            throw PasswordHashingError.derivationFailed("Firebase scrypt: \(error)")
        }
    }

    /// Decodes standard or URL-safe base64, with or without padding.
    package static func decodeBase64<S: StringProtocol>(_ text: S) -> [UInt8]? {
        var normalized = String(text).replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while normalized.count % 4 != 0 { normalized.append("=") }
        return Data(base64Encoded: normalized).map { Array($0) }
    }
}
