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
        case let .malformedHash(reason):
            "stored password hash is malformed: \(reason)"
        case let .derivationFailed(reason):
            "scrypt key derivation failed: \(reason)"
        }
    }
}

/// Hashes passwords with scrypt and checks them, storing a self-describing string.
///
/// The stored form follows the PHC string format, so the parameters travel with the hash and can
/// be raised later (``needsRehash(_:)`` tells when a login should re-hash the password):
///
/// ```
/// $scrypt$ln=17,r=8,p=1$<salt, base64 without padding>$<32-byte key, base64 without padding>
/// ```
///
/// ```swift
/// let hasher = try PasswordHasher()                    // OWASP minimum
/// let stored = try hasher.hash("correct horse battery")
/// try hasher.verify("correct horse battery", against: stored) // true
/// ```
public struct PasswordHasher: Sendable {
    /// The parameters new hashes are made with.
    public let parameters: ScryptParameters
    /// Length of the random salt, in bytes.
    public static let saltLength = 16
    /// Length of the derived key, in bytes.
    public static let keyLength = 32

    /// Creates a hasher.
    /// - Parameters:
    ///   - parameters: the scrypt cost; defaults to ``ScryptParameters/owaspMinimum``.
    ///   - allowingWeakParameters: must be `true` for parameters below OWASP's minimum (tests only).
    public init(parameters: ScryptParameters = .owaspMinimum, allowingWeakParameters: Bool = false) throws {
        try Self.checkRange(parameters)
        guard allowingWeakParameters || parameters.isAtLeast(.owaspMinimum) else {
            throw PasswordHashingError.parametersBelowMinimum(parameters)
        }
        self.parameters = parameters
    }

    /// Hashes `password` with a fresh random salt.
    public func hash(_ password: String) throws -> String {
        var generator = SystemRandomNumberGenerator()
        let salt = (0..<Self.saltLength).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        return try hash(password, salt: salt)
    }

    /// Hashes `password` with the given salt (deterministic; for tests and for verification).
    public func hash(_ password: String, salt: [UInt8]) throws -> String {
        let key = try Self.derive(password, salt: salt, parameters: parameters)
        return Self.format(parameters: parameters, salt: salt, key: key)
    }

    /// Checks `password` against a stored hash string, comparing in constant time.
    ///
    /// The work done depends only on the stored parameters, never on how much of the key matches.
    public func verify(_ password: String, against stored: String) throws -> Bool {
        let parsed = try Self.parse(stored)
        let key = try Self.derive(password, salt: parsed.salt, parameters: parsed.parameters)
        return Self.constantTimeEquals(key, parsed.key)
    }

    /// Whether `stored` was made with weaker parameters than this hasher's, so a successful login
    /// should store a fresh hash.
    public func needsRehash(_ stored: String) throws -> Bool {
        try !Self.parse(stored).parameters.isAtLeast(parameters)
    }

    /// Whether a string looks like a hash this type produced (used to refuse plaintext in the log).
    public static func isHashString(_ string: String) -> Bool {
        (try? parse(string)) != nil
    }

    // MARK: - Internals

    struct Parsed {
        let parameters: ScryptParameters
        let salt: [UInt8]
        let key: [UInt8]
    }

    static func parse(_ stored: String) throws -> Parsed {
        let fields = stored.split(separator: "$", omittingEmptySubsequences: false)
        guard fields.count == 5, fields[0].isEmpty, fields[1] == "scrypt" else {
            throw PasswordHashingError.malformedHash("expected $scrypt$<params>$<salt>$<hash>")
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
        return Parsed(parameters: parameters, salt: salt, key: key)
    }

    static func checkRange(_ parameters: ScryptParameters) throws {
        guard (1...24).contains(parameters.logN), (1...32).contains(parameters.blockSize), (1...16).contains(parameters.parallelism) else {
            throw PasswordHashingError.invalidParameters(parameters)
        }
    }

    static func derive(_ password: String, salt: [UInt8], parameters: ScryptParameters) throws -> [UInt8] {
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

    static func format(parameters: ScryptParameters, salt: [UInt8], key: [UInt8]) -> String {
        "$scrypt$\(parameters)$\(encodeBase64(salt))$\(encodeBase64(key))"
    }

    static func constantTimeEquals(_ lhs: [UInt8], _ rhs: [UInt8]) -> Bool {
        guard lhs.count == rhs.count else {
            return false
        }
        var difference: UInt8 = 0
        for index in lhs.indices {
            difference |= lhs[index] ^ rhs[index]
        }
        return difference == 0
    }

    private static func encodeBase64(_ bytes: [UInt8]) -> String {
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
