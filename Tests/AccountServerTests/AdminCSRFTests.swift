//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import AccountServer
import Foundation
import HTTPTypes
import NIOCore
import SpeziAccountStore
import Testing

/// Issue 39, row 7: a page on another origin must not act as the signed-in admin.
@Suite("Admin console security: sign-in form, sign-out, same-origin requests only, JSON bodies only, Basic for scripts")
struct AdminCSRFTests {
    static let password = "a long admin password"
    static let crossSite: HTTPFields = [
        .origin: "https://evil.example", .init("Sec-Fetch-Site")!: "cross-site", .init("Sec-Fetch-Mode")!: "no-cors",
        .contentType: "text/plain"
    ]
    /// What a browser sends with the console's own fetch (the test client's host is `localhost`).
    static let sameOrigin: HTTPFields = [.origin: "http://localhost", .init("Sec-Fetch-Site")!: "same-origin", .init("Sec-Fetch-Mode")!: "cors"]

    private func configuration(secureCookies: Bool = false) throws -> AccountServerConfiguration {
        var configuration = AccountServerConfiguration()
        configuration.admin = try AdminCredential(name: "grace", password: Self.password)
        configuration.secureCookies = secureCookies
        return configuration
    }

    private func basic(_ password: String = password) -> HTTPFields {
        [.authorization: "Basic \(Data("grace:\(password)".utf8).base64EncodedString())"]
    }

    private func merged(_ fields: HTTPFields...) -> HTTPFields {
        var result = HTTPFields()
        for field in fields.joined() { result[field.name] = field.value }
        return result
    }

