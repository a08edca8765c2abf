//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import AccountSecurity
import Hummingbird
import SpeziAccountStore

/// `POST /v1/account/totp`: the current password (and the kind of code wanted).
struct TOTPEnrolBody: Decodable {
    let currentPassword: String?
    /// `SHA1` (the default), `SHA256` or `SHA512`.
    let algorithm: String?
    /// 6 (the default) or 8.
    let digits: Int?
}

/// `POST /v1/account/totp/confirm` and `DELETE /v1/account/totp`.
struct TOTPCodeBody: Decodable {
    /// A current code; to remove, a recovery code also does.
    let code: String
}

/// A TOTP enrolment, answered once.
struct TOTPEnrolmentBody: Encodable {
    let secret: String
    let uri: String
    let recoveryCodes: [String]
    let algorithm: String
    let digits: Int
    let period: Int

    init(_ enrolment: TOTPEnrolment) {
        secret = enrolment.secret
        uri = enrolment.uri
        recoveryCodes = enrolment.recoveryCodes
        algorithm = enrolment.algorithm.rawValue
        digits = enrolment.digits
        period = enrolment.period
    }
}

extension AccountRoutes {
    /// `POST /v1/account/totp`: enrols a TOTP second factor after checking the current password;
    /// answers the secret, its `otpauth://` URI and the recovery codes, once. Sign-in needs a code
    /// only once a first one confirmed the enrolment.
    func enrolTOTP(_ request: inout Request, _ session: SignedInAccount, client: String) async throws -> Response {
        let state = session.state
        let enrol = try await body(&request, as: TOTPEnrolBody.self)
        guard let algorithm = TOTP.Algorithm(rawValue: (enrol.algorithm ?? "SHA1").uppercased()) else {
            throw Problem.malformed("algorithm must be SHA1, SHA256 or SHA512")
        }
        let digits = enrol.digits ?? 6
        guard digits == 6 || digits == 8 else { throw Problem.malformed("digits must be 6 or 8") }
        // A confirmed factor is refused before the password is checked (the check costs a hash).
        if state.secondFactor?.isConfirmed == true { throw AccountStoreError.secondFactorEnrolled }
        try await reauthenticate(state, password: enrol.currentPassword, request: request, client: client)
        let enrolment = try await store.enrolTOTP(
            state.accountId, issuer: configuration.totpIssuer, algorithm: algorithm, digits: digits, context: context(request, actor: state.accountId)
        )
        logger.info("TOTP enrolled, waiting for its first code", metadata: ["account": "\(state.accountId)"])
        return try Self.json(TOTPEnrolmentBody(enrolment), status: .created)
    }

    /// `POST /v1/account/totp/confirm`: the first valid code confirms the enrolment.
    func confirmTOTP(_ request: inout Request, _ session: SignedInAccount) async throws -> Response {
        let state = session.state
        let confirmation = try await body(&request, as: TOTPCodeBody.self)
        try limit("step-up-account", state.accountId, configuration.rateLimits.stepUpsPerAccount)
        try await store.confirmTOTP(state.accountId, code: confirmation.code, context: context(request, actor: state.accountId))
        return Response(status: .noContent)
    }

    /// `DELETE /v1/account/totp`: removes the second factor, proven by a current code or a
    /// recovery code; wrong codes count in the login throttle.
    func removeTOTP(_ request: inout Request, _ session: SignedInAccount, client: String) async throws -> Response {
        let state = session.state
        let removal = try await body(&request, as: TOTPCodeBody.self)
        try limit("step-up-account", state.accountId, configuration.rateLimits.stepUpsPerAccount)
        try await store.removeTOTP(state.accountId, code: removal.code, context: context(request, actor: state.accountId, client: client))
        logger.info("TOTP removed", metadata: ["account": "\(state.accountId)"])
        return Response(status: .noContent)
    }
}
