//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Crypto
import Foundation
import _CryptoExtras

/// The cost parameters of scrypt.
///
/// The defaults are OWASP's minimum recommendation for scrypt (N = 2^17, r = 8, p = 1, about
/// 128 MiB and a few hundred milliseconds per hash). Anything cheaper must be asked for by name,
/// with ``PasswordHasher/init(parameters:allowingWeakParameters:)``: tests use that to stay fast.
public struct ScryptParameters: Sendable, Hashable, CustomStringConvertible {
    /// log2 of the CPU/memory cost N.
    public var logN: Int
    /// The block size r.
    public var blockSize: Int
    /// The parallelism p.
    public var parallelism: Int

    /// OWASP's minimum for scrypt: N = 2^17, r = 8, p = 1.
    public static let owaspMinimum = ScryptParameters(logN: 17, blockSize: 8, parallelism: 1)
    /// Cheap parameters for unit tests. Never use them for real accounts.
    public static let insecureTesting = ScryptParameters(logN: 10, blockSize: 8, parallelism: 1)

    /// Creates parameters: cost 2^`logN`, block size `blockSize`, parallelism `parallelism`.
    ///
    /// - Parameters:
    ///   - logN: The base-2 logarithm of the cost N.
    ///   - blockSize: The block size r.
    ///   - parallelism: The parallelism p.
    public init(logN: Int, blockSize: Int, parallelism: Int) {
        self.logN = logN
        self.blockSize = blockSize
        self.parallelism = parallelism
    }

    /// The memory scrypt needs with these parameters, in bytes (128 · N · r).
    public var memoryBytes: Int {
        128 * (1 << logN) * blockSize * parallelism
    }

    /// Whether these parameters are at least as strong as `other` in every dimension that costs an attacker.
    ///
    /// - Parameter other: The parameters to compare with (OWASP's minimum, say).
    /// - Returns: True when the cost, the block size and the parallelism are each no lower than those
    ///   of `other`.
    public func isAtLeast(_ other: ScryptParameters) -> Bool {
        logN >= other.logN && blockSize >= other.blockSize && parallelism >= other.parallelism
    }

    /// A one-line, human-readable description (for logs and error messages).
    public var description: String {
        "ln=\(logN),r=\(blockSize),p=\(parallelism)"
    }
}

/// Errors of password hashing and checking.
public enum PasswordHashingError: Error, Equatable, CustomStringConvertible {
    /// The parameters are below OWASP's minimum and weak parameters were not explicitly allowed.
    case parametersBelowMinimum(ScryptParameters)
    /// The parameters are out of the range scrypt accepts.
    case invalidParameters(ScryptParameters)
    /// The Argon2id parameters are below OWASP's first choice and weak parameters were not explicitly allowed.
    case argon2ParametersBelowMinimum(Argon2idParameters)
    /// The Argon2id parameters are out of range (1–16 lanes, 8 KiB per lane to 4 GiB, 1–64 passes).
    case invalidArgon2Parameters(Argon2idParameters)
    /// A stored hash string is not in the `$scrypt$ln=…,r=…,p=…$salt$hash` form.
    case malformedHash(String)
    /// The key derivation itself failed.
    case derivationFailed(String)

    /// A one-line, human-readable description (for logs and error messages).
    public var description: String {
        switch self {
        case let .parametersBelowMinimum(parameters):
            "scrypt parameters \(parameters) are below OWASP's minimum \(ScryptParameters.owaspMinimum); "
                + "pass allowingWeakParameters: true only in tests"
        case let .invalidParameters(parameters):
            "scrypt parameters \(parameters) are out of range (1 ≤ ln ≤ 24, 1 ≤ r ≤ 32, 1 ≤ p ≤ 16)"
        case let .argon2ParametersBelowMinimum(parameters):
            "Argon2id parameters \(parameters) are below OWASP's first choice \(Argon2idParameters.owaspMinimum); "
                + "pass allowingWeakParameters: true only in tests"
        case let .invalidArgon2Parameters(parameters):
            "Argon2id parameters \(parameters) are out of range (1 ≤ p ≤ 16, 8·p ≤ m ≤ 4 GiB in KiB, 1 ≤ t ≤ 64)"
        case let .malformedHash(reason):
            "stored password hash is malformed: \(reason)"
        case let .derivationFailed(reason):
            "password key derivation failed: \(reason)"
        }
    }
}

