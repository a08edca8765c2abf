//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import AccountSecurity
import Foundation
import SpeziAccount
import Testing

@testable import SpeziAccountStore

@Suite("Users imported from Firebase Authentication")
struct FirebaseImportTests {
    // The example project and user that Firebase publishes with its scrypt (github.com/firebase/scrypt).
    static let parameters = try! FirebaseHashParameters(  // swiftlint:disable:this force_try
        base64SignerKey: "jxspr8Ki0RYycVU8zykbdLGjFQ3McFUH0uiiTvC8pVMXAn210wjLNmdZJzxUECKbm0QsEmYUSDzZvpjeJ9WmXA==",
        base64SaltSeparator: "Bw==", rounds: 8, memoryCost: 14)
    static let salt = "42xEC+ixf3L2lw=="
    static let hash = "lSrfV15cpx95/sZS2W9c9Kp6i/LVgQNDNC/qzrCnh1SAyZvqmZqAjTdn3aoItz+VHjoZilo78198JAdRuid5lQ=="
    static let uid = "8KrHjSsPc3TsCJXgwWwXwgtsVTd2"

    static var users: [FirebaseUser] {
        [
            FirebaseUser(
                localId: uid, email: "user1@example.org", passwordHash: hash, salt: salt, displayName: "Ada King Lovelace",
                providerUserInfo: [
                    .init(providerId: "password", rawId: "user1@example.org"), .init(providerId: "apple.com", rawId: "001234.abcd.0042")
                ]),
            FirebaseUser(localId: "googleOnly-1", email: "g@example.org", providerUserInfo: [.init(providerId: "google.com", rawId: "1098765")]),
            FirebaseUser(localId: "disabled1", email: "d@example.org", passwordHash: hash, salt: salt, disabled: true),
            FirebaseUser(localId: "phoneOnly1", providerUserInfo: [.init(providerId: "phone", rawId: "+15555550100")]),
            FirebaseUser(localId: "taken1", email: "LELANDSTANFORD@stanford.edu", passwordHash: hash, salt: salt),
            FirebaseUser(localId: "bad.uid/1", email: "e@example.org", passwordHash: hash, salt: salt)
        ]
    }

