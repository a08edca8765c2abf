//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import AccountServer
import ArgumentParser
import Foundation
import Logging
import ServiceLifecycle
import SpeziAccountStore

/// `accountctl serve`: the account server over HTTP on a store, until SIGTERM or SIGINT.
struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve the store's accounts over HTTP (JSON; the OpenAPI document is at /openapi.yaml).",
        discussion: """
            Prints "serving on http://HOST:PORT" once the socket is bound (with --port 0, the port \
            the system picked). SIGTERM or SIGINT stops taking connections, finishes the requests \
            under way and closes the store. Password reset tokens are handed to the file given with \
            --reset-outbox (one JSON object per line, created with mode 0600) for a mailer to send; \
            without it they are not delivered.
            """
    )

    @OptionGroup var global: GlobalOptions

    @Option(help: "The address to bind.")
    var host = "127.0.0.1"

    @Option(help: "The port (0: any free one).")
    var port = 8080

    @Option(help: "How long a session lasts, in seconds.")
    var sessionSeconds = 86_400

    @Option(help: "The largest request body accepted, in bytes.")
    var maxBodyBytes = 64 * 1024

    @Option(help: "A file to append password reset tokens to, for delivery (JSON lines).")
    var resetOutbox: String?

    func validate() throws {
        guard (0...65_535).contains(port) else { throw ValidationError("--port must be between 0 and 65535") }
        guard sessionSeconds > 0 else { throw ValidationError("--session-seconds must be positive") }
        guard maxBodyBytes >= 1_024 else { throw ValidationError("--max-body-bytes must be at least 1024") }
    }

    func run() async throws {
        try await guarded {
            let outbox = try resetOutbox.map(ResetOutbox.init(path:))
            try await global.withStore(
                creating: true,
                adjusting: { options in
                    if let outbox { options.passwordResetDelivery = { request in outbox.deliver(request) } }
                }
            ) { store in
                var configuration = AccountServerConfiguration()
                configuration.host = host
                configuration.port = port
                configuration.sessionValidity = .seconds(sessionSeconds)
                configuration.maxBodyBytes = maxBodyBytes
                let logger = Logger(label: "accountctl.serve")
                let server = AnnouncedServer(server: AccountServer(store: store, configuration: configuration, logger: logger), host: host)
                let group = ServiceGroup(
                    configuration: ServiceGroupConfiguration(
                        services: [.init(service: server)], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
                try await group.run()
            }
        }
    }
}

/// The server, announcing its address on standard output once it listens.
private struct AnnouncedServer: Service {
    let server: AccountServer
    let host: String

    func run() async throws {
        try await server.run { port in
            FileHandle.standardOutput.write(Data("serving on http://\(host):\(port)\n".utf8))
        }
    }
}

/// Appends each password reset (account, user id, token, expiry) to a file as one JSON line.
private final class ResetOutbox: Sendable {
    let path: String

    init(path: String) throws {
        self.path = path
        if !FileManager.default.fileExists(atPath: path) {
            guard FileManager.default.createFile(atPath: path, contents: nil, attributes: [.posixPermissions: 0o600]) else {
                throw ToolError.input("cannot create the reset outbox \(path)")
            }
        }
    }

    func deliver(_ request: PasswordResetRequest) {
        let entry: [String: String] = [
            "accountId": request.accountId, "userId": request.userId, "token": request.token,
            "expiresAt": ISO8601DateFormatter().string(from: request.expiresAt)
        ]
        do {
            var line = try JSONSerialization.data(withJSONObject: entry, options: [.sortedKeys])
            line.append(0x0A)
            let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
            defer { try? handle.close() }
            try handle.seekToEnd()
            try handle.write(contentsOf: line)
        } catch {
            printError("could not write a password reset to \(path): \(error)")
        }
    }
}