/// Hashes passwords with Argon2id (the default) or scrypt and checks them, storing a
/// self-describing string.
///
/// The stored form follows the PHC string format, so the algorithm and its parameters travel with
/// the hash and can change later (``needsRehash(_:)`` tells when a login should re-hash):
///
/// ```
/// $argon2id$v=19$m=19456,t=2,p=1$<salt, base64 without padding>$<32-byte key, base64 without padding>
/// $scrypt$ln=17,r=8,p=1$<salt, base64 without padding>$<32-byte key, base64 without padding>
/// ```
///
/// Both kinds verify whatever the hasher makes new hashes with.
///
/// ```swift
/// let hasher = try PasswordHasher()                    // Argon2id at OWASP's first choice
/// let stored = try hasher.hash("correct horse battery")
/// try hasher.verify("correct horse battery", against: stored) // true
/// ```
public struct PasswordHasher: Sendable {
    /// How new hashes are made.
    public let algorithm: PasswordAlgorithm
    /// The scrypt parameters new hashes are made with when ``algorithm`` is scrypt (OWASP's
    /// minimum otherwise).
    public var parameters: ScryptParameters {
        if case let .scrypt(parameters) = algorithm { return parameters }
        return .owaspMinimum
    }
    /// A Firebase project's hash parameters, with which passwords imported from it are checked
    /// (``FirebaseScrypt``); nil when none were imported.
    public let firebase: FirebaseHashParameters?
    /// Length of the random salt, in bytes.
    public static let saltLength = 16
    /// Length of the derived key, in bytes.
    public static let keyLength = 32

    /// Creates a hasher.
    /// - Parameters:
    ///   - algorithm: how new hashes are made; defaults to Argon2id at OWASP's first choice.
    ///   - allowingWeakParameters: must be `true` for parameters below OWASP's recommendation (tests only).
    ///   - firebase: The hash parameters of a Firebase project whose users were imported, to check
    ///     their passwords until each is rehashed on its first sign-in.
    /// - Throws: ``PasswordHashingError/invalidParameters(_:)`` or
    ///   ``PasswordHashingError/invalidArgon2Parameters(_:)`` for parameters out of range;
    ///   ``PasswordHashingError/parametersBelowMinimum(_:)`` or
    ///   ``PasswordHashingError/argon2ParametersBelowMinimum(_:)`` for weak parameters when
    ///   `allowingWeakParameters` is false.
    public init(
        algorithm: PasswordAlgorithm = .recommended, allowingWeakParameters: Bool = false, firebase: FirebaseHashParameters? = nil
    ) throws {
        switch algorithm {
        case let .scrypt(parameters):
            try Self.checkRange(parameters)
            guard allowingWeakParameters || parameters.isAtLeast(.owaspMinimum) else {
                throw PasswordHashingError.parametersBelowMinimum(parameters)
            }
        case let .argon2id(parameters):
            guard parameters.isInRange else { throw PasswordHashingError.invalidArgon2Parameters(parameters) }
            guard allowingWeakParameters || parameters.isAtLeast(.owaspMinimum) else {
                throw PasswordHashingError.argon2ParametersBelowMinimum(parameters)
            }
        }
        self.algorithm = algorithm
        self.firebase = firebase
    }

    /// Creates a scrypt hasher.
    /// - Parameters:
    ///   - parameters: the scrypt cost.
    ///   - allowingWeakParameters: must be `true` for parameters below OWASP's minimum (tests only).
    /// - Throws: ``PasswordHashingError/invalidParameters(_:)`` for parameters out of range, or
    ///   ``PasswordHashingError/parametersBelowMinimum(_:)`` for weak ones when
    ///   `allowingWeakParameters` is false.
    public init(parameters: ScryptParameters, allowingWeakParameters: Bool = false) throws {
        try self.init(algorithm: .scrypt(parameters), allowingWeakParameters: allowingWeakParameters)
    }