    @Test("Firebase's published example: its password derives its hash, another does not")
    func publishedVector() throws {
        let expected = try #require(Data(base64Encoded: Self.hash))
        let derived = try FirebaseScrypt.hash(
            "user1password", salt: Array(try #require(Data(base64Encoded: Self.salt))), signerKey: Self.parameters.signerKey,
            saltSeparator: Self.parameters.saltSeparator, rounds: 8, memoryCost: 14)
        #expect(derived == Array(expected))
        let stored = try FirebaseScrypt.storedHash(passwordHash: Self.hash, salt: Self.salt, parameters: Self.parameters)
        #expect(stored.hasPrefix("$firebase-scrypt$ln=14,r=8,k=\(Self.parameters.fingerprint)$"))
        #expect(try FirebaseScrypt.verify("user1password", against: stored, parameters: Self.parameters))
        #expect(try !FirebaseScrypt.verify("user1Password", against: stored, parameters: Self.parameters))
        #expect(PasswordHasher.isHashString(stored))
        // The URL-safe alphabet Firebase's API uses reads the same.
        let urlSafe = Self.hash.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        #expect(try FirebaseScrypt.storedHash(passwordHash: urlSafe, salt: Self.salt, parameters: Self.parameters) == stored)
        // Without the project's key, or with another project's, nothing is checked.
        #expect(throws: FirebaseHashError.parametersMissing) { try FirebaseScrypt.verify("user1password", against: stored, parameters: nil) }
        let other = try FirebaseHashParameters(signerKey: Array(repeating: 7, count: 64), saltSeparator: [7], rounds: 8, memoryCost: 14)
        #expect(throws: FirebaseHashError.self) { try FirebaseScrypt.verify("user1password", against: stored, parameters: other) }
    }

    @Test("users are imported with their UIDs, names and Apple/Google links; others are skipped with a reason")
    func importReport() async throws {
        let fixture = StoreFixture()
        defer { fixture.cleanup() }
        let store = try await fixture.open { $0.firebaseHashParameters = Self.parameters }
        try await store.signup(leland())
        let report = try await store.importFirebaseUsers(Self.users, parameters: Self.parameters)
        #expect(report.imported == 2)
        #expect(report.alreadyImported == 0)
        #expect(report.skipped.map(\.uid) == ["disabled1", "phoneOnly1", "taken1", "bad.uid/1"])
        let imported = try #require(try store.details(of: Self.uid))
        #expect(imported.userId == "user1@example.org")
        #expect(imported.name?.givenName == "Ada King")
        #expect(imported.name?.familyName == "Lovelace")
        let apple = LinkedIdentity(issuer: "https://appleid.apple.com", subject: "001234.abcd.0042")
        #expect(try await store.accounts.accountId(forIssuer: apple.issuer, subject: apple.subject) == Self.uid)
        #expect(try await store.accounts.accountId(forIssuer: "https://accounts.google.com", subject: "1098765") == "googleOnly-1")
        let types = try await store.log.readStream(Self.uid, from: 1, limit: 10).map(\.type)
        #expect(types == ["account.created", "account.identity-linked"])

        // A second run adds nothing.
        let head = try await store.log.lastPosition()
        let again = try await store.importFirebaseUsers(Self.users, parameters: Self.parameters)
        #expect(again.imported == 0)
        #expect(again.alreadyImported == 2)
        #expect(try await store.log.lastPosition() == head)
        // The Apple identity signs in to the imported account.
        let session = try await store.startSession(identity: apple, newUserId: nil, validity: .seconds(60))
        #expect(!session.created)
        #expect(session.details.accountId == Self.uid)
        await store.close()
        // The project's signer key is nowhere in the files.
        for file in ["log/data.mdb", "projections/data.mdb"] {
            let bytes = try Data(contentsOf: fixture.directory.appendingPathComponent(file))
            #expect(bytes.range(of: Data(Self.parameters.signerKey)) == nil, "\(file)")
        }
    }

    @Test("the first sign-in checks Firebase's hash and rehashes it as an event; later ones need no Firebase key")
    func signInRehashes() async throws {
        let fixture = StoreFixture()
        defer { fixture.cleanup() }
        var store = try await fixture.open { $0.firebaseHashParameters = Self.parameters }
        _ = try await store.importFirebaseUsers(Array(Self.users.prefix(1)), parameters: Self.parameters)
        await #expect(throws: AccountServiceError.wrongCredentials) { try await store.login(userId: "user1@example.org", password: "user1passwordX") }
        await store.settleBackgroundWrites()
        let details = try await store.login(userId: "user1@example.org", password: "user1password")
        #expect(details.accountId == Self.uid)
        await store.settleBackgroundWrites()
        let types = try await store.log.readStream(Self.uid, from: 1, limit: 10).map(\.type)
        #expect(types == ["account.created", "account.identity-linked", "auth.login-failed", "account.password-rehashed", "auth.login-succeeded"])
        let state = try #require(try await store.accounts.load(Self.uid))
        #expect(state.passwordHash?.hasPrefix("$scrypt$") == true)
        await store.close()

        // Rehashed: a store without the Firebase key signs the user in.
        store = try await fixture.open()
        _ = try await store.login(userId: "user1@example.org", password: "user1password")
        await store.close()
    }

    @Test("without the project's key, an imported password is refused as a wrong one, not a crash")
    func missingKey() async throws {
        let fixture = StoreFixture()
        defer { fixture.cleanup() }
        var store = try await fixture.open { $0.firebaseHashParameters = Self.parameters }
        _ = try await store.importFirebaseUsers(Array(Self.users.prefix(1)), parameters: Self.parameters)
        await store.close()
        store = try await fixture.open()
        await #expect(throws: AccountServiceError.wrongCredentials) { try await store.login(userId: "user1@example.org", password: "user1password") }
        let other = try FirebaseHashParameters(signerKey: Array(repeating: 7, count: 64), saltSeparator: [7], rounds: 8, memoryCost: 14)
        await store.close()
        store = try await fixture.open { $0.firebaseHashParameters = other }
        await #expect(throws: AccountServiceError.wrongCredentials) { try await store.login(userId: "user1@example.org", password: "user1password") }
        await store.close()
    }

    @Test("an export is read from Firebase's JSON, and a broken entry is named")
    func readExport() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("firebase-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let good = directory.appendingPathComponent("users.json")
        try Data(
            """
            {"users": [{"localId": "\(Self.uid)", "email": "user1@example.org", "emailVerified": true, "passwordHash": "\(Self.hash)",
              "salt": "\(Self.salt)", "lastSignedInAt": "1490000000000", "createdAt": "1480000000000",
              "providerUserInfo": [{"providerId": "apple.com", "rawId": "001234.abcd.0042", "email": "x@privaterelay.appleid.com"}]}]}
            """.utf8
        ).write(to: good)
        let users = try AccountStore.readFirebaseExport(from: good)
        #expect(users == [Array(Self.users.prefix(1))[0].withoutName])
        let bad = directory.appendingPathComponent("bad.json")
        try Data(#"{"users": [{"localId": "a"}, {"localId": "b", "email": 7}]}"#.utf8).write(to: bad)
        #expect {
            try AccountStore.readFirebaseExport(from: bad)
        } throws: { error in
            "\(error)".contains("user 2 (localId b)")
        }
    }
}

extension FirebaseUser {
    fileprivate var withoutName: FirebaseUser {
        var user = self
        user.displayName = nil
        user.providerUserInfo = user.providerUserInfo?.filter { $0.providerId != "password" }
        return user
    }
}
