//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLogProtocol
import Foundation
import SpeziAccount
import SpeziAccountStore
import TestSupport

/// The store as the crash test opens it: durable appends, cheap password hashing (the test is about
/// durability, not hashing cost).
/// With a shared `log` URL the store's folder keeps this node's projections; the key vault is the
/// log's, in PostgreSQL, shared by every node.
/// `catchUp` is the records per transaction of a projection far behind the log (a rebuild); from
/// 8,192 on a rebuild reads each of them in two parts at once.
func openStore(_ directory: String, log: String? = nil, sync: Durability = .durable, catchUp: Int = 512) async throws -> AccountStore {
    var options = AccountStoreOptions()
    options.sync = sync
    options.logLocation = log
    options.passwordParameters = ScryptParameters(logN: 4, blockSize: 1, parallelism: 1)
    options.allowWeakPasswordParameters = true
    // Small batches, so that the rounds' few thousand records make the projections catch up in
    // several large transactions (a rebuild, or a process behind the others), and kills land in them.
    options.projections.batchSize = 64
    options.projections.catchUpBatchSize = catchUp
    return try await AccountStore(directory: directory, options: options)
}

/// The child's work: signups, modifications and deletions from several tasks until it is killed.
/// After each operation returns it appends `<correlation id> <kind> <account id>` to the ack file:
/// the operation was acknowledged, so its events must survive any crash from then on.
struct ChildWorkload {
    let directory: String
    let ackPath: String
    let seed: UInt64
    let writers: Int
    /// This process's share of the accounts when several processes run: writer `w` of process
    /// `slot` takes the accounts whose id hashes to `slot * writers + w` modulo `slots * writers`.
    var slot = 0
    var slots = 1
    /// A shared log URL, or nil for the store's own.
    var log: String?
    /// How the store flushes its appends.
    var sync: Durability = .durable

    func run() async throws -> Never {
        let store = try await openStore(directory, log: log, sync: sync)
        let acks = try AckFile(path: ackPath)
        // The live accounts as the harness found them after the last round (not this process's
        // cache, which may already show accounts another process of this round created).
        let known: [(id: String, userId: String)] =
            (try? String(contentsOfFile: directory + "/live.txt", encoding: .utf8))
            .map { text in
                text.split(separator: "\n").compactMap { line in
                    let fields = line.split(separator: " ")
                    return fields.count == 2 ? (String(fields[0]), String(fields[1])) : nil
                }
            } ?? []
        let shares = writers * slots
        try await withThrowingTaskGroup(of: Void.self) { group in
            for writer in 0..<writers {
                group.addTask {
                    var random = SplitMix64(seed: seed &* 31 &+ UInt64(writer))
                    let share = slot * writers + writer
                    // By a hash of the id, so that every process draws the same lines whatever its cache shows.
                    var mine = known.filter { Int(stableHash($0.id) % UInt64(shares)) == share }
                    var step = 0
                    while true {
                        step += 1
                        let correlation = "c\(seed)-\(writer)-\(step)"
                        let context = AccountStore.Context(actor: "crash-test", correlationID: correlation)
                        let dice = random.next() % 100
                        if mine.isEmpty || dice < 40 {
                            var details = AccountDetails()
                            let userId = "u\(seed)-\(writer)-\(step)@example.org"
                            details.userId = userId
                            details.password = "crash-test-\(step)"
                            details.name = PersonNameComponents(givenName: "Writer \(writer)", familyName: "Step \(step)")
                            let id = try await store.signup(details, context: context).accountId
                            mine.append((id, userId))
                            acks.write("\(correlation) signup \(id)")
                        } else if dice < 50 {
                            // A wrong password: the failure is an event, appended after the answer
                            // (acknowledged once it is written); a refusal by the lockout is not.
                            let (id, userId) = mine[Int(random.next() % UInt64(mine.count))]
                            do {
                                _ = try await store.login(userId: userId, password: "wrong", context: context)
                            } catch AccountServiceError.wrongCredentials {
                                await store.settleBackgroundWrites()
                                acks.write("\(correlation) login \(id)")
                            } catch AccountStoreError.lockedOut {}
                        } else if dice < 85 {
                            let id = mine[Int(random.next() % UInt64(mine.count))].id
                            var change = AccountDetails()
                            change.name = PersonNameComponents(givenName: "Changed \(step)", familyName: "Writer \(writer)")
                            change.genderIdentity = .preferNotToState
                            try await store.modify(id, try AccountModifications(modifiedDetails: change), context: context)
                            acks.write("\(correlation) modify \(id)")
                        } else {
                            let index = Int(random.next() % UInt64(mine.count))
                            let id = mine.remove(at: index).id
                            try await store.delete(id, context: context)
                            acks.write("\(correlation) delete \(id)")
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        fatalError("the workload ends only when the process is killed")
    }
}

/// An append-only file of acknowledgement lines; each line goes out in one `write`, so a kill
/// leaves at most one partial last line (which the parent ignores).
final class AckFile: Sendable {
    let descriptor: Int32

    init(path: String) throws {
        descriptor = open(path, O_WRONLY | O_CREAT | O_APPEND, 0o644)
        guard descriptor >= 0 else { throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: path]) }
    }

    func write(_ line: String) {
        let bytes = Array((line + "\n").utf8)
        _ = bytes.withUnsafeBytes { Foundation.write(descriptor, $0.baseAddress, $0.count) }
    }
}

/// FNV-1a of the id's bytes: the same in every process (Swift's `hashValue` is seeded per process).
func stableHash(_ text: String) -> UInt64 {
    text.utf8.reduce(0xCBF2_9CE4_8422_2325) { ($0 ^ UInt64($1)) &* 0x0000_0100_0000_01B3 }
}
