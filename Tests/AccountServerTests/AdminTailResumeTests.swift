//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import AccountServer
import Foundation
import HTTPTypes
import Testing

/// The console's live tail, reconnected with `Last-Event-ID`, as a browser's EventSource does.
@Suite("The admin tail resumes after Last-Event-ID")
struct AdminTailResumeTests {
    static let password = "a long admin password"

    @Test("Last-Event-ID 6: the tail sends records 7 to the head, none before, none twice; a malformed id is refused")
    func resume() async throws {
        var configuration = AccountServerConfiguration()
        configuration.admin = try AdminCredential(name: "grace", password: Self.password)
        // The tail lives as long as the admin session: short, so that the answer ends soon.
        configuration.adminSessionValidity = .seconds(2)
        let basic: HTTPFields = [.authorization: "Basic \(Data("grace:\(Self.password)".utf8).base64EncodedString())"]
        try await ServerFixture().withServer(configuration: configuration) { api, store in
            for index in 0..<5 { _ = try await api.signup("user\(index)@example.org") }
            let head = try await store.log.lastPosition()
            try #require(head >= 8)
            var headers = basic
            headers[HTTPField.Name("Last-Event-ID")!] = "6"
            let answer = try await api.send(.get, "/admin/api/tail", headers: headers)
            #expect(answer.status == 200 && answer.headers[.contentType] == "text/event-stream")
            let ids = answer.text.split(separator: "\n").filter { $0.hasPrefix("id: ") }.compactMap { UInt64($0.dropFirst(4)) }
            #expect(ids == Array(7...head), "\(answer.text)")

            headers[HTTPField.Name("Last-Event-ID")!] = "six"
            #expect(try await api.send(.get, "/admin/api/tail", headers: headers).status == 400)
        }
    }
}
