//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import CArgon2
import Foundation
import SpeziAccount
import Synchronization
import Testing

@testable import AccountSecurity
@testable import SpeziAccountStore

@Suite("Argon2id password hashes")
struct Argon2idTests {
    let cheap = Argon2idParameters(memoryKiB: 64, iterations: 1, parallelism: 1)

    @Test("the PHC string is the reference library's own encoding, byte for byte, and its verifier accepts it")
    func referenceEncoding() throws {
        let hasher = try PasswordHasher(algorithm: .argon2id(cheap), allowingWeakParameters: true)
        let salt = Array(0..<16).map(UInt8.init)
        let stored = try hasher.hash("hunter2-hunter2", salt: salt)
        let password = Array("hunter2-hunter2".utf8)
        var encoded = [CChar](repeating: 0, count: 256)
        let status = argon2id_hash_encoded(1, 64, 1, password, password.count, salt, salt.count, 32, &encoded, encoded.count)
        #expect(status == ARGON2_OK.rawValue)
        #expect(stored == text(encoded))
        #expect(stored.hasPrefix("$argon2id$v=19$m=64,t=1,p=1$AAECAwQFBgcICQoLDA0ODw$"))
        #expect(argon2id_verify(stored, password, password.count) == ARGON2_OK.rawValue)
        let wrong = Array("hunter2-hunter3".utf8)
        #expect(argon2id_verify(stored, wrong, wrong.count) == ARGON2_VERIFY_MISMATCH.rawValue)
    }

    @Test("a hash verifies its password and nothing else; hashes made elsewhere (the library's encoder) verify too")
    func verify() throws {
        let hasher = try PasswordHasher(algorithm: .argon2id(cheap), allowingWeakParameters: true)
        let stored = try hasher.hash("correct horse battery")
        #expect(try hasher.verify("correct horse battery", against: stored))
        #expect(try !hasher.verify("correct horse batterY", against: stored))
        #expect(PasswordHasher.isHashString(stored))
        #expect(try hasher.hash("correct horse battery") != stored)

        let password = Array("from elsewhere".utf8)
        let salt = [UInt8](repeating: 42, count: 16)
        var encoded = [CChar](repeating: 0, count: 256)
        #expect(argon2id_hash_encoded(2, 128, 1, password, password.count, salt, salt.count, 32, &encoded, encoded.count) == ARGON2_OK.rawValue)
        #expect(try hasher.verify("from elsewhere", against: text(encoded)))
    }

    @Test("both kinds verify under either hasher; the other kind and weaker parameters ask for a rehash")
    func mixedAndRehash() throws {
        let argon = try PasswordHasher(algorithm: .argon2id(cheap), allowingWeakParameters: true)
        let scrypt = try PasswordHasher(parameters: .insecureTesting, allowingWeakParameters: true)
        let argonHash = try argon.hash("pw-123456")
        let scryptHash = try scrypt.hash("pw-123456")
        #expect(try argon.verify("pw-123456", against: scryptHash))
        #expect(try scrypt.verify("pw-123456", against: argonHash))
        #expect(try argon.needsRehash(scryptHash))
        #expect(try scrypt.needsRehash(argonHash))
        #expect(try !argon.needsRehash(argonHash))
        let stronger = try PasswordHasher(
            algorithm: .argon2id(Argon2idParameters(memoryKiB: 128, iterations: 1, parallelism: 1)), allowingWeakParameters: true)
        #expect(try stronger.needsRehash(argonHash))
    }

