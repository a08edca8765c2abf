//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import AccountSecurity
import Crypto
import EventLogProtocol
import Foundation

/// A new TOTP enrolment, handed out once: what the owner puts in an authenticator app, and the
/// recovery codes to keep. The store keeps the secret only sealed in the log, and the recovery
/// codes only as hashes.
public struct TOTPEnrolment: Sendable, Equatable {
    /// The shared secret in base32, for typing into an authenticator app.
    public let secret: String
    /// The `otpauth://` URI (for a QR code).
    public let uri: String
    /// The recovery codes, each usable once instead of a code.
    public let recoveryCodes: [String]
    /// The HMAC's hash function.
    public let algorithm: TOTP.Algorithm
    /// The code's length.
    public let digits: Int
    /// Seconds per code.
    public let period: Int
}

extension AccountStore {
    /// How many recovery codes an enrolment hands out.
    public static let recoveryCodeCount = 10

    /// Enrols a TOTP second factor (`auth.totp-enrolled`, sealed under the account's key): not
    /// required at sign-in until a first valid code confirms it (``confirmTOTP(_:code:context:)``).
    /// An enrolment not confirmed yet is replaced.
    ///
    /// - Parameters:
    ///   - accountId: The account.
    ///   - issuer: The name the authenticator app shows beside the account (the app's or service's).
    ///   - algorithm: The HMAC's hash function (SHA-1 by default, what every authenticator app reads).
    ///   - digits: 6 (the default) or 8.
    ///   - context: Who asks, recorded with the event.
    /// - Returns: The secret, its URI and the recovery codes: handed out only here.
    /// - Throws: ``AccountStoreError/secondFactorEnrolled`` when a confirmed one exists (remove it
    ///   first), ``AccountStoreError/accountNotFound(_:)``, `TOTP.InvalidParameters` for other digits.
    public func enrolTOTP(
        _ accountId: String, issuer: String, algorithm: TOTP.Algorithm = .sha1, digits: Int = 6, context: Context = Context()
    ) async throws -> TOTPEnrolment {
        let secret = TOTP.makeSecret(for: algorithm)
        let totp = try TOTP(secret: secret, algorithm: algorithm, digits: digits)
        let codes = (0..<Self.recoveryCodeCount).map { _ in Self.makeRecoveryCode() }
        let event = AccountEvent.totpEnrolled(
            secret: TOTP.base32(secret), algorithm: algorithm.rawValue, digits: UInt64(digits), period: UInt64(totp.period),
            recoveryCodeHashes: codes.map { Self.recoveryCodeHash($0, accountId: accountId) })
        var label = accountId
        let outcome = try await retrying(accountId) { state in
            if state.secondFactor?.isConfirmed == true { throw AccountStoreError.secondFactorEnrolled }
            label = state.userId.isEmpty ? accountId : state.userId
            return ([event], [], [])
        } context: {
            context
        }
        if let position = outcome.position { try await awaitCache(position) }
        return TOTPEnrolment(
            secret: TOTP.base32(secret), uri: totp.uri(issuer: issuer, account: label), recoveryCodes: codes, algorithm: algorithm,
            digits: digits, period: totp.period)
    }

    /// Confirms the enrolled TOTP with a first valid code (`auth.totp-confirmed`): from then on
    /// sign-in needs a code, and that code is used up.
    ///
    /// - Parameters:
    ///   - accountId: The account.
    ///   - code: A current code of the enrolled secret.
    ///   - context: Who asks, recorded with the event.
    /// - Throws: ``AccountStoreError/secondFactorNotEnrolled`` without an enrolment waiting for
    ///   confirmation, ``AccountStoreError/invalidSecondFactor`` for a wrong code.
    public func confirmTOTP(_ accountId: String, code: String, context: Context = Context()) async throws {
        guard let state = try await currentState(of: accountId), !state.isDeleted else { throw AccountStoreError.accountNotFound(accountId) }
        guard let factor = state.secondFactor, !factor.isConfirmed else { throw AccountStoreError.secondFactorNotEnrolled }
        let totp = try await enrolledTOTP(accountId, factor)
        guard let step = totp.step(matching: code, at: options.clock()) else { throw AccountStoreError.invalidSecondFactor }
        let outcome = try await retrying(accountId) { current in
            guard current.secondFactor?.enrolment == factor.enrolment, current.secondFactor?.isConfirmed == false else {
                throw AccountStoreError.secondFactorNotEnrolled
            }
            return ([.totpConfirmed(step: step)], [], [])
        } context: {
            context
        }
        if let position = outcome.position { try await awaitCache(position) }
    }

