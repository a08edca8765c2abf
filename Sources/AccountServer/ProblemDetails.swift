//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLogProtocol
import Foundation
import Hummingbird
import SpeziAccount
import SpeziAccountStore

/// An error answer as RFC 9457 problem details (`application/problem+json`). Each kind of failure
/// has a stable `type`: `urn:spezi-account-store:problem:<slug>`.
struct Problem: Error, Encodable {
    let type: String
    let title: String
    let status: Int
    let detail: String?
    /// Seconds to wait (429 and 503 answers); sent as `Retry-After`, not in the body.
    let retryAfter: Int?

    init(_ slug: String, _ status: HTTPResponse.Status, _ title: String, detail: String? = nil, retryAfter: Int? = nil) {
        self.type = "urn:spezi-account-store:problem:\(slug)"
        self.title = title
        self.status = status.code
        self.detail = detail
        self.retryAfter = retryAfter
    }

    enum CodingKeys: String, CodingKey { case type, title, status, detail, instance, requestId }

    /// The members of RFC 9457, and the id of the request (``RequestIdentity``) twice: as the
    /// problem's `instance` (a URN) and as `requestId`.
    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(type, forKey: .type)
        try container.encode(title, forKey: .title)
        try container.encode(status, forKey: .status)
        try container.encodeIfPresent(detail, forKey: .detail)
        if let requestID = RequestIdentity.current {
            try container.encode("urn:spezi-account-store:request:\(requestID)", forKey: .instance)
            try container.encode(requestID, forKey: .requestId)
        }
    }

    static func malformed(_ detail: String) -> Problem {
        Problem("malformed-request", .badRequest, "The request body is not what this operation takes.", detail: detail)
    }

    static let unauthenticated = Problem(
        "invalid-session", .unauthorized, "Sign in: the bearer token is missing, invalid or expired.")

    static let reauthenticationRequired = Problem(
        "reauthentication-required", .forbidden,
        "This change needs the account's current password (currentPassword).")

    static func bodyTooLarge(_ limit: Int) -> Problem {
        Problem("body-too-large", .contentTooLarge, "The request body is too large.", detail: "at most \(limit) bytes are accepted")
    }

    static let notFound = Problem("not-found", .notFound, "No such operation.")

    static let signupConfirmationOff = Problem(
        "signup-confirmation-off", .notFound, "This server does not confirm signups: POST /v1/accounts signs up at once.")

    static func rateLimited(retryAfter: Int) -> Problem {
        Problem("rate-limited", .tooManyRequests, "Too many requests: wait before trying again.", retryAfter: retryAfter)
    }

    static let internalError = Problem("internal-error", .internalServerError, "The server failed; the failure is in its log.")

    /// The answer for an error thrown by the store, or nil for one that is not the client's doing.
    /// `now` is the store's clock, which a lockout's end is on.
    static func from(_ error: any Error, now: Date = Date()) -> Problem? {
        switch error {
        case let problem as Problem:
            return problem
        case let error as AccountServiceError:
            switch error {
            case .wrongCredentials: return Problem("wrong-credentials", .unauthorized, "The user id or the password is wrong.")
            case .credentialsTaken: return Problem("credentials-taken", .conflict, "This user id is taken.")
            case .notSignedIn: return unauthenticated
            case .cancelled, .internalError: return nil
            }
        case let error as AccountOperationError:
            return Problem(slug(of: error), .unprocessableContent, "The account details break the service's rules.", detail: error.description)
        case let error as AccountStoreError:
            return from(error, now: now)
        case let error as DecodingError:
            return malformed(describe(error))
        case let error where isTransientFailure(error):
            // The log or the vault is out for now (a restart of its server): a write may have been
            // done before its answer was lost, so this is no "failed"; a keyed retry tells.
            return Problem(
                "storage-unavailable", .serviceUnavailable,
                "The store cannot reach its log right now. A change may have been done: repeat it with the same Idempotency-Key to learn.",
                retryAfter: 2)
        default:
            return nil
        }
    }

    private static func from(_ error: AccountStoreError, now: Date) -> Problem? {
        switch error {
        case .invalidSession, .accountNotFound:
            return unauthenticated
        case .unsupportedKeys, .valueTooLarge, .tooManyKeys:
            return Problem("invalid-details", .unprocessableContent, "The account details break the service's rules.", detail: error.description)
        case .notAnonymous:
            return Problem("not-anonymous", .conflict, "Only an anonymous account can be upgraded.")
        case let .lockedOut(until):
            let wait = max(1, Int(until.timeIntervalSince(now).rounded(.up)))
            return Problem("locked-out", .tooManyRequests, "Too many failed logins: wait before trying again.", retryAfter: wait)
        case let .changeLimitReached(limit, until):
            let wait = max(1, Int(until.timeIntervalSince(now).rounded(.up)))
            return Problem(
                "change-limit", .tooManyRequests, "The account made as many changes as it may for now; nothing was written.",
                detail: "limit: \(limit)", retryAfter: wait)
        case .tooMuchContention:
            return Problem("contention", .serviceUnavailable, "The account kept changing; nothing was written. Try again.", retryAfter: 1)
        case let .overloaded(seconds):
            return Problem(
                "overloaded", .serviceUnavailable, "Too many password checks are waiting; nothing was done. Try again.", retryAfter: seconds)
        case .invalidPasswordResetToken:
            return Problem("invalid-reset-token", .badRequest, "The password reset token is invalid, used or expired.")
        case .invalidSignupToken:
            return Problem("invalid-signup-token", .badRequest, "The signup confirmation token is invalid, used or expired.")
        case .identityTaken:
            return Problem("identity-taken", .conflict, "This sign-in is linked to another account.")
        case .identityOfIssuerLinked:
            return Problem("identity-of-provider-linked", .conflict, "The account has a sign-in of this provider linked already.")
        case .identityNotLinked:
            return Problem("identity-not-linked", .notFound, "The account has no sign-in of this provider linked.")
        case .lastWayIn:
            return Problem(
                "last-way-in", .conflict, "This is the account's only way in; set a password or link another sign-in first.")
        case .secondFactorRequired:
            return Problem(
                "totp-required", .unauthorized, "This account signs in with a second factor: send a current TOTP code or a recovery code as totp.")
        case .invalidSecondFactor:
            return Problem("invalid-totp", .forbidden, "The TOTP code or recovery code is wrong, expired or used already.")
        case .secondFactorNotEnrolled:
            return Problem("totp-not-enrolled", .conflict, "The account has no TOTP enrolment to confirm or remove.")
        case .secondFactorEnrolled:
            return Problem("totp-enrolled", .conflict, "The account has a TOTP second factor already: remove it before enrolling another.")
        case .keyMismatch, .storeTransfer, .unsupportedLogLocation, .signupConfirmationUnavailable, .committedNotApplied:
            return nil
        }
    }

    private static func slug(of error: AccountOperationError) -> String {
        switch error {
        case .missingAccountValue: "missing-value"
        case .accountIdChanged: "account-id-changed"
        case .mutatingNonMutableAccountKeys: "immutable-key"
        case .removingRequiredAccountKeys: "removing-required-key"
        case .invalidValue: "invalid-value"
        }
    }

    /// Where the JSON went wrong, without echoing values.
    private static func describe(_ error: DecodingError) -> String {
        func path(_ context: DecodingError.Context) -> String {
            let path = context.codingPath.map(\.stringValue).joined(separator: ".")
            return path.isEmpty ? "the body" : path
        }
        switch error {
        case let .keyNotFound(key, context):
            let parent = path(context)
            return "\(parent == "the body" ? "" : parent + ".")\(key.stringValue) is missing"
        case let .typeMismatch(_, context), let .valueNotFound(_, context):
            return "\(path(context)) has the wrong type"
        case let .dataCorrupted(context):
            return context.codingPath.isEmpty ? "the body is not valid JSON" : "\(path(context)) is not valid"
        @unknown default:
            return "the body could not be read"
        }
    }

    /// The HTTP answer.
    func response() -> Response {
        var headers: HTTPFields = [.contentType: "application/problem+json"]
        if let retryAfter { headers[.retryAfter] = String(retryAfter) }
        if status == 401 { headers[.wwwAuthenticate] = "Bearer" }
        let body = (try? JSONCoding.encoder.encode(self)) ?? Data()
        return Response(status: HTTPResponse.Status(code: status), headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: body)))
    }
}
