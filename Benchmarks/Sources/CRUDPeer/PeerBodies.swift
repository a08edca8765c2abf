//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
import Hummingbird

/// The parts of a person's name, as the account server's API writes them.
struct PersonName: Codable, Sendable, Equatable {
    var namePrefix: String?
    var givenName: String?
    var middleName: String?
    var familyName: String?
    var nameSuffix: String?
    var nickname: String?

    /// Whether no part has a character that is not white space.
    var isBlank: Bool {
        [namePrefix, givenName, middleName, familyName, nameSuffix, nickname].allSatisfy { part in
            part.map { $0.allSatisfy(\.isWhitespace) } ?? true
        }
    }
}

/// What an account keeps besides its id and credentials: one JSON document (jsonb in PostgreSQL,
/// text in SQLite), shown as the account's details.
struct StoredDetails: Codable, Sendable, Equatable {
    var userId: String
    var name: PersonName
    var email: String?
    /// Seconds since 2001-01-01T00:00:00Z, as the account server's API has it.
    var dateOfBirth: Double?
    var genderIdentity: String?
}

/// Values to set: present with a value, present as `null` (to remove), or absent. Unknown keys
/// are refused (422), as the account server refuses them.
struct DetailValues: Decodable, Sendable {
    var userId: String?
    var password: String?
    var name: PersonName?
    var email: String??
    var dateOfBirth: Double??
    var genderIdentity: String??

    private struct AnyKey: CodingKey {
        let stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: AnyKey.self)
        for key in container.allKeys {
            switch key.stringValue {
            case "userId": userId = try container.decode(String.self, forKey: key)
            case "password": password = try container.decode(String.self, forKey: key)
            case "name": name = try container.decode(PersonName.self, forKey: key)
            case "email": email = .some(try container.decodeIfPresent(String.self, forKey: key))
            case "dateOfBirth": dateOfBirth = .some(try container.decodeIfPresent(Double.self, forKey: key))
            case "genderIdentity": genderIdentity = .some(try container.decodeIfPresent(String.self, forKey: key))
            default: throw PeerProblem.invalidDetails("unknown key \(key.stringValue)")
            }
        }
    }

    static let genderIdentities: Set = ["female", "male", "transgender", "nonBinary", "preferNotToState"]

    /// Checks the values that are present against the account server's rules for them.
    func validate() throws {
        if let userId { try Self.checkAddress(userId, key: "userId") }
        if let password {
            guard password.count >= 8, password.utf8.count <= 4_096, !password.allSatisfy(\.isWhitespace) else {
                throw PeerProblem.invalidDetails("password: at least 8 characters, at most 4,096 bytes")
            }
        }
        if let name, name.isBlank { throw PeerProblem.invalidDetails("name: every part is blank") }
        if case let .some(.some(email)) = email { try Self.checkAddress(email, key: "email") }
        if case let .some(.some(gender)) = genderIdentity, !Self.genderIdentities.contains(gender) {
            throw PeerProblem.invalidDetails("genderIdentity: unknown value \(gender)")
        }
    }

    private static func checkAddress(_ address: String, key: String) throws {
        let parts = address.split(separator: "@", omittingEmptySubsequences: false)
        guard address.utf8.count <= 320, parts.count >= 2, !parts[0].isEmpty, !parts[parts.count - 1].isEmpty,
            !address.contains(where: { $0.isWhitespace || $0.isNewline })
        else {
            throw PeerProblem.invalidDetails("\(key): not an e-mail address")
        }
    }
}

/// `POST /v1/sessions`.
struct LoginBody: Decodable {
    let userId: String
    let password: String
}

/// `PATCH /v1/account`.
struct ModifyBody: Decodable {
    let set: DetailValues?
    let remove: [String]?
    let currentPassword: String?
}

/// The values a modification sets, as the JSON object merged into the stored details.
struct DetailSet: Codable, Sendable {
    var name: PersonName?
    var email: String?
    var dateOfBirth: Double?
    var genderIdentity: String?
}

/// An account as the API shows it.
struct AccountBody: Encodable {
    /// The details with the account id, as the account server shows them.
    struct Shown: Encodable {
        let accountId: String
        let userId: String
        let name: PersonName
        let email: String?
        let dateOfBirth: Double?
        let genderIdentity: String?
    }

    let accountId: String
    let isAnonymous = false
    let isNewUser: Bool
    let details: Shown

    init(_ accountId: UUID, _ details: StoredDetails, isNewUser: Bool = false) {
        self.accountId = accountId.uuidString
        self.isNewUser = isNewUser
        self.details = Shown(
            accountId: self.accountId, userId: details.userId, name: details.name, email: details.email, dateOfBirth: details.dateOfBirth,
            genderIdentity: details.genderIdentity)
    }
}

/// A new session and the account.
struct SessionBody: Encodable {
    let token: String
    let expiresAt: String
    let account: AccountBody
}

/// `PATCH /v1/account`'s answer.
struct ModifiedBody: Encodable {
    let account: AccountBody
}

/// An RFC 9457 problem, the error shape of the account server.
struct PeerProblem: HTTPResponseError {
    let status: HTTPResponse.Status
    let type: String
    let title: String
    let detail: String?

    static func invalidDetails(_ detail: String) -> PeerProblem {
        PeerProblem(status: .unprocessableContent, type: "invalid-details", title: "The account details break the service's rules.", detail: detail)
    }
    static let malformed = PeerProblem(status: .badRequest, type: "malformed-request", title: "The request is malformed.", detail: nil)
    static let invalidSession = PeerProblem(status: .unauthorized, type: "invalid-session", title: "The session is not valid.", detail: nil)
    static let wrongCredentials = PeerProblem(status: .unauthorized, type: "wrong-credentials", title: "Wrong user id or password.", detail: nil)
    static let userIdTaken = PeerProblem(status: .conflict, type: "user-id-taken", title: "The user id has an account.", detail: nil)

    private struct Body: Encodable {
        let type: String
        let title: String
        let status: Int
        let detail: String?
    }

    func response(from request: Request, context: some RequestContext) throws -> Response {
        let body = Body(type: type, title: title, status: status.code, detail: detail)
        return Response(
            status: status, headers: [.contentType: "application/problem+json"],
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: try PeerJSON.encoder.encode(body))))
    }
}

/// The JSON coders of the peer: sorted keys out, as the account server writes them.
enum PeerJSON {
    static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return encoder
    }()

    static func response(_ value: some Encodable, status: HTTPResponse.Status = .ok) throws -> Response {
        Response(
            status: status, headers: [.contentType: "application/json"], body: ResponseBody(byteBuffer: ByteBuffer(bytes: try encoder.encode(value))))
    }

    /// RFC 3339 with milliseconds, in UTC.
    static func timestamp(_ date: Date) -> String {
        date.formatted(.iso8601.year().month().day().time(includingFractionalSeconds: true).timeZone(separator: .omitted))
    }
}
