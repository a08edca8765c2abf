//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
import Spezi
import SpeziAccount

// The seeds' non-UI code samples, compiled nearly verbatim.

/// "Implementing an Account Service": the minimal service.
public actor MyAccountService: AccountService {
    public let configuration = AccountServiceConfiguration(supportedKeys: .arbitrary)

    @Dependency(Account.self)
    private var account
    @Dependency(AccountNotifications.self)
    private var notifications

    public init() {}

    public func logout() async throws {
        // remove local account association
        await account.removeUserDetails()
    }

    public func delete() async throws {
        guard let details = account.details else {
            return
        }
        // delete account details ...

        // emitting the event is mandatory
        try await notifications.reportEvent(.deletingAccount(details.accountId))

        await account.removeUserDetails()
    }

    public func updateAccountDetails(_ modifications: AccountModifications) async throws {
        // update account details
        guard let details = account.details else {
            return
        }
        // call account.supplyUserDetails(_:) with updated account details
        try await account.supplyUserDetails(modifications.applied(to: details))
    }
}

/// "Implementing an Account Service": the configuration sample.
let seedServiceConfiguration = AccountServiceConfiguration(supportedKeys: .arbitrary) {
    UserIdConfiguration.emailAddress  // userId key has an "email" label and uses the email keyboard

    RequiredAccountKeys {
        \.userId
        \.password
    }
}

/// "External Storage of Account Details": the provider sample, with a body, recording its calls.
public actor MyProvider: AccountStorageProvider {
    @Dependency(ExternalAccountStorage.self)
    private var storage

    let log: EventLog
    let failDelete: Bool
    private var records: [String: AccountDetails] = [:]

    init(log: EventLog, failDelete: Bool = false) {
        self.log = log
        self.failDelete = failDelete
    }

    public func create(_ accountId: String, _ details: AccountDetails) async throws {
        // handle creation of a new record
        log.append("provider: create")
        try await modify(accountId, AccountModifications(modifiedDetails: details))
    }

    public func load(_ accountId: String, _ keys: [any AccountKey.Type]) async throws -> AccountDetails? {
        log.append("provider: load")
        return records[accountId]?.filtered(to: keys) ?? AccountDetails()
    }

    public func modify(_ accountId: String, _ modifications: AccountModifications) async throws {
        log.append("provider: modify")
        records[accountId] = modifications.applied(to: records[accountId] ?? AccountDetails())
    }

    public func disassociate(_ accountId: String) async {
        log.append("provider: disassociate")
    }

    public func delete(_ accountId: String) async throws {
        log.append("provider: delete")
        if failDelete {
            throw AccountServiceError.internalError
        }
        records[accountId] = nil
    }

    func record(_ accountId: String) -> AccountDetails? {
        records[accountId]
    }
}

/// A service that claims a supported-keys set without accountId (a configuration error).
actor NoAccountIdService: AccountService {
    let configuration = AccountServiceConfiguration(supportedKeys: .exactly([AccountDetails.__Key_userId.self]))

    func logout() async throws {}
    func delete() async throws {}
    func updateAccountDetails(_ modifications: AccountModifications) async throws {}
}