    @Test("weak parameters need consent; out-of-range and malformed strings are refused with a reason")
    func refusals() throws {
        #expect(throws: PasswordHashingError.argon2ParametersBelowMinimum(cheap)) { try PasswordHasher(algorithm: .argon2id(cheap)) }
        let huge = Argon2idParameters(memoryKiB: 1 << 30, iterations: 1, parallelism: 1)
        #expect(throws: PasswordHashingError.invalidArgon2Parameters(huge)) {
            try PasswordHasher(algorithm: .argon2id(huge), allowingWeakParameters: true)
        }
        let hasher = try PasswordHasher(algorithm: .argon2id(cheap), allowingWeakParameters: true)
        for bad in [
            "$argon2id$v=16$m=64,t=1,p=1$AAECAwQFBgcICQoLDA0ODw$AAECAwQFBgcICQoLDA0ODwABAgMEBQYHCAkKCwwNDg8",
            "$argon2id$v=19$m=64,t=1$AAECAwQFBgcICQoLDA0ODw$AAECAwQFBgcICQoLDA0ODwABAgMEBQYHCAkKCwwNDg8",
            "$argon2id$v=19$m=4194305000,t=1,p=1$AAECAwQFBgcICQoLDA0ODw$AAECAwQFBgcICQoLDA0ODwABAgMEBQYHCAkKCwwNDg8",
            "$argon2id$v=19$m=64,t=1,p=1$AAEC$AAECAwQFBgcICQoLDA0ODwABAgMEBQYHCAkKCwwNDg8",
            "$argon2i$v=19$m=64,t=1,p=1$AAECAwQFBgcICQoLDA0ODw$AAECAwQFBgcICQoLDA0ODwABAgMEBQYHCAkKCwwNDg8"
        ] {
            #expect(throws: PasswordHashingError.self, "\(bad)") { try hasher.verify("x", against: bad) }
        }
    }

    @Test(
        "a store that moves from scrypt to Argon2id rehashes each password at its next login, once: no change of the owner's"
    )
    func storeRehashesOnLogin() async throws {
        let fixture = StoreFixture()
        defer { fixture.cleanup() }
        var store = try await fixture.open()
        let created = try await store.signup(leland())
        #expect(try await store.accounts.load(created.accountId)?.passwordHash?.hasPrefix("$scrypt$") == true)
        try await store.requestPasswordReset(userId: "lelandstanford@stanford.edu")
        let before = try #require(try await store.accounts.load(created.accountId))
        await store.close()

        store = try await fixture.open { $0.passwordHashing = .argon2id(Argon2idParameters(memoryKiB: 64, iterations: 1, parallelism: 1)) }
        _ = try await store.login(userId: "lelandstanford@stanford.edu", password: "StanfordRocks123!")
        _ = try await store.login(userId: "lelandstanford@stanford.edu", password: "StanfordRocks123!")
        let types = try await store.log.readStream(created.accountId).map(\.type)
        #expect(
            types == [
                "account.created", "auth.password-reset-requested", "account.password-rehashed", "auth.login-succeeded", "auth.login-succeeded"
            ])
        let state = try #require(try await store.accounts.load(created.accountId))
        let hash = try #require(state.passwordHash)
        #expect(hash.hasPrefix("$argon2id$v=19$m=64,t=1,p=1$"))
        // The same password: the reset request stays open, no change is counted, the details did not change.
        #expect(state.resetTokens == before.resetTokens && state.resetTokens.count == 1)
        #expect(state.changeBudget == before.changeBudget && state.updatedAt == before.updatedAt)
        #expect(try store.details(of: created.accountId) != nil)
        await #expect(throws: AccountServiceError.wrongCredentials) {
            _ = try await store.login(userId: "lelandstanford@stanford.edu", password: "wrong one")
        }
        await store.close()
    }

    @Test("new stores hash with Argon2id at OWASP's first choice by default: the hash a new store writes says so")
    func defaultForNewStores() async throws {
        var scrypt = AccountStoreOptions()
        scrypt.passwordParameters = .insecureTesting
        #expect(scrypt.passwordHashing == .scrypt(.insecureTesting))
        // A store opened with the default options: the stored hash names Argon2id, 19 MiB, 2 passes.
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("argon2-default-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        var options = AccountStoreOptions()
        options.sync = .relaxed
        let store = try await AccountStore(directory: directory.path, options: options)
        let created = try await store.signup(leland())
        let hash = try #require(try await store.accounts.load(created.accountId)?.passwordHash)
        #expect(hash.hasPrefix("$argon2id$v=19$m=19456,t=2,p=1$"), "\(hash)")
        #expect(try await store.login(userId: "lelandstanford@stanford.edu", password: "StanfordRocks123!").accountId == created.accountId)
        await store.close()
    }
}

/// A NUL-terminated C string in an array, as a String.
private func text(_ characters: [CChar]) -> String {
    String(decoding: characters.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}