    /// Signs in through the form's route; the `Cookie` header to send back, and the Set-Cookie value.
    private func signIn(_ api: APIClient) async throws -> (cookie: HTTPFields, setCookie: String) {
        let answer = try await api.send(
            .post, "/admin/api/session", json: #"{"name":"grace","password":"\#(Self.password)"}"#, headers: Self.sameOrigin)
        #expect(answer.status == 200 && answer.body["admin"] as? String == "grace", "\(answer.text)")
        let header = try #require(answer.headers[values: .setCookie].first { $0.hasPrefix("spezi_admin=") })
        return ([.cookie: String(try #require(header.split(separator: ";").first))], header)
    }

    @Test("a cross-site form POST or navigation with a valid admin cookie is refused with 403, and nothing is appended to the audit stream")
    func crossSiteRefused() async throws {
        try await ServerFixture().withServer(configuration: try configuration()) { api, store in
            let (_, accountId) = try await api.signup("ada@example.org")
            let (cookie, _) = try await signIn(api)
            let head = try await store.log.lastPosition()

            let foreign: [HTTPFields] = [
                Self.crossSite,
                [.init("Sec-Fetch-Site")!: "same-site", .contentType: "text/plain"],
                [.origin: "https://evil.example", .contentType: "application/x-www-form-urlencoded"],
                [.origin: "null"],
                [.origin: "http://localhost:8081"]
            ]
            for headers in foreign {
                for path in ["/admin/api/verify", "/admin/api/projections/account-details/rebuild"] {
                    let refused = try await api.client.execute(uri: path, method: .post, headers: merged(cookie, headers), body: .init(string: "x=1"))
                    #expect(refused.status == .forbidden, "\(path) \(headers)")
                    let text = String(buffer: refused.body)
                    #expect(text.contains("urn:spezi-account-store:problem:cross-site-request"), "\(text)")
                }
                let navigation = try await api.send(.get, "/admin/api/accounts/\(accountId)/history", headers: merged(cookie, headers))
                #expect(navigation.status == 403 && navigation.problemType == "urn:spezi-account-store:problem:cross-site-request")
                let signOut = try await api.send(.delete, "/admin/api/session", headers: merged(cookie, headers))
                #expect(signOut.status == 403)
            }
            // Nothing was done: no audit event, no record at all, and the session still works.
            #expect(try await store.adminActions().isEmpty)
            #expect(try await store.log.lastPosition() == head)
            #expect(try await api.send(.get, "/admin/api/whoami", headers: cookie).status == 200)

            // The console's own requests: same origin, no body or a JSON one.
            let verify = try await api.send(.post, "/admin/api/verify", headers: merged(cookie, Self.sameOrigin))
            #expect(verify.status == 202 && verify.body["kind"] as? String == "verify")
            let history = try await api.send(.get, "/admin/api/accounts/\(accountId)/history", headers: merged(cookie, Self.sameOrigin))
            #expect(history.status == 200)
            // Origin naming the host, from a browser without fetch metadata; a typed-in address.
            let byOrigin = try await api.send(.post, "/admin/api/verify", headers: merged(cookie, [.origin: "http://LOCALHOST:80"]))
            #expect(byOrigin.status == 202)
            let typedIn = try await api.send(
                .get, "/admin/api/accounts/\(accountId)/history", headers: merged(cookie, [.init("Sec-Fetch-Site")!: "none"]))
            #expect(typedIn.status == 200)
            var viewed = try await store.adminActions().filter { $0.action.typeName == "admin.history-viewed" }
            #expect(viewed.count == 2)

            // Same origin, but a form's body: 415, nothing started.
            for type in ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"] {
                let form = try await api.client.execute(
                    uri: "/admin/api/verify", method: .post, headers: merged(cookie, Self.sameOrigin, [.contentType: type]),
                    body: .init(string: "a=b"))
                #expect(form.status == .unsupportedMediaType, "\(type)")
            }
            let json = try await api.send(.post, "/admin/api/verify", json: "{}", headers: merged(cookie, Self.sameOrigin))
            #expect(json.status == 202)
            // A script (no browser headers) with the cookie, too.
            #expect(try await api.send(.post, "/admin/api/verify", headers: cookie).status == 202)
            viewed = try await store.adminActions().filter { $0.action.typeName == "admin.history-viewed" }
            #expect(viewed.count == 2)
        }
    }

    @Test("the sign-in form opens an HttpOnly, SameSite=Strict session cookie (Secure when configured); sign-out ends it: the old cookie gets 401")
    func signInAndOut() async throws {
        try await ServerFixture().withServer(configuration: try configuration()) { api, _ in
            let (cookie, setCookie) = try await signIn(api)
            let attributes = Set(setCookie.split(separator: ";").dropFirst().map { $0.trimmingCharacters(in: .whitespaces) })
            #expect(attributes == ["Path=/admin", "HttpOnly", "SameSite=Strict", "Max-Age=1800"], "\(setCookie)")
            let (other, _) = try await signIn(api)
            #expect(try await api.send(.get, "/admin/api/whoami", headers: cookie).body["admin"] as? String == "grace")

            let signOut = try await api.send(.delete, "/admin/api/session", headers: merged(cookie, Self.sameOrigin))
            #expect(signOut.status == 204)
            #expect(signOut.headers[.setCookie] == "spezi_admin=; Path=/admin; HttpOnly; SameSite=Strict; Max-Age=0")
            let after = try await api.send(.get, "/admin/api/whoami", headers: cookie)
            #expect(after.status == 401 && after.problemType == "urn:spezi-account-store:problem:admin-unauthenticated")
            #expect(try await api.send(.post, "/admin/api/verify", headers: merged(cookie, Self.sameOrigin)).status == 401)
            // Only that session ended; signing out again is harmless.
            #expect(try await api.send(.get, "/admin/api/whoami", headers: other).status == 200)
            #expect(try await api.send(.delete, "/admin/api/session", headers: cookie).status == 204)

            // Wrong credentials, bodies of the wrong kind, a cross-site sign-in.
            let wrong = try await api.send(
                .post, "/admin/api/session", json: #"{"name":"grace","password":"not the password"}"#, headers: Self.sameOrigin)
            #expect(wrong.status == 401 && wrong.headers[.setCookie] == nil)
            #expect(wrong.headers[.wwwAuthenticate]?.hasPrefix("Basic") == false, "a browser is not asked for Basic")
            #expect(try await api.send(.post, "/admin/api/session", json: #"{"name":"grace"}"#, headers: Self.sameOrigin).status == 400)
            let plain = try await api.client.execute(
                uri: "/admin/api/session", method: .post, headers: merged(Self.sameOrigin, [.contentType: "text/plain"]),
                body: .init(string: #"{"name":"grace","password":"\#(Self.password)"}"#))
            #expect(plain.status == .unsupportedMediaType && plain.headers[.setCookie] == nil)
            let bare = try await api.client.execute(
                uri: "/admin/api/session", method: .post, headers: Self.sameOrigin,
                body: .init(string: #"{"name":"grace","password":"\#(Self.password)"}"#))
            #expect(bare.status == .unsupportedMediaType && bare.headers[.setCookie] == nil)
            let crossSite = try await api.send(
                .post, "/admin/api/session", json: #"{"name":"grace","password":"\#(Self.password)"}"#, headers: [.origin: "https://evil.example"])
            #expect(crossSite.status == 403 && crossSite.headers[.setCookie] == nil)
        }
        try await ServerFixture().withServer(configuration: try configuration(secureCookies: true)) { api, _ in
            let (cookie, setCookie) = try await signIn(api)
            #expect(setCookie.hasSuffix("; Secure") && setCookie.contains("HttpOnly") && setCookie.contains("SameSite=Strict"))
            #expect(try await api.send(.get, "/admin/api/whoami", headers: cookie).status == 200)
        }
    }

    @Test("HTTP Basic is for scripts: refused cross-site, it opens no session; the page (the sign-in form) is served without one")
    func basicForScriptsOnly() async throws {
        try await ServerFixture().withServer(configuration: try configuration()) { api, _ in
            let script = try await api.send(.get, "/admin/api/whoami", headers: basic())
            #expect(script.status == 200 && script.body["admin"] as? String == "grace" && script.headers[.setCookie] == nil)
            let foreign: [HTTPFields] = [
                [.init("Sec-Fetch-Site")!: "cross-site"], [.init("Sec-Fetch-Site")!: "same-site"], [.origin: "https://evil.example"]
            ]
            for headers in foreign {
                #expect(try await api.send(.get, "/admin/api/whoami", headers: merged(basic(), headers)).status == 403, "\(headers)")
                #expect(try await api.send(.get, "/admin/", headers: merged(basic(), headers)).status == 403, "\(headers)")
            }
            // Same origin, Basic still works (a browser that has it cached), without a cookie.
            let browser = try await api.send(.get, "/admin/api/whoami", headers: merged(basic(), Self.sameOrigin))
            #expect(browser.status == 200 && browser.headers[.setCookie] == nil)

            // Without a session: scripts are asked for Basic, browsers are not (no password prompt).
            let unsigned = try await api.send(.get, "/admin/api/whoami")
            #expect(unsigned.status == 401 && unsigned.headers[.wwwAuthenticate]?.hasPrefix("Basic realm=") == true)
            let fromPage = try await api.send(.get, "/admin/api/whoami", headers: Self.sameOrigin)
            #expect(fromPage.status == 401 && fromPage.headers[.wwwAuthenticate]?.hasPrefix("AdminSession realm=") == true)

            // The page: the sign-in form, no data; opened from a link elsewhere too.
            for headers in [HTTPFields(), [.init("Sec-Fetch-Site")!: "cross-site", .init("Sec-Fetch-Mode")!: "navigate"]] {
                let page = try await api.send(.get, "/admin/", headers: headers)
                #expect(page.status == 200 && page.headers[.setCookie] == nil)
                #expect(page.text.contains(#"<form id="signin-form">"#) && page.text.contains(#"type="password""#))
                #expect(page.headers[.contentSecurityPolicy]?.contains("frame-ancestors 'none'") == true)
            }
            // A cross-site navigation to the API carries no Basic and no cookie, but is refused anyway.
            let navigation = try await api.send(.get, "/admin/api/log", headers: [.init("Sec-Fetch-Site")!: "cross-site"])
            #expect(navigation.status == 403)
        }
    }

    @Test("a 3,000-byte id or name in an admin path is 404, not a store error; a long query is 404")
    func longPathParameters() async throws {
        try await ServerFixture().withServer(configuration: try configuration()) { api, store in
            let long = String(repeating: "A", count: 3_000)
            for path in ["/admin/api/accounts/\(long)/history", "/admin/api/jobs/\(long)"] {
                let answer = try await api.send(.get, path, headers: basic())
                #expect(answer.status == 404 && !answer.text.contains("AAAA"), "\(answer.text.prefix(300))")
            }
            let rebuild = try await api.send(.post, "/admin/api/projections/\(long)/rebuild", headers: basic())
            #expect(rebuild.status == 404)
            // At the cap: the store answers (no such account).
            let atCap = try await api.send(.get, "/admin/api/accounts/\(String(repeating: "A", count: 128))/history", headers: basic())
            #expect(atCap.status == 404 && atCap.problemType == "urn:spezi-account-store:problem:no-such-account")
            let query = try await api.send(.get, "/admin/api/accounts?query=\(String(repeating: "q", count: 400))", headers: basic())
            #expect(query.status == 404 && query.problemType == "urn:spezi-account-store:problem:no-such-account")
            #expect(try await api.send(.get, "/admin/api/accounts?query=\(String(repeating: "q", count: 401))", headers: basic()).status == 400)
            #expect(try await store.adminActions().isEmpty)
        }
    }
}
