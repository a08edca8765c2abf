//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
import Testing

@Suite("Account server: user ids under the normalization profile")
struct UserIdRouteTests {
    @Test("a refused user id is 422 invalid-value; a look-alike of a taken one is 409; its login reaches the account")
    func refusedAndLookAlike() async throws {
        try await ServerFixture().withServer { api, store in
            let (_, accountId) = try await api.signup("elise@x.org")
            let name = #""name":{"givenName":"Ada","familyName":"Lovelace"}"#
            let mixed = try await api.send(
                .post, "/v1/accounts", json: #"{"userId":"p\u0430ypal@x.org","password":"correct horse battery",\#(name)}"#)
            #expect(mixed.status == 422)
            #expect(mixed.problemType == "urn:spezi-account-store:problem:invalid-value")
            #expect(!mixed.text.contains("ypal"))
            let nul = try await api.send(
                .post, "/v1/accounts", json: #"{"userId":"ada\u0000@x.org","password":"correct horse battery",\#(name)}"#)
            #expect(nul.status == 422 && nul.problemType == "urn:spezi-account-store:problem:invalid-value")
            let fullwidth = try await api.send(
                .post, "/v1/accounts", json: #"{"userId":"\uFF45\uFF4C\uFF49\uFF53\uFF45@x.org","password":"correct horse battery",\#(name)}"#)
            #expect(fullwidth.status == 409 && fullwidth.problemType == "urn:spezi-account-store:problem:credentials-taken")
            let login = try await api.send(.post, "/v1/sessions", json: #"{"userId":"ELISE@\uFF58.org","password":"correct horse battery"}"#)
            #expect(login.status == 201 && login.token?.hasPrefix("\(accountId).") == true)
            #expect(try await eventTypes(store, accountId).first == "account.created")
        }
    }
}
