//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import ArgumentParser
import EventLogProtocol
import Foundation
import SpeziAccount
import SpeziAccountStore

/// `accountctl demo`: the store end to end, on fresh user ids each run.
struct Demo: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Sign up, modify and delete accounts, print a history, rebuild the cache and verify the log.",
        discussion: "Creates the store when it is missing. Each run uses new user ids, so it can run again on the same store."
    )

    @OptionGroup var global: GlobalOptions

    func run() async throws {
        try await guarded {
            try await global.withStore(creating: true) { store in
                try await Self.demo(on: store)
            }
        }
    }

    static func demo(on store: AccountStore) async throws {
        let tag = String(UUID().uuidString.prefix(6)).lowercased()
        let context = AccountStore.Context(actor: "accountctl demo", correlationID: "demo-\(tag)")
        print("demo run \(tag) on \(store.directory)")

        var ids: [String] = []
        for (given, family) in [("Ada", "Lovelace"), ("Grace", "Hopper"), ("Alan", "Turing")] {
            var details = AccountDetails()
            details.userId = "\(given.lowercased())-\(tag)@example.org"
            details.password = "correct horse battery staple"
            details.name = PersonNameComponents(givenName: given, familyName: family)
            let created = try await store.signup(details, context: context)
            ids.append(created.accountId)
            print("signed up \(details.userId) as \(created.accountId)")
        }

        var adaChange = AccountDetails()
        adaChange.name = PersonNameComponents(givenName: "Augusta Ada", familyName: "King")
        adaChange.genderIdentity = .female
        try await store.modify(ids[0], AccountModifications(modifiedDetails: adaChange), context: context)
        print("modified \(ids[0]): name, gender identity")

        var graceChange = AccountDetails()
        graceChange.userId = "grace.hopper-\(tag)@example.org"
        try await store.modify(ids[1], AccountModifications(modifiedDetails: graceChange), context: context)
        print("modified \(ids[1]): user id → \(graceChange.userId)")

        try await store.delete(ids[2], context: context)
        print("deleted \(ids[2])")

        for accountId in ids {
            print("")
            await print(try HistoryPrinter.lines(of: accountId, in: store).joined(separator: "\n"))
        }
        print("")

        let bar = ProgressBar("rebuilding \(AccountDetailsProjection.projectionName)")
        try await store.projections.rebuild(AccountDetailsProjection.projectionName) { done, total in bar.update(done, of: total) }
        bar.finish()
        print("rebuilt \(AccountDetailsProjection.projectionName)")

        let report = try await store.log.verify()
        if let problem = report.problem {
            throw VerifyFailure(problem: problem)
        }
        print("log intact: \(report.recordsChecked) records, head hash \(report.headHash)")
        print("store: \(store.directory)")
    }
}

/// `verify` found a damaged log: exit status 1, with the position.
struct VerifyFailure: Error, CustomStringConvertible {
    let problem: IntegrityProblem

    var description: String { "the log is damaged at position \(problem.position): \(problem.detail)" }
}
