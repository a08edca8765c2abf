//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Testing

@testable import AccountSecurity
@testable import SpeziAccountStore

@Suite("Password hashing")
struct PasswordHasherTests {
    let hasher: PasswordHasher

    init() throws {
        hasher = try PasswordHasher(parameters: .insecureTesting, allowingWeakParameters: true)
    }

    @Test("the default is Argon2id at OWASP's first choice, scrypt's default its minimum, and weaker ones need explicit consent")
    func defaultsAndConsent() throws {
        #expect(try PasswordHasher().algorithm == .argon2id(Argon2idParameters(memoryKiB: 19_456, iterations: 2, parallelism: 1)))
        #expect(try PasswordHasher(parameters: .owaspMinimum).parameters == ScryptParameters(logN: 17, blockSize: 8, parallelism: 1))
        #expect(throws: PasswordHashingError.parametersBelowMinimum(.insecureTesting)) {
            try PasswordHasher(parameters: .insecureTesting)
        }
        #expect(throws: PasswordHashingError.invalidParameters(ScryptParameters(logN: 40, blockSize: 8, parallelism: 1))) {
            try PasswordHasher(parameters: ScryptParameters(logN: 40, blockSize: 8, parallelism: 1), allowingWeakParameters: true)
        }
    }

    @Test("derivation matches an independent scrypt (Python's hashlib, RFC 7914 vector)")
    func knownVectors() throws {
        let rfc = try PasswordHasher.derive(
            "password", salt: Array("NaCl".utf8), parameters: ScryptParameters(logN: 10, blockSize: 8, parallelism: 16))
        #expect(rfc.map { String(format: "%02x", $0) }.joined() == "fdbabe1c9d3472007856e7190d01e9fe7c6ad7cbc8237830e77376634b373162")
        let stored = try hasher.hash("hunter2-hunter2", salt: Array(0..<16))
        #expect(stored == "$scrypt$ln=10,r=8,p=1$AAECAwQFBgcICQoLDA0ODw$5NsfMIT8asUJZ+RdpvtVRgZq1ib0vznDpJO9TjRJvkw")
    }

    @Test("a hash verifies its password and nothing else, and never contains it")
    func verifyRoundTrip() throws {
        let stored = try hasher.hash("correct horse battery")
        #expect(try hasher.verify("correct horse battery", against: stored))
        #expect(try !hasher.verify("correct horse batterY", against: stored))
        #expect(try !hasher.verify("", against: stored))
        #expect(!stored.contains("correct horse"))
        #expect(PasswordHasher.isHashString(stored))
        #expect(!PasswordHasher.isHashString("correct horse battery"))
        // Two hashes of one password differ (random salt).
        #expect(try hasher.hash("correct horse battery") != stored)
    }

    @Test("weaker stored parameters ask for a rehash; equal or stronger ones do not")
    func rehash() throws {
        let weak = try hasher.hash("pw-123456")
        let stronger = try PasswordHasher(parameters: ScryptParameters(logN: 11, blockSize: 8, parallelism: 1), allowingWeakParameters: true)
        #expect(try stronger.needsRehash(weak))
        #expect(try !hasher.needsRehash(weak))
        // The stronger hasher still verifies the old hash with the old parameters.
        #expect(try stronger.verify("pw-123456", against: weak))
    }

    @Test(
        "malformed stored hashes are typed errors",
        arguments: [
            "", "plaintext", "$scrypt$ln=10,r=8$AAAA$AAAA", "$bcrypt$ln=10,r=8,p=1$AAAA$AAAA",
            "$scrypt$ln=10,r=8,p=1$!!!$AAAA", "$scrypt$ln=99,r=8,p=1$AAAA$5NsfMIT8asUJZ+RdpvtVRgZq1ib0vznDpJO9TjRJvkw"
        ])
    func malformed(stored: String) {
        #expect(throws: PasswordHashingError.self) {
            try hasher.verify("x", against: stored)
        }
    }

    @Test("constant-time comparison compares whole buffers")
    func constantTime() {
        #expect(PasswordHasher.constantTimeEquals([1, 2, 3], [1, 2, 3]))
        #expect(!PasswordHasher.constantTimeEquals([1, 2, 3], [1, 2, 4]))
        #expect(!PasswordHasher.constantTimeEquals([1, 2, 3], [1, 2]))
    }
}
