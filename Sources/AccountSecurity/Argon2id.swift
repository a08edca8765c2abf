//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import CArgon2
import Foundation

/// The cost parameters of Argon2id (RFC 9106), version 0x13.
///
/// The default is OWASP's first choice for password storage: 19 MiB of memory, 2 passes, one lane
/// (about 25 ms a hash on the 2-core VM of the README, where scrypt at OWASP's minimum takes
/// 453 ms). Anything cheaper must be asked for with `allowingWeakParameters`.
public struct Argon2idParameters: Sendable, Hashable, CustomStringConvertible {
    /// Memory in KiB (`m`).
    public var memoryKiB: Int
    /// Passes over the memory (`t`).
    public var iterations: Int
    /// Lanes (`p`).
    public var parallelism: Int

    /// OWASP's first choice: m = 19 MiB, t = 2, p = 1.
    public static let owaspMinimum = Argon2idParameters(memoryKiB: 19 * 1_024, iterations: 2, parallelism: 1)
    /// Cheap parameters for unit tests. Never use them for real accounts.
    public static let insecureTesting = Argon2idParameters(memoryKiB: 64, iterations: 1, parallelism: 1)

    /// Creates parameters.
    ///
    /// - Parameters:
    ///   - memoryKiB: The memory each hash fills, in KiB.
    ///   - iterations: The number of passes over that memory.
    ///   - parallelism: The number of lanes.
    public init(memoryKiB: Int, iterations: Int, parallelism: Int) {
        self.memoryKiB = memoryKiB
        self.iterations = iterations
        self.parallelism = parallelism
    }

    /// Whether these parameters cost an attacker at least as much as `other` in every dimension.
    ///
    /// - Parameter other: The parameters to compare with (OWASP's first choice, say).
    /// - Returns: True when memory, passes and lanes are each no lower than those of `other`.
    public func isAtLeast(_ other: Argon2idParameters) -> Bool {
        memoryKiB >= other.memoryKiB && iterations >= other.iterations && parallelism >= other.parallelism
    }

    /// As in the PHC string: `m=19456,t=2,p=1`.
    public var description: String {
        "m=\(memoryKiB),t=\(iterations),p=\(parallelism)"
    }

    /// Within what the library accepts and what a server can afford (at most 4 GiB, 64 passes, 16 lanes).
    package var isInRange: Bool {
        (1...16).contains(parallelism) && (8 * parallelism...(4 << 20)).contains(memoryKiB) && (1...64).contains(iterations)
    }
}

/// How new passwords are hashed. Stored hashes of either kind keep verifying; a login with a hash
/// of the other kind, or of weaker parameters, stores a new one (see `PasswordHasher/needsRehash(_:)`).
public enum PasswordAlgorithm: Sendable, Hashable, CustomStringConvertible {
    /// scrypt (`$scrypt$ln=…,r=…,p=…$salt$key`).
    case scrypt(ScryptParameters)
    /// Argon2id (`$argon2id$v=19$m=…,t=…,p=…$salt$key`), the default.
    case argon2id(Argon2idParameters)

    /// Argon2id at OWASP's first choice.
    public static let recommended = PasswordAlgorithm.argon2id(.owaspMinimum)

    /// The algorithm and its parameters, as in the PHC string.
    public var description: String {
        switch self {
        case let .scrypt(parameters): "scrypt \(parameters)"
        case let .argon2id(parameters): "argon2id \(parameters)"
        }
    }
}

/// Argon2id through libargon2: raw derivation, and the PHC string around it.
package enum Argon2id {
    /// The Argon2 version this writes and accepts (0x13 = 19).
    package static let version = 19

    package static func derive(_ password: String, salt: [UInt8], parameters: Argon2idParameters, keyLength: Int) throws -> [UInt8] {
        guard parameters.isInRange else { throw PasswordHashingError.invalidArgon2Parameters(parameters) }
        var key = [UInt8](repeating: 0, count: keyLength)
        let password = Array(password.utf8)
        let status = argon2id_hash_raw(
            UInt32(parameters.iterations), UInt32(parameters.memoryKiB), UInt32(parameters.parallelism),
            password, password.count, salt, salt.count, &key, key.count)
        guard status == ARGON2_OK.rawValue else {
            throw PasswordHashingError.derivationFailed(String(cString: argon2_error_message(status)))
        }
        return key
    }

    /// `$argon2id$v=19$m=…,t=…,p=…$<salt>$<key>`, base64 without padding.
    package static func format(parameters: Argon2idParameters, salt: String, key: String) -> String {
        "$argon2id$v=\(version)$\(parameters)$\(salt)$\(key)"
    }

    /// The parameters of a stored string's fields (after the leading empty one and `argon2id`).
    package static func parameters(version: Substring, costs: Substring) throws -> Argon2idParameters {
        guard version == "v=\(Self.version)" else { throw PasswordHashingError.malformedHash("unsupported Argon2 version '\(version)'") }
        var values: [String: Int] = [:]
        for pair in costs.split(separator: ",") {
            let parts = pair.split(separator: "=")
            guard parts.count == 2, let value = Int(parts[1]) else { throw PasswordHashingError.malformedHash("bad parameter '\(pair)'") }
            values[String(parts[0])] = value
        }
        guard let memory = values["m"], let iterations = values["t"], let parallelism = values["p"] else {
            throw PasswordHashingError.malformedHash("parameters m, t and p are required")
        }
        let parameters = Argon2idParameters(memoryKiB: memory, iterations: iterations, parallelism: parallelism)
        guard parameters.isInRange else { throw PasswordHashingError.invalidArgon2Parameters(parameters) }
        return parameters
    }
}
