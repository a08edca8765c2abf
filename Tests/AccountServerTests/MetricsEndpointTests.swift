//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import AsyncHTTPClient
import Foundation
import NIOCore
import NIOFoundationCompat
import NIOHTTP1
import TestSupport
import TestTiers
import Testing

/// `accountctl serve --metrics-token-file`: `GET /metrics` in Prometheus' text format, read by
/// Prometheus' own Python client, for the token's holder only.
@Suite("GET /metrics: Prometheus' text format, behind a bearer token", .integration, .timeLimit(.minutes(4)))
struct MetricsEndpointTests {
    static let token = "scrape-token-\(UUID().uuidString)"

    static func get(
        _ server: ServeProcess, _ path: String, method: String = "GET", bearer: String? = nil
    ) async throws -> (
        status: Int, headers: HTTPHeaders, text: String
    ) {
        var request = HTTPClientRequest(url: server.base + path)
        request.method = .init(rawValue: method)
        if let bearer { request.headers.add(name: "Authorization", value: "Bearer \(bearer)") }
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(60))
        let body = try await response.body.collect(upTo: 16 << 20)
        return (Int(response.status.code), response.headers, String(buffer: body))
    }

    /// Parses the exposition with `prometheus_client.parser` and prints one JSON object a sample:
    /// name, labels, value.
    static func parse(_ text: String) async throws -> [(name: String, labels: [String: String], value: Double)] {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("metrics-\(UUID().uuidString).txt")
        try Data(text.utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let script = """
            import json, sys
            from prometheus_client.parser import text_string_to_metric_families
            for family in text_string_to_metric_families(open(sys.argv[1]).read()):
                for sample in family.samples:
                    print(json.dumps({"name": sample.name, "labels": sample.labels, "value": sample.value}))
            """
        let run = try await runProgram(
            URL(fileURLWithPath: "/usr/bin/env"), ["python3", "-c", script, file.path], timeLimit: .seconds(60))
        try #require(run.status == 0, "the parser refused the exposition: \(run.errors)\n\(text.prefix(2_000))")
        return run.output.split(separator: "\n").compactMap { line in
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else { return nil }
            return (
                object["name"] as? String ?? "", object["labels"] as? [String: String] ?? [:], (object["value"] as? NSNumber)?.doubleValue ?? .nan
            )
        }
    }

    @Test("the token's holder reads requests by route and status, the log and the limiters; others get 401, then 429")
    func scrape() async throws {
        let store = FileManager.default.temporaryDirectory.appendingPathComponent("serve-store-\(UUID().uuidString)")
        let tokenFile = FileManager.default.temporaryDirectory.appendingPathComponent("metrics-token-\(UUID().uuidString)")
        defer {
            try? FileManager.default.removeItem(at: store)
            try? FileManager.default.removeItem(at: tokenFile)
        }
        try Data((Self.token + "\n").utf8).write(to: tokenFile)
        let adminFile = FileManager.default.temporaryDirectory.appendingPathComponent("metrics-admin-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: adminFile) }
        try Data("grace:a long admin password\n".utf8).write(to: adminFile)
        let server = try ServeProcess(
            store: store,
            extra: ["--metrics-token-file", tokenFile.path, "--admin-credential-file", adminFile.path, "--webhook-interval-seconds", "0.05"])
        try await server.start()
        // A webhook whose receiver is not there: its backlog and failures become gauges.
        let hook = try await server.send(
            "POST", "/admin/api/webhooks", json: #"{"url":"http://127.0.0.1:9/hook","eventTypes":["*"]}"#, basic: "grace:a long admin password")
        #expect(hook.status == 201)

        let signup = try await server.send(
            "POST", "/v1/accounts", json: #"{"userId":"ada@example.org","password":"correct horse battery","name":{"givenName":"Ada"}}"#)
        #expect(signup.status == 201)
        let wrong = try await server.send("POST", "/v1/sessions", json: #"{"userId":"ada@example.org","password":"not the password"}"#)
        #expect(wrong.status == 401)
        // Methods outside HTTP's own are refused before they are counted (each would be a series
        // of its own): NIO's parser refuses made-up ones, the server the rest (WebDAV's, say) as
        // for any method a path does not take.
        for method in ["PROPFIND", "MKCOL", "QUERY"] {
            let refused = try await Self.get(server, "/v1/account", method: method)
            #expect(refused.status == 405 && refused.headers["Allow"].first?.contains("GET") == true)
        }
        #expect(try await Self.get(server, "/v1/account", method: "MADEUP").status == 400)

        let anonymous = try await Self.get(server, "/metrics")
        #expect(anonymous.status == 401)
        #expect(anonymous.headers["WWW-Authenticate"].first?.hasPrefix("Bearer") == true)
        #expect(!anonymous.text.contains("hb_requests"))
        #expect(try await Self.get(server, "/metrics", bearer: Self.token + "x").status == 401)

        let scraped = try await Self.get(server, "/metrics", bearer: Self.token)
        #expect(scraped.status == 200)
        #expect(scraped.headers["Content-Type"].first?.hasPrefix("text/plain; version=0.0.4") == true)
        let samples = try await Self.parse(scraped.text)
        func value(_ name: String, _ labels: [String: String]) -> Double? {
            samples.first { sample in sample.name == name && labels.allSatisfy { key, value in sample.labels[key] == value } }?.value
        }
        #expect(value("hb_requests_total", ["http_route": "/v1/accounts", "http_request_method": "POST", "http_response_status_code": "201"]) == 1)
        #expect(value("hb_requests_total", ["http_route": "/v1/sessions", "http_request_method": "POST", "http_response_status_code": "401"]) == 1)
        // A duration histogram per route: its count is the requests'.
        #expect(value("http_server_request_duration_count", ["http_route": "/v1/accounts", "http_request_method": "POST"]) == 1)
        #expect(!samples.contains { $0.labels.values.contains { ["PROPFIND", "MKCOL", "QUERY", "MADEUP"].contains($0) } })
        // The log's commits and the limiters' tables are there too.
        #expect(samples.contains { $0.name.hasPrefix("eventlog_commit_duration") })
        #expect(samples.contains { $0.name == "rate_limiter_keys" })

        // The webhook gauges (recorded every 5 s) and the failed deliveries.
        var webhookSamples: [(name: String, labels: [String: String], value: Double)] = []
        for _ in 0..<100 {
            webhookSamples = try await Self.parse(try await Self.get(server, "/metrics", bearer: Self.token).text)
            if webhookSamples.contains(where: { $0.name == "account_webhook_failures" && $0.value >= 1 }) { break }
            try await Task.sleep(for: .milliseconds(200))
        }
        #expect(webhookSamples.contains { $0.name == "account_webhook_behind_records" && $0.labels["subscription"]?.hasPrefix("wh_") == true })
        #expect(webhookSamples.contains { $0.name == "account_webhook_failures" && $0.value >= 1 })
        #expect(webhookSamples.contains { $0.name == "account_webhook_deliveries_total" && $0.labels["result"] == "failed" && $0.value >= 1 })

        // Wrong tokens count against the client's allowance of credential tries.
        var statuses: [Int] = []
        for _ in 0..<25 { statuses.append(try await Self.get(server, "/metrics", bearer: "guess-\(UUID().uuidString)").status) }
        #expect(statuses.contains(429), "\(statuses)")
        // The token's holder still gets in.
        #expect(try await Self.get(server, "/metrics", bearer: Self.token).status == 200)
        #expect(await server.terminate() == 0)
    }

    @Test("a short token stops the server with a message")
    func shortToken() async throws {
        let store = FileManager.default.temporaryDirectory.appendingPathComponent("serve-store-\(UUID().uuidString)")
        let tokenFile = FileManager.default.temporaryDirectory.appendingPathComponent("metrics-token-\(UUID().uuidString)")
        defer {
            try? FileManager.default.removeItem(at: store)
            try? FileManager.default.removeItem(at: tokenFile)
        }
        try Data("short\n".utf8).write(to: tokenFile)
        let run = try await runProgram(
            ServeProcess.binary, ["serve", "--store", store.path, "--port", "0", "--metrics-token-file", tokenFile.path], timeLimit: .seconds(60))
        #expect(run.status != 0)
        #expect(run.errors.contains("--metrics-token-file"), "\(run.errors)")
    }
}
