//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import AccountSecurity
import EventLogProtocol
import Foundation
import SpeziAccount

/// One user of a Firebase Authentication export (`firebase auth:export users.json`); the fields
/// this store takes over, the others are ignored.
public struct FirebaseUser: Decodable, Sendable, Equatable {
    /// A sign-in method of the user (`providerUserInfo`).
    public struct Provider: Decodable, Sendable, Equatable {
        /// `password`, `apple.com`, `google.com`, `phone`, …
        public var providerId: String
        /// The user's id at that provider (the `sub` of its identity tokens).
        public var rawId: String?

        /// A provider entry.
        ///
        /// - Parameters:
        ///   - providerId: The provider (`apple.com`, say).
        ///   - rawId: The user's id there.
        public init(providerId: String, rawId: String?) {
            self.providerId = providerId
            self.rawId = rawId
        }
    }

    /// Firebase's UID: kept as the account id.
    public var localId: String
    /// The e-mail address: the user id.
    public var email: String?
    /// The base64 password hash, made with the project's modified scrypt.
    public var passwordHash: String?
    /// The base64 salt of that hash.
    public var salt: String?
    /// The display name: the account's name (split at its last space into given and family name).
    public var displayName: String?
    /// Whether Firebase has disabled the user: such users are not imported.
    public var disabled: Bool?
    /// The sign-in methods: Apple and Google identities are linked.
    public var providerUserInfo: [Provider]?

    /// A user.
    ///
    /// - Parameters:
    ///   - localId: The UID.
    ///   - email: The e-mail address.
    ///   - passwordHash: The base64 hash.
    ///   - salt: The base64 salt.
    ///   - displayName: The display name.
    ///   - disabled: Whether Firebase disabled the user.
    ///   - providerUserInfo: The sign-in methods.
    public init(
        localId: String, email: String? = nil, passwordHash: String? = nil, salt: String? = nil, displayName: String? = nil,
        disabled: Bool? = nil, providerUserInfo: [Provider]? = nil
    ) {
        self.localId = localId
        self.email = email
        self.passwordHash = passwordHash
        self.salt = salt
        self.displayName = displayName
        self.disabled = disabled
        self.providerUserInfo = providerUserInfo
    }
}

/// What ``AccountStore/importFirebaseUsers(_:parameters:context:progress:)`` did with each user.
public struct FirebaseImportReport: Sendable, Equatable {
    /// Users imported as new accounts.
    public var imported = 0
    /// Users whose UID is an account here already (a repeated import): left as they are.
    public var alreadyImported = 0
    /// Users not imported, with the reason, by UID.
    public var skipped: [(uid: String, reason: String)] = []

    public static func == (lhs: FirebaseImportReport, rhs: FirebaseImportReport) -> Bool {
        lhs.imported == rhs.imported && lhs.alreadyImported == rhs.alreadyImported
            && lhs.skipped.map(\.uid) == rhs.skipped.map(\.uid) && lhs.skipped.map(\.reason) == rhs.skipped.map(\.reason)
    }
}

extension AccountStore {
    /// The issuers of the Firebase providers whose identities are linked on import.
    public static let firebaseProviderIssuers = ["apple.com": "https://appleid.apple.com", "google.com": "https://accounts.google.com"]