    /// Hashes `password` with a fresh random salt.
    ///
    /// - Parameter password: The password in the clear.
    /// - Returns: The PHC string to store: algorithm, parameters, salt and derived key.
    /// - Throws: ``PasswordHashingError/derivationFailed(_:)`` when the key derivation fails.
    public func hash(_ password: String) throws -> String {
        var generator = SystemRandomNumberGenerator()
        let salt = (0..<Self.saltLength).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        return try hash(password, salt: salt)
    }

    /// Hashes `password` with the given salt (deterministic; for tests and for verification).
    ///
    /// - Parameters:
    ///   - password: The password in the clear.
    ///   - salt: The salt to use as given.
    /// - Returns: The PHC string to store: algorithm, parameters, salt and derived key.
    /// - Throws: ``PasswordHashingError/derivationFailed(_:)`` when the key derivation fails.
    public func hash(_ password: String, salt: [UInt8]) throws -> String {
        switch algorithm {
        case let .scrypt(parameters):
            let key = try Self.derive(password, salt: salt, parameters: parameters)
            return Self.format(parameters: parameters, salt: salt, key: key)
        case let .argon2id(parameters):
            let key = try Argon2id.derive(password, salt: salt, parameters: parameters, keyLength: Self.keyLength)
            return Argon2id.format(parameters: parameters, salt: Self.encodeBase64(salt), key: Self.encodeBase64(key))
        }
    }

    /// Checks `password` against a stored hash string, comparing in constant time.
    ///
    /// The work done depends only on the stored parameters, never on how much of the key matches.
    ///
    /// - Parameters:
    ///   - password: The password in the clear, as entered.
    ///   - stored: A hash string of either algorithm, as ``hash(_:)`` made it.
    /// - Returns: True when the password derives the stored key under the stored parameters.
    /// - Throws: ``PasswordHashingError/malformedHash(_:)`` for a string that is not a hash this type
    ///   reads, ``PasswordHashingError/invalidParameters(_:)`` or
    ///   ``PasswordHashingError/invalidArgon2Parameters(_:)`` when its parameters are out of range,
    ///   or ``PasswordHashingError/derivationFailed(_:)`` when the derivation fails. A wrong
    ///   password is not an error: it returns false.
    public func verify(_ password: String, against stored: String) throws -> Bool {
        if FirebaseScrypt.isFirebaseHash(stored) {
            return try FirebaseScrypt.verify(password, against: stored, parameters: firebase)
        }
        let parsed = try Self.parse(stored)
        let key: [UInt8]
        switch parsed.algorithm {
        case let .scrypt(parameters): key = try Self.derive(password, salt: parsed.salt, parameters: parameters)
        case let .argon2id(parameters): key = try Argon2id.derive(password, salt: parsed.salt, parameters: parameters, keyLength: parsed.key.count)
        }
        return Self.constantTimeEquals(key, parsed.key)
    }

    /// Whether `stored` was made with the other algorithm, or with weaker parameters than this
    /// hasher's, so a successful login should store a fresh hash.
    ///
    /// - Parameter stored: A hash string of either algorithm.
    /// - Returns: True when a fresh hash with this hasher's algorithm and parameters should replace it.
    /// - Throws: ``PasswordHashingError/malformedHash(_:)`` for a string that is not a hash this type
    ///   reads, ``PasswordHashingError/invalidParameters(_:)`` or
    ///   ``PasswordHashingError/invalidArgon2Parameters(_:)`` when its parameters are out of range.
    public func needsRehash(_ stored: String) throws -> Bool {
        if FirebaseScrypt.isFirebaseHash(stored) {
            _ = try FirebaseScrypt.parse(stored)
            return true  // a Firebase hash is never kept
        }
        return switch (try Self.parse(stored).algorithm, algorithm) {
        case let (.scrypt(old), .scrypt(new)): !old.isAtLeast(new)
        case let (.argon2id(old), .argon2id(new)): !old.isAtLeast(new)
        default: true
        }
    }

