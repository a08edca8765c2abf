//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import CRUDPeer
import Foundation
import SpeziAccountStore
import SpeziAccountTesting

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A CRUD peer running in this process, with its accounts signed up over HTTP.
struct RunningPeer {
    let name: String
    let server: CRUDPeerServer
    let serving: Task<Void, any Error>
    let base: String
    let tokens: [String]
    let settings: String

    /// Starts `server` on a free port and signs up `accounts` accounts with `POST /v1/accounts`, as
    /// `server-load` names them (`load<i>@example.org`, the same password), keeping their tokens.
    static func start(name: String, server: CRUDPeerServer, accounts: Int) async throws -> RunningPeer {
        let (ports, continuation) = AsyncStream<Int>.makeStream()
        let serving = Task { try await server.run { port in continuation.yield(port) } }
        guard let port = await ports.first(where: { _ in true }) else { throw PeerFailure("\(name): the peer did not start") }
        let base = "http://127.0.0.1:\(port)"
        var tokens: [String] = []
        for index in 0..<accounts {
            let body = """
                {"userId":"load\(index)@example.org","password":"correct horse battery","name":{"givenName":"Load","familyName":"\(index)"}}
                """
            let (status, data) = try await request("POST", base + "/v1/accounts", body: body)
            guard status == 201, let session = try JSONSerialization.jsonObject(with: data) as? [String: Any], let token = session["token"] as? String
            else {
                throw PeerFailure("\(name): signup answered \(status): \(String(decoding: data, as: UTF8.self))")
            }
            tokens.append(token)
        }
        let (status, _) = try await request(
            "POST", base + "/v1/accounts", body: #"{"userId":"load0@example.org","password":"correct horse battery","name":{"givenName":"L"}}"#)
        guard status == 409 else { throw PeerFailure("\(name): a second signup with a user id answered \(status), not 409") }
        return RunningPeer(
            name: name, server: server, serving: serving, base: base, tokens: tokens, settings: try await server.storageSettings())
    }

    func stop() async {
        serving.cancel()
        _ = await serving.result
        await server.close()
    }
}

struct PeerFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// One request with a JSON body (if any) and a bearer token (if any): its status and body.
func request(_ method: String, _ url: String, body: String? = nil, token: String? = nil) async throws -> (Int, Data) {
    var request = URLRequest(url: URL(string: url)!)
    request.httpMethod = method
    if let body {
        request.httpBody = Data(body.utf8)
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
    }
    if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
    let (data, response) = try await URLSession.shared.data(for: request)
    return ((response as? HTTPURLResponse)?.statusCode ?? 0, data)
}

/// The keys of a JSON object and of the objects in it (`details.name` for a nested one), to tell
/// whether two servers answer in the same shape.
func shape(of data: Data) -> Set<String> {
    func keys(_ object: [String: Any], _ prefix: String) -> Set<String> {
        var result: Set<String> = []
        for (key, value) in object {
            result.insert(prefix + key)
            if let nested = value as? [String: Any] { result.formUnion(keys(nested, prefix + key + ".")) }
        }
        return result
    }
    guard let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else { return [] }
    return keys(object, "")
}

/// Checks that the peer answers the load's requests as the account server does: the same
/// statuses and the same keys (reads, modifications, a login; and a removal, an unknown key, a
/// malformed body, a wrong password, no token).
func compareAnswers(server: String, serverToken: String, peer: RunningPeer) async throws -> [String] {
    var differences: [String] = []
    let patch = #"{"set":{"genderIdentity":"female"}}"#
    let login = #"{"userId":"load1@example.org","password":"correct horse battery"}"#
    let wrong = #"{"userId":"load1@example.org","password":"wrong horse battery"}"#
    // The modifications first: both accounts then hold the same values whatever ran before.
    let cases: [(String, String, String, String?, Bool)] = [
        ("a removal", "PATCH", "/v1/account", #"{"remove":["genderIdentity"]}"#, true),
        ("an unknown key", "PATCH", "/v1/account", #"{"set":{"shoeSize":42}}"#, true), ("a malformed body", "PATCH", "/v1/account", "{", true),
        ("PATCH /v1/account", "PATCH", "/v1/account", patch, true), ("GET /v1/account", "GET", "/v1/account", nil, true),
        ("POST /v1/sessions", "POST", "/v1/sessions", login, false), ("wrong password", "POST", "/v1/sessions", wrong, false),
        ("no token", "GET", "/v1/account", nil, false)
    ]
    for (label, method, path, body, signedIn) in cases {
        let ours = try await request(method, server + path, body: body, token: signedIn ? serverToken : nil)
        let theirs = try await request(method, peer.base + path, body: body, token: signedIn ? peer.tokens[0] : nil)
        if ours.0 != theirs.0 { differences.append("\(label): status \(ours.0) here, \(theirs.0) on the \(peer.name) peer") }
        guard (200..<300).contains(ours.0) else { continue }
        let (here, there) = (shape(of: ours.1), shape(of: theirs.1))
        if here != there {
            differences.append(
                "\(label): keys only here \(here.subtracting(there).sorted()), only on the peer \(there.subtracting(here).sorted())")
        }
    }
    return differences
}

/// Starts a throwaway PostgreSQL cluster (fsync and synchronous_commit on, as by default) and the
/// CRUD peer on it, and the CRUD peer on SQLite in `directory`.
func startPeers(accounts: Int, postgresConnections: Int, directory: URL, only: Set<String>, hasher: PasswordHasher?) async throws -> [RunningPeer] {
    var peers: [RunningPeer] = []
    if only.contains("postgres") {
        let postgres = try await PostgresServer.start(name: "server-load")
        let server = try await CRUDPeerServer.postgres(port: postgres.port, connections: postgresConnections, hasher: hasher)
        peers.append(try await RunningPeer.start(name: "PostgreSQL", server: server, accounts: accounts))
    }
    if only.contains("sqlite") {
        let server = try await CRUDPeerServer.sqlite(directory: directory, hasher: hasher)
        peers.append(try await RunningPeer.start(name: "SQLite", server: server, accounts: accounts))
    }
    return peers
}
