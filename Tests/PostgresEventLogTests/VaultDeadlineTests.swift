//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLogProtocol
import Foundation
import PostgresEventLog
import TestSupport
import TestTiers
import Testing

/// Every wait of the key vault on PostgreSQL has a deadline: a call the server does not answer
/// fails with a timeout (a transient failure) instead of holding the vault's thread for ever.
@Suite("The key vault on PostgreSQL: every wait has a deadline", .timeLimit(.minutes(3)), .integration)
struct VaultDeadlineTests {
    /// The vault's deadline in these tests, and the most a failed call may take beyond it.
    private static let deadline = Duration.seconds(2)
    private static let margin = Duration.seconds(3)

    @Test("a lock another connection holds: withLock(exclusive:) fails with a timeout within its deadline; the next call works once it is free")
    func lockHeldElsewhere() async throws {
        let server = try await PostgresServer.start(name: "vault-lock")
        defer { server.remove() }
        let vault = try await Self.vault(on: server, schema: "vault_lock")

        // Another session holds the vault's advisory lock in an open transaction.
        let holder = Task {
            try? await server.psql(
                "BEGIN; SELECT pg_advisory_xact_lock(hashtext('spezi-key-vault:vault_lock')); SELECT pg_sleep(120); COMMIT")
        }
        defer { holder.cancel() }
        let held = ContinuousClock.now + .seconds(30)
        while try await server.psql("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted").trimmed != "1" {
            try #require(ContinuousClock.now < held, "the other session did not take the lock")
            try await Task.sleep(for: .milliseconds(50))
        }

        let started = ContinuousClock.now
        let outcome = try await offThePool { Result { try vault.withLock(exclusive: true) { 1 } } }
        let took = ContinuousClock.now - started
        print("vault deadline: withLock(exclusive:) behind a held lock failed after \(took) (deadline \(Self.deadline))")
        Self.expectTimeout(outcome, took: took)
        #expect(took >= Self.deadline, "the call failed before its deadline: \(took)")

        // The holder goes; the vault connects again and takes the lock.
        _ = try await server.psql(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE '%pg_sleep(120)%' AND pid <> pg_backend_pid()")
        let value = try await offThePool { try vault.withLock(exclusive: true) { 42 } }
        #expect(value == 42)
        #expect(try await offThePool { try vault.readHeader() }.count == 64)
        vault.release()
    }

    @Test("a paused server (SIGSTOP): a query on the open connection and a new connection's handshake each fail with a timeout within the deadline")
    func pausedServer() async throws {
        let server = try await PostgresServer.start(name: "vault-stop")
        defer { server.remove() }
        let vault = try await Self.vault(on: server, schema: "vault_stop")
        // The vault has an open connection now (a backend process of the server).
        #expect(try await offThePool { try vault.readHeader() }.count == 64)

        let paused = try server.processes()
        try #require(paused.count >= 2, "the postmaster and its backends: \(paused)")
        for pid in paused { kill(pid, SIGSTOP) }
        var resumed = false
        defer { if !resumed { for pid in paused { kill(pid, SIGCONT) } } }

        // A query on the open connection: the backend never answers.
        var started = ContinuousClock.now
        let query = try await offThePool { Result { try vault.readSlots(from: 0) } }
        var took = ContinuousClock.now - started
        print("vault deadline: a query to a paused server failed after \(took)")
        Self.expectTimeout(query, took: took)

        // The failed query dropped the connection: the next call connects, and the paused
        // postmaster never answers the startup packet (the kernel accepted the TCP connection).
        started = ContinuousClock.now
        let connect = try await offThePool { Result { try vault.withLock(exclusive: false) { 1 } } }
        took = ContinuousClock.now - started
        print("vault deadline: connecting to a paused server failed after \(took)")
        Self.expectTimeout(connect, took: took)
        if case let .failure(error) = connect { #expect("\(error)".contains("did not connect within"), "\(error)") }

        for pid in paused { kill(pid, SIGCONT) }
        resumed = true
        // Resumed, the server answers again: the next call connects anew.
        let again = ContinuousClock.now + .seconds(30)
        var answered = false
        while !answered && ContinuousClock.now < again {
            answered = (try? await offThePool { try vault.withLock(exclusive: true) { try vault.readHeader() } }.count) == 64
        }
        #expect(answered, "the vault did not work again after the server was resumed")
        vault.release()
    }

    /// A vault in a schema of its own on `server`, with the test's short deadline.
    private static func vault(on server: PostgresServer, schema: String) async throws -> PostgresVaultStorage {
        _ = try await server.psql("CREATE SCHEMA \(schema)")
        let location = try PostgresLogLocation(url: server.url(schema: schema))
        return try await offThePool {
            try PostgresVaultStorage(location: location, create: [UInt8](repeating: 7, count: 64), timeout: deadline)
        }
    }

    /// The call failed with the vault's timeout, a transient failure, within the deadline and
    /// its margin.
    private static func expectTimeout<T>(_ outcome: Result<T, any Error>, took: Duration, sourceLocation: SourceLocation = #_sourceLocation) {
        guard case let .failure(error) = outcome else {
            Issue.record("the call did not fail", sourceLocation: sourceLocation)
            return
        }
        guard let vaultError = error as? PostgresVaultError, case .timedOut = vaultError else {
            Issue.record("not a timeout: \(error)", sourceLocation: sourceLocation)
            return
        }
        #expect("\(vaultError)".contains("timed out"), sourceLocation: sourceLocation)
        #expect(isTransientFailure(vaultError), sourceLocation: sourceLocation)
        #expect(took < deadline + margin, "the call took \(took), past its deadline \(deadline) and margin", sourceLocation: sourceLocation)
    }
}

extension String {
    fileprivate var trimmed: String { trimmingCharacters(in: .whitespacesAndNewlines) }
}