    /// Whether a string looks like a hash this type produced (used to refuse plaintext in the log).
    ///
    /// - Parameter string: The string to look at.
    /// - Returns: True when it parses as an Argon2id or scrypt hash string.
    public static func isHashString(_ string: String) -> Bool {
        if FirebaseScrypt.isFirebaseHash(string) { return (try? FirebaseScrypt.parse(string)) != nil }
        return (try? parse(string)) != nil
    }

    // MARK: - Internals

    package struct Parsed {
        let algorithm: PasswordAlgorithm
        let salt: [UInt8]
        let key: [UInt8]
    }

    package static func parse(_ stored: String) throws -> Parsed {
        let fields = stored.split(separator: "$", omittingEmptySubsequences: false)
        if fields.count == 6, fields[0].isEmpty, fields[1] == "argon2id" {
            let parameters = try Argon2id.parameters(version: fields[2], costs: fields[3])
            guard let salt = decodeBase64(fields[4]), salt.count >= 8, let key = decodeBase64(fields[5]), (16...64).contains(key.count) else {
                throw PasswordHashingError.malformedHash("salt or key is not valid base64 of an accepted length")
            }
            return Parsed(algorithm: .argon2id(parameters), salt: salt, key: key)
        }
        guard fields.count == 5, fields[0].isEmpty, fields[1] == "scrypt" else {
            throw PasswordHashingError.malformedHash("expected $argon2id$v=19$<params>$<salt>$<hash> or $scrypt$<params>$<salt>$<hash>")
        }
        var values: [String: Int] = [:]
        for pair in fields[2].split(separator: ",") {
            let parts = pair.split(separator: "=")
            guard parts.count == 2, let value = Int(parts[1]) else {
                throw PasswordHashingError.malformedHash("bad parameter '\(pair)'")
            }
            values[String(parts[0])] = value
        }
        guard let logN = values["ln"], let blockSize = values["r"], let parallelism = values["p"] else {
            throw PasswordHashingError.malformedHash("parameters ln, r and p are required")
        }
        let parameters = ScryptParameters(logN: logN, blockSize: blockSize, parallelism: parallelism)
        try checkRange(parameters)
        guard let salt = decodeBase64(fields[3]), !salt.isEmpty, let key = decodeBase64(fields[4]), key.count == keyLength else {
            throw PasswordHashingError.malformedHash("salt or key is not valid base64 of the expected length")
        }
        return Parsed(algorithm: .scrypt(parameters), salt: salt, key: key)
    }

    package static func checkRange(_ parameters: ScryptParameters) throws {
        guard (1...24).contains(parameters.logN), (1...32).contains(parameters.blockSize), (1...16).contains(parameters.parallelism) else {
            throw PasswordHashingError.invalidParameters(parameters)
        }
    }

    package static func derive(_ password: String, salt: [UInt8], parameters: ScryptParameters) throws -> [UInt8] {
        do {
            let key = try KDF.Scrypt.deriveKey(
                from: Array(password.utf8),
                salt: salt,
                outputByteCount: keyLength,
                rounds: 1 << parameters.logN,
                blockSize: parameters.blockSize,
                parallelism: parameters.parallelism
            )
            return key.withUnsafeBytes { Array($0) }
        } catch {
            throw PasswordHashingError.derivationFailed(String(describing: error))
        }
    }

    package static func format(parameters: ScryptParameters, salt: [UInt8], key: [UInt8]) -> String {
        "$scrypt$\(parameters)$\(encodeBase64(salt))$\(encodeBase64(key))"
    }

    package static func constantTimeEquals(_ lhs: [UInt8], _ rhs: [UInt8]) -> Bool {
        guard lhs.count == rhs.count else {
            return false
        }
        var difference: UInt8 = 0
        for index in lhs.indices {
            difference |= lhs[index] ^ rhs[index]
        }
        return difference == 0
    }

    package static func encodeBase64(_ bytes: [UInt8]) -> String {
        var string = Data(bytes).base64EncodedString()
        while string.hasSuffix("=") {
            string.removeLast()
        }
        return string
    }

    private static func decodeBase64(_ text: Substring) -> [UInt8]? {
        var padded = String(text)
        while padded.count % 4 != 0 {
            padded.append("=")
        }
        return Data(base64Encoded: padded).map { Array($0) }
    }
}