    /// Removes the TOTP second factor (`auth.totp-removed`), proven by a current code not used
    /// before or by an unused recovery code (which the same append uses up). Every check counts in
    /// the login throttle under the account's user id and `context`'s client, as a password check
    /// does: a wrong code counts as a failure.
    ///
    /// - Parameters:
    ///   - accountId: The account.
    ///   - code: A current code, or a recovery code.
    ///   - context: Who asks: its client is what the throttle counts under.
    /// - Throws: ``AccountStoreError/secondFactorNotEnrolled``, ``AccountStoreError/invalidSecondFactor``,
    ///   ``AccountStoreError/lockedOut(until:)``.
    public func removeTOTP(_ accountId: String, code: String, context: Context = Context()) async throws {
        guard let state = try await currentState(of: accountId), !state.isDeleted else { throw AccountStoreError.accountNotFound(accountId) }
        guard let factor = state.secondFactor else { throw AccountStoreError.secondFactorNotEnrolled }
        let ticket = try throttle.admit(
            userKey: AccountLog.normalizedUserId(state.userId.isEmpty ? accountId : state.userId), client: context.client ?? "",
            device: context.device, now: options.clock())
        var outcome = LoginThrottle.Outcome.abandoned
        defer { throttle.finish(ticket, outcome, now: options.clock()) }
        if ticket.delay > .zero { try await Task.sleep(for: ticket.delay) }
        guard let proof = try await secondFactorProof(code, accountId: accountId, factor: factor) else {
            outcome = .failed
            recordFailedLogin(accountId, context: context, reason: "wrongSecondFactor")
            throw AccountStoreError.invalidSecondFactor
        }
        outcome = .succeeded
        let reason: String
        switch proof {
        case .recoveryCodeUsed: reason = "recovery-code"
        default: reason = "code"
        }
        let result = try await retrying(accountId) { current in
            guard let now = current.secondFactor, now.enrolment == factor.enrolment, Self.proof(proof, holdsFor: now) else {
                throw AccountStoreError.invalidSecondFactor
            }
            return ([proof, .totpRemoved(reason: reason)], [], [])
        } context: {
            context
        }
        if let position = result.position { try await awaitCache(position) }
    }

    /// The event that uses up `code` (`auth.totp-used` with its step, or `auth.recovery-code-used`),
    /// or nil when it is no valid code of `factor`: wrong, of a step not after the last one used, a
    /// recovery code used already or never issued.
    func secondFactorProof(_ code: String, accountId: String, factor: AccountState.SecondFactor) async throws -> AccountEvent? {
        let compact = code.filter { !$0.isWhitespace }
        guard compact.utf8.count <= 64 else { return nil }
        if !compact.isEmpty, compact.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) {
            let totp = try await enrolledTOTP(accountId, factor)
            // A recovery code of digits only (one in about 20 million) is checked as a recovery code.
            if compact.utf8.count == totp.digits {
                guard let step = totp.step(matching: compact, at: options.clock()), step > factor.lastStep else { return nil }
                return .totpUsed(step: step)
            }
        }
        let hash = Self.recoveryCodeHash(compact, accountId: accountId)
        return factor.recoveryCodes.contains(hash) ? .recoveryCodeUsed(codeHash: hash) : nil
    }

    /// Whether `proof` (from ``secondFactorProof(_:accountId:factor:)``) still holds for the
    /// factor as it is now: no code of its step or later used since, its recovery code still unused.
    static func proof(_ proof: AccountEvent, holdsFor factor: AccountState.SecondFactor) -> Bool {
        switch proof {
        case let .totpUsed(step): step > factor.lastStep
        case let .recoveryCodeUsed(hash): factor.recoveryCodes.contains(hash)
        default: false
        }
    }

    /// The enrolled TOTP, read from its sealed `auth.totp-enrolled` record.
    func enrolledTOTP(_ accountId: String, _ factor: AccountState.SecondFactor) async throws -> TOTP {
        let record = try await log.readStream(accountId, from: factor.enrolment, limit: 1).first
        guard let record, record.streamVersion == factor.enrolment,
            case let .totpEnrolled(secret, algorithmName, digits, period, _) = try accounts.event(from: record),
            let bytes = TOTP.bytes(base32: secret), let algorithm = TOTP.Algorithm(rawValue: algorithmName)
        else {
            Self.logger.error("the TOTP enrolment cannot be read", metadata: ["account": "\(accountId)", "version": "\(factor.enrolment)"])
            throw AccountStoreError.secondFactorNotEnrolled
        }
        return try TOTP(secret: bytes, algorithm: algorithm, digits: Int(clamping: digits), period: Int(clamping: period))
    }

    /// A recovery code: ten characters of base32 (50 bits) in two groups, `ABCDE-FGHIJ`.
    static func makeRecoveryCode() -> String {
        let text = TOTP.base32(TOTP.makeSecret(for: .sha1))
        return "\(text.prefix(5))-\(text.dropFirst(5).prefix(5))"
    }

    /// The hash a recovery code is stored as: SHA-256 (hex) over a label, the account id and the
    /// code without dashes or spaces, in upper case (so that the same code typed either way
    /// matches, and equal codes of two accounts do not).
    ///
    /// - Parameters:
    ///   - code: The code as typed.
    ///   - accountId: The account it belongs to.
    /// - Returns: The hash, lower-case hex.
    public static func recoveryCodeHash(_ code: String, accountId: String) -> String {
        let normalized = code.uppercased().filter { $0 != "-" && !$0.isWhitespace }
        return BearerSecret.hash(bytes: Array("spezi-recovery-code\u{0}\(accountId)\u{0}\(normalized)".utf8))
    }
}
