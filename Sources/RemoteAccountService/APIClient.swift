//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
import SpeziAccount
import Synchronization

/// A refusal of the account server that the seed has no error for: its RFC 9457 problem.
public struct AccountServerProblem: Error, Sendable, Equatable, CustomStringConvertible {
    /// The HTTP status.
    public let status: Int
    /// The problem's type, `urn:spezi-account-store:problem:<slug>`.
    public let type: String
    /// What went wrong, in a sentence.
    public let title: String
    /// More about it, if the server said.
    public let detail: String?
    /// Seconds to wait before trying again (rate limits, lockouts, contention).
    public let retryAfter: Int?

    /// The type's last part (`rate-limited`, `invalid-value`, …).
    public var slug: String { type.split(separator: ":").last.map(String.init) ?? type }

    public var description: String {
        "\(title)\(detail.map { " (\($0))" } ?? "") [\(status) \(slug)]"
    }

    static func unexpected(_ response: TransportResponse) -> AccountServerProblem {
        AccountServerProblem(
            status: response.status, type: "urn:spezi-account-store:problem:unexpected-answer",
            title: "The server's answer is not what the API describes.", detail: nil, retryAfter: nil)
    }
}

/// One event of the account's stream.
/// Thrown by `RemoteAccountService.signup(_:)` on a server that confirms signups: nothing is
/// signed in yet; the owner of the user id received a message (a token for
/// `RemoteAccountService.confirmSignup(token:)`, or a notice when the user id has an account).
public struct SignupConfirmationPending: Error, Sendable, Equatable, CustomStringConvertible {
    public var description: String { "the signup waits for its confirmation: follow the message sent to the user id" }
}

struct ServerSentEvent: Sendable {
    let id: UInt64
    let name: String
    /// The data's members that hold details (`details`, `before`, `after`), as JSON.
    let data: [String: Data]
}

/// Requests of the account API over a transport, with problem details turned into errors.
struct APIClient: Sendable {
    let base: URL
    let transport: any AccountServerTransport
    /// The device cookies the server set (one per user id signed in to from here): sent back with
    /// every login, so that this app counts as the owner's known device and is never queued
    /// behind other people's guesses.
    let deviceCookies = DeviceCookieJar()

    func url(_ path: String) -> URL {
        let parts = path.split(separator: "?", maxSplits: 1)
        let url = base.appendingPathComponent(String(parts[0].dropFirst()))
        guard parts.count == 2, var components = URLComponents(url: url, resolvingAgainstBaseURL: false) else { return url }
        components.percentEncodedQuery = String(parts[1])
        return components.url ?? url
    }

    /// Sends a request; a 2xx answer comes back, anything else is thrown as an error.
    func call(_ method: String, _ path: String, token: String? = nil, body: Data? = nil) async throws -> TransportResponse {
        let response = try await transport.send(request(method, path, token: token, body: body))
        deviceCookies.remember(response)
        guard (200..<300).contains(response.status) else { throw Self.error(from: response) }
        return response
    }

    /// Sends a write with a new `Idempotency-Key` and, while its outcome is unknown (the
    /// transport failed, or the server answered 503 `storage-unavailable`, 502 or 504), sends it
    /// again with the same key after a growing pause (0.25 s doubling to 4 s) for up to
    /// `retryWindow`: a write that was done before its answer was lost is answered as it was
    /// the first time, never done twice. Returns the last answer as ``call(_:_:token:body:)`` does.
    func keyedCall(
        _ method: String, _ path: String, token: String? = nil, body: Data? = nil, retryWindow: Duration = .seconds(30)
    ) async throws -> TransportResponse {
        var request = request(method, path, token: token, body: body)
        request.headers["Idempotency-Key"] = UUID().uuidString
        let started = ContinuousClock.now
        var attempt = 0
        while true {
            attempt += 1
            let outcome: Result<TransportResponse, any Error>
            do {
                let response = try await transport.send(request)
                deviceCookies.remember(response)
                outcome = .success(response)
            } catch {
                outcome = .failure(error)
            }
            let wait = min(Duration.milliseconds(250) * (1 << min(attempt - 1, 4)), .seconds(4))
            guard Self.outcomeUnknown(outcome), ContinuousClock.now - started + wait <= retryWindow else {
                let response = try outcome.get()
                guard (200..<300).contains(response.status) else { throw Self.error(from: response) }
                return response
            }
            try await Task.sleep(for: wait)
        }
    }