    /// Reads a Firebase Authentication export (`{"users": [...]}`).
    ///
    /// - Parameter url: The file `firebase auth:export --format=json` wrote.
    /// - Returns: Its users.
    /// - Throws: `AccountStoreError.storeTransfer` naming the user (by position and UID) whose entry is not one.
    public static func readFirebaseExport(from url: URL) throws -> [FirebaseUser] {
        let data: Data
        do {
            data = try Data(contentsOf: url)
        } catch {
            throw AccountStoreError.storeTransfer("cannot read \(url.path): \(error.localizedDescription)")
        }
        guard let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any], let users = object["users"] as? [Any] else {
            throw AccountStoreError.storeTransfer("\(url.path) is not a Firebase export: expected {\"users\": [...]}")
        }
        let decoder = JSONDecoder()
        return try users.enumerated().map { index, entry in
            let uid = (entry as? [String: Any])?["localId"] as? String ?? "?"
            do {
                return try decoder.decode(FirebaseUser.self, from: JSONSerialization.data(withJSONObject: entry))
            } catch {
                throw AccountStoreError.storeTransfer("user \(index + 1) (localId \(uid)): \(error)")
            }
        }
    }

    /// Imports users exported from Firebase Authentication as new accounts: each UID becomes the
    /// account id, the e-mail address the user id, the password hash a `$firebase-scrypt$` hash
    /// (checked with ``AccountStoreOptions/firebaseHashParameters`` and rehashed with Argon2id as
    /// `account.password-rehashed` on its first sign-in), and Apple and Google sign-ins linked
    /// identities. Each account is one `account.created` (and its `account.identity-linked`s),
    /// claiming its user id and identities as a signup does.
    ///
    /// Running it again skips the users imported already. Users without a way in (no password, no
    /// Apple or Google sign-in), disabled ones, and those whose UID, e-mail address or identity is
    /// taken or not accepted here are skipped and reported with the reason.
    ///
    /// - Parameters:
    ///   - users: The export's users (``readFirebaseExport(from:)``).
    ///   - parameters: The project's hash parameters: needed when any user has a password.
    ///   - context: Who imports, recorded with the events.
    ///   - progress: Called with the number of users done so far and the total.
    /// - Returns: What was imported and skipped.
    /// - Throws: Errors of the log; a user's own problem is a skip, not an error.
    public func importFirebaseUsers(
        _ users: [FirebaseUser], parameters: FirebaseHashParameters?, context: Context = Context(),
        progress: (@Sendable (Int, Int) -> Void)? = nil
    ) async throws -> FirebaseImportReport {
        var report = FirebaseImportReport()
        for (index, user) in users.enumerated() {
            defer { progress?(index + 1, users.count) }
            do {
                if try await importFirebaseUser(user, parameters: parameters, context: context) {
                    report.imported += 1
                } else {
                    report.alreadyImported += 1
                }
            } catch let skip as FirebaseSkip {
                report.skipped.append((user.localId, skip.reason))
            }
        }
        return report
    }

    /// Why one user is not imported.
    struct FirebaseSkip: Error {
        let reason: String
    }

    /// Imports one user; false when its UID is an account already.
    private func importFirebaseUser(_ user: FirebaseUser, parameters: FirebaseHashParameters?, context: Context) async throws -> Bool {
        let accountId = user.localId
        guard (1...KeyVault.maxAccountIdBytes).contains(accountId.utf8.count),
            accountId.unicodeScalars.allSatisfy({ $0.isASCII && (CharacterSet.alphanumerics.contains($0) || "-_".unicodeScalars.contains($0)) })
        else {
            throw FirebaseSkip(reason: "the UID is not 1–\(KeyVault.maxAccountIdBytes) letters, digits, '-' or '_'")
        }
        if user.disabled == true { throw FirebaseSkip(reason: "disabled in Firebase") }
        if try await accounts.load(accountId) != nil { return false }
        var passwordHash: String?
        if let hash = user.passwordHash, !hash.isEmpty {
            guard let parameters else { throw FirebaseSkip(reason: "has a password, but no hash parameters were given") }
            do {
                passwordHash = try FirebaseScrypt.storedHash(passwordHash: hash, salt: user.salt ?? "", parameters: parameters)
            } catch {
                throw FirebaseSkip(reason: "\(error)")
            }
        }
        let identities = (user.providerUserInfo ?? []).compactMap { provider -> LinkedIdentity? in
            guard let issuer = Self.firebaseProviderIssuers[provider.providerId], let subject = provider.rawId, !subject.isEmpty else { return nil }
            return LinkedIdentity(issuer: issuer, subject: subject)
        }
        guard passwordHash != nil || !identities.isEmpty else {
            throw FirebaseSkip(reason: "no way in this store offers (no password, no Apple or Google sign-in)")
        }
        let userId = user.email ?? ""
        if passwordHash != nil, userId.isEmpty { throw FirebaseSkip(reason: "has a password but no e-mail address") }
        var claims = Set(identities.map { accounts.identityClaim(issuer: $0.issuer, subject: $0.subject) })
        if !userId.isEmpty {
            do {
                try Self.checkUserId(userId)
            } catch {
                throw FirebaseSkip(reason: "the e-mail address is not accepted: \(error)")
            }
            let holder = try await accounts.accountId(forUserId: userId)
            let legacyHolder = try await accounts.legacyHolder(ofUserId: userId, other: accountId)
            let lookAlike = try await lookAlikeHolder(ofUserId: userId, other: accountId)
            if (holder != nil && holder != accountId) || legacyHolder != nil || lookAlike != nil {
                throw FirebaseSkip(reason: "the e-mail address (or one that looks alike) belongs to another account")
            }
            claims.formUnion(accounts.newClaims(forUserId: userId))
        }
        var values: EncodedAccountValues = [:]
        if let name = user.displayName?.trimmingCharacters(in: .whitespacesAndNewlines), !name.isEmpty,
            serviceConfiguration.supportedKeys.canStore(AccountDetails.__Key_name.self)
        {
            var details = AccountDetails()
            var components = PersonNameComponents()
            if let space = name.lastIndex(of: " ") {
                components.givenName = String(name[..<space]).trimmingCharacters(in: .whitespaces)
                components.familyName = String(name[name.index(after: space)...])
            } else {
                components.givenName = name
            }
            details.name = components
            do {
                values = try loggedValues(details)
            } catch {
                throw FirebaseSkip(reason: "the display name is not accepted: \(error)")
            }
        }
        let events: [AccountEvent] =
            [.accountCreated(userId: userId, passwordHash: passwordHash, isAnonymous: false, values: values)]
            + identities.sorted().map { .identityLinked(issuer: $0.issuer, subject: $0.subject) }
        do {
            let result = try await accounts.append(
                events, to: accountId, expectedVersion: .noStream, metadata: context.metadata, claims: claims, releases: [])
            try await awaitCache(result.positions.upperBound)
            return true
        } catch EventLogError.wrongExpectedVersion {
            return false
        } catch EventLogError.claimTaken {
            throw FirebaseSkip(reason: "its e-mail address or an identity belongs to another account")
        }
    }
}
