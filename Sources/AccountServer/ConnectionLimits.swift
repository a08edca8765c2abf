//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
import Logging
import NIOCore
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// What the server holds open for its clients: connections, how long they may idle, event streams.
public struct ConnectionLimits: Sendable, Equatable {
    /// How long a connection may stay silent: before its request's head is complete, between the
    /// parts of a request, and between requests (keep-alive). A slow-header or idle client is
    /// disconnected after it. Event streams are not idle while the server writes heartbeats.
    public var idleTimeout: Duration = .seconds(15)
    /// How long a request body may take to arrive, from the head to its end.
    public var bodyTimeout: Duration = .seconds(15)
    /// Connections open at once; nil: the process's open-files limit less ``descriptorReserve``.
    /// Beyond it the server stops accepting until one closes (clients wait in the listen backlog).
    public var maxConnections: Int?
    /// Descriptors kept back from the connection cap for the store's files, logs and threads.
    public var descriptorReserve = 128
    /// Connections open at once from one client (an address, or an IPv6 /64; trusted proxies are
    /// exempt); further ones are closed at once.
    public var maxConnectionsPerClient = 256
    /// Event streams (`GET /v1/account/events`) open at once for one session.
    public var streamsPerSession = 4
    /// Event streams open at once for one account, over all its sessions.
    public var streamsPerAccount = 16

    /// The defaults above.
    public init() {}

    /// The connection cap in force: ``maxConnections``, or the open-files limit less the reserve.
    public var effectiveMaxConnections: Int {
        if let maxConnections { return max(1, maxConnections) }
        return max(16, Self.openFilesLimit() - descriptorReserve)
    }

    /// The process's soft limit on open files.
    ///
    /// - Returns: The current soft limit; 1,048,576 when it is unlimited, 1,024 when it cannot be read.
    public static func openFilesLimit() -> Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 1_024 }
        return limit.rlim_cur == rlim_t.max ? 1 << 20 : Int(clamping: limit.rlim_cur)
    }

    /// Raises the soft limit on open files to the hard limit (the default soft limit, often 1,024,
    /// would cap the server far below what the system allows). Returns the limit in force.
    ///
    /// - Returns: The soft limit after the attempt (see ``openFilesLimit()``); the old one when raising
    ///   is not allowed.
    @discardableResult
    public static func raiseOpenFilesLimit() -> Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return openFilesLimit() }
        if limit.rlim_cur < limit.rlim_max {
            limit.rlim_cur = limit.rlim_max
            _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        }
        return openFilesLimit()
    }
}

/// Open connections per client, shared by the connection handlers of one server.
final class ConnectionCounts: Sendable {
    private let counts = Mutex<[String: Int]>([:])
    let limit: Int

    init(limit: Int) {
        self.limit = max(1, limit)
    }

    /// Takes a slot for `client`; false when it has `limit` open already.
    func open(_ client: String) -> Bool {
        counts.withLock { counts in
            let count = counts[client, default: 0]
            guard count < limit else { return false }
            counts[client] = count + 1
            return true
        }
    }

    func close(_ client: String) {
        counts.withLock { counts in
            let count = counts[client, default: 1] - 1
            counts[client] = count <= 0 ? nil : count
        }
    }

    /// Open connections of `client`.
    func count(_ client: String) -> Int {
        counts.withLock { $0[client, default: 0] }
    }
}

/// The first handler of each connection: closes it at once when its client has too many open.
final class ConnectionCapHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny

    let counts: ConnectionCounts
    let resolver: ClientAddressResolver
    let logger: Logger

    init(counts: ConnectionCounts, resolver: ClientAddressResolver, logger: Logger) {
        self.counts = counts
        self.resolver = resolver
        self.logger = logger
    }

    func handlerAdded(context: ChannelHandlerContext) {
        guard let peer = context.channel.remoteAddress?.ipAddress, !resolver.isTrusted(peer) else { return }
        let client = ClientAddressResolver.group(peer)
        guard counts.open(client) else {
            logger.notice("connection refused: too many from one client", metadata: ["client": "\(client)", "limit": "\(counts.limit)"])
            context.close(promise: nil)
            return
        }
        context.channel.closeFuture.whenComplete { [counts] _ in counts.close(client) }
    }
}

/// Open event streams per session and per account.
final class StreamSlots: Sendable {
    private let perSession = Mutex<[String: Int]>([:])
    private let perAccount = Mutex<[String: Int]>([:])
    let sessionLimit: Int
    let accountLimit: Int

    init(sessionLimit: Int, accountLimit: Int) {
        self.sessionLimit = max(1, sessionLimit)
        self.accountLimit = max(1, accountLimit)
    }

    /// A slot for one more stream, released when the slot is dropped; nil when the session or the
    /// account has its limit open.
    func take(session: String, account: String) -> Slot? {
        let taken = perSession.withLock { sessions in
            perAccount.withLock { accounts in
                guard sessions[session, default: 0] < sessionLimit, accounts[account, default: 0] < accountLimit else { return false }
                sessions[session, default: 0] += 1
                accounts[account, default: 0] += 1
                return true
            }
        }
        return taken ? Slot(slots: self, session: session, account: account) : nil
    }

    fileprivate func release(session: String, account: String) {
        perSession.withLock { sessions in
            perAccount.withLock { accounts in
                sessions[session, default: 1] -= 1
                if sessions[session] ?? 0 <= 0 { sessions[session] = nil }
                accounts[account, default: 1] -= 1
                if accounts[account] ?? 0 <= 0 { accounts[account] = nil }
            }
        }
    }

    /// Streams open for `account`.
    func open(account: String) -> Int {
        perAccount.withLock { $0[account, default: 0] }
    }

    /// One stream's hold on its slots; dropping it (the stream ended, or its response was never
    /// sent) releases them.
    final class Slot: Sendable {
        let slots: StreamSlots
        let session: String
        let account: String

        fileprivate init(slots: StreamSlots, session: String, account: String) {
            self.slots = slots
            self.session = session
            self.account = account
        }

        deinit {
            slots.release(session: session, account: account)
        }
    }
}