    /// Whether a write's outcome is not known from this: no answer (but not a cancellation), or
    /// an answer that says the server could not reach its store.
    static func outcomeUnknown(_ outcome: Result<TransportResponse, any Error>) -> Bool {
        switch outcome {
        case let .failure(error):
            return !(error is CancellationError)
        case let .success(response):
            if response.status == 502 || response.status == 504 { return true }
            guard response.status == 503, let object = try? object(response.body) else { return false }
            return (object["type"] as? String)?.hasSuffix(":storage-unavailable") ?? false
        }
    }

    private func request(_ method: String, _ path: String, token: String?, body: Data?) -> TransportRequest {
        var headers = ["Accept": "application/json"]
        if let token { headers["Authorization"] = "Bearer \(token)" }
        if body != nil { headers["Content-Type"] = "application/json" }
        if path == "/v1/sessions", let cookie = deviceCookies.header { headers["Cookie"] = cookie }
        return TransportRequest(method: method, url: url(path), headers: headers, body: body)
    }

    /// A write the server committed but could not show yet: its log position and the receipt that
    /// lets a caller without a session ask about it.
    struct AcceptedWrite: Sendable {
        let position: UInt64
        let receipt: String?
    }

    /// The log position (and receipt) of a `202 {"status":"accepted","position":N}` answer: the
    /// write was committed, but the node could not show it yet. Nil for any other answer.
    static func acceptedPosition(_ response: TransportResponse) -> AcceptedWrite? {
        guard response.status == 202, let object = try? object(response.body), object["status"] as? String == "accepted",
            let position = (object["position"] as? NSNumber)?.uint64Value
        else { return nil }
        return AcceptedWrite(position: position, receipt: object["receipt"] as? String)
    }

    /// Waits (polling `GET /v1/positions/N`, with the session's token or the write's receipt, at
    /// most `deadline`) until the server has applied the log up to the write; throws the server's
    /// problem, or a timeout, otherwise.
    func waitUntilApplied(_ write: AcceptedWrite, token: String? = nil, deadline: Duration = .seconds(60)) async throws {
        let position = write.position
        // The receipt works whether or not the session still does (a new password ends it).
        let query = write.receipt.map { "?receipt=\($0)" } ?? ""
        let token = write.receipt == nil ? token : nil
        let end = ContinuousClock.now + deadline
        var pause = Duration.milliseconds(100)
        while ContinuousClock.now < end {
            if try await call("GET", "/v1/positions/\(position)\(query)", token: token).status == 200 { return }
            try await Task.sleep(for: pause)
            pause = min(pause * 2, .seconds(2))
        }
        throw AccountServerProblem(
            status: 202, type: "urn:spezi-account-store:problem:not-applied", title: "The server has not applied the change in time.",
            detail: "position \(position)", retryAfter: nil)
    }

    /// Opens the account's event stream (after `after`, or from now on).
    func events(token: String, after: UInt64?) async throws -> AsyncThrowingStream<ServerSentEvent, any Error> {
        var headers = ["Accept": "text/event-stream", "Authorization": "Bearer \(token)"]
        if let after { headers["Last-Event-ID"] = String(after) }
        let (status, body) = try await transport.stream(TransportRequest(method: "GET", url: url("/v1/account/events"), headers: headers))
        guard status == 200 else {
            var collected = Data()
            for try await chunk in body { collected.append(chunk) }
            throw Self.error(from: TransportResponse(status: status, headers: [:], body: collected))
        }
        let (events, continuation) = AsyncThrowingStream<ServerSentEvent, any Error>.makeStream()
        let reader = Task {
            var parser = EventStreamParser()
            do {
                for try await chunk in body {
                    for event in parser.feed(chunk) { continuation.yield(event) }
                }
                continuation.finish()
            } catch {
                continuation.finish(throwing: error)
            }
        }
        continuation.onTermination = { _ in reader.cancel() }
        return events
    }

    /// Details from an `Account` object of the API (`{"accountId", "isAnonymous", "details": {…}}`).
    func account(from data: Data, registry: AccountKeyRegistry) throws -> AccountDetails {
        let object = try Self.object(data)
        guard let detailsObject = object["details"] else {
            throw DecodingError.valueNotFound(AccountDetails.self, .init(codingPath: [], debugDescription: "no details"))
        }
        var details = try self.details(from: try JSONSerialization.data(withJSONObject: detailsObject), registry: registry)
        if let accountId = object["accountId"] as? String { details.accountId = accountId }
        details.isAnonymous = object["isAnonymous"] as? Bool ?? false
        details.isNewUser = object["isNewUser"] as? Bool ?? false
        return details
    }

    /// Details from the JSON object of their values.
    func details(from data: Data, registry: AccountKeyRegistry) throws -> AccountDetails {
        let decoder = JSONDecoder()
        decoder.userInfo[.accountDetailsKeys] = registry
        return try decoder.decode(AccountDetails.self, from: data)
    }

    static func object(_ data: Data) throws -> [String: Any] {
        guard let object = try JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            throw DecodingError.typeMismatch([String: Any].self, .init(codingPath: [], debugDescription: "not a JSON object"))
        }
        return object
    }

    static func json(_ object: [String: String?]) throws -> Data {
        try JSONSerialization.data(withJSONObject: object.compactMapValues { $0 }, options: [.sortedKeys])
    }

    /// The error for a problem answer: the seed's own where it has one.
    static func error(from response: TransportResponse) -> any Error {
        guard let object = try? Self.object(response.body), let type = object["type"] as? String else {
            return AccountServerProblem.unexpected(response)
        }
        switch type.split(separator: ":").last {
        case "wrong-credentials": return AccountServiceError.wrongCredentials
        case "credentials-taken": return AccountServiceError.credentialsTaken
        case "invalid-session": return AccountServiceError.notSignedIn
        default:
            return AccountServerProblem(
                status: response.status, type: type, title: object["title"] as? String ?? "",
                detail: object["detail"] as? String, retryAfter: response.headers["retry-after"].flatMap(Int.init))
        }
    }
}

/// The request bodies the service sends.
struct SignupBody: Encodable {
    let details: AccountDetails

    func encode(to encoder: any Encoder) throws {
        // The details themselves, password included (AccountDetails' own encoding keeps it).
        try details.encode(to: encoder)
    }
}

struct ModifyBody: Encodable {
    let set: AccountDetails
    let remove: [String]
    let currentPassword: String?
}

/// Splits an event stream into events: `id:`, `event:` and `data:` lines, a blank line ends one.
/// Comment lines (`:`) are skipped.
struct EventStreamParser {
    private var pending = Data()
    private var id: UInt64?
    private var name: String?
    private var data = ""

    mutating func feed(_ chunk: Data) -> [ServerSentEvent] {
        pending.append(chunk)
        var events: [ServerSentEvent] = []
        while let newline = pending.firstIndex(of: 0x0A) {
            var line = pending[pending.startIndex..<newline]
            pending = Data(pending[(newline + 1)...])
            if line.last == 0x0D { line = line.dropLast() }
            let text = String(decoding: line, as: UTF8.self)
            if text.isEmpty {
                if let event = finishEvent() { events.append(event) }
            } else if text.hasPrefix("id: ") {
                id = UInt64(text.dropFirst(4))
            } else if text.hasPrefix("event: ") {
                name = String(text.dropFirst(7))
            } else if text.hasPrefix("data: ") {
                data += text.dropFirst(6)
            }
        }
        return events
    }

    private mutating func finishEvent() -> ServerSentEvent? {
        defer {
            id = nil
            name = nil
            data = ""
        }
        guard let id, let name, let object = try? APIClient.object(Data(data.utf8)) else { return nil }
        var members: [String: Data] = [:]
        for key in ["details", "before", "after"] {
            if let value = object[key], let encoded = try? JSONSerialization.data(withJSONObject: value) { members[key] = encoded }
        }
        return ServerSentEvent(id: id, name: name, data: members)
    }
}

/// The device cookies an account server set (`spezi_device_…`), by name, kept in memory for the
/// service's life.
final class DeviceCookieJar: Sendable {
    private let cookies = Mutex<[String: String]>([:])

    /// Keeps a device cookie the answer sets.
    func remember(_ response: TransportResponse) {
        guard let line = response.headers["set-cookie"], line.hasPrefix("spezi_device_"),
            let pair = line.split(separator: ";").first, let equals = pair.firstIndex(of: "=")
        else { return }
        let name = String(pair[..<equals])
        let value = String(pair[pair.index(after: equals)...])
        cookies.withLock { $0[name] = value.isEmpty ? nil : value }
    }

    /// The `Cookie` header to send with a login, nil without cookies.
    var header: String? {
        cookies.withLock { cookies in
            cookies.isEmpty ? nil : cookies.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: "; ")
        }
    }
}
