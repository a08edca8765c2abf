//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
import SpeziAccount
import Synchronization

/// What a headless app refuses.
public enum HeadlessAppError: Error, Sendable, Equatable, CustomStringConvertible {
    /// `submitSignupForm` or a form step without an open signup form.
    case noSignupForm
    /// `closeSignupForm(discardChangesIfAsked: false)` on a form with entries.
    case unsavedChanges
    /// `updateGenderIdentity(from:to:)` found another identity selected than `from`.
    case unexpectedGenderIdentity(found: GenderIdentity?)
    /// An account-overview step without a signed-in account.
    case notSignedIn

    /// A one-line, human-readable description.
    public var description: String {
        switch self {
        case .noSignupForm: "no signup form is open"
        case .unsavedChanges: "the signup form has entries: closing it would ask to discard them"
        case let .unexpectedGenderIdentity(found): "the gender identity picker shows \(found.map { "\($0)" } ?? "nothing")"
        case .notSignedIn: "no account is signed in"
        }
    }
}

/// The seed's XCTSpeziAccount helpers, headless: the steps a UI test takes on the app
/// (`login(email:password:)`, `fillSignupForm(email:password:name:genderIdentity:supplyDateOfBirth:)`,
/// `updateGenderIdentity(from:to:)`, `changeDateOfBirth()`, `closeSignupForm(discardChangesIfAsked:)`),
/// with the same names and parameters, driving any `UserIdPasswordAccountService` (the in-memory
/// one included) the way its forms would.
///
/// ```swift
/// let app = HeadlessAccountApp(service: service, account: account)
/// try await app.fillSignupForm(email: "lelandstanford@stanford.edu", password: "StanfordRocks123!",
///                              name: PersonNameComponents(givenName: "Leland", familyName: "Stanford"))
/// try await app.updateGenderIdentity(from: .preferNotToState, to: .male)
/// try await app.submitSignupForm()
/// ```
public final class HeadlessAccountApp<Service: UserIdPasswordAccountService>: Sendable {
    /// The service the forms call.
    public let service: Service
    /// The signed-in account (the service supplies its details).
    public let account: Account
    /// The open signup form's entries, or nil when none is open.
    private let form = Mutex<AccountDetails?>(nil)

    /// The date ``changeDateOfBirth()`` picks, as the seed's helper picks one in the date picker.
    public static var pickedDateOfBirth: Date { Date(timeIntervalSince1970: -1_230_768_000) }

    /// An app on `service`, whose signed-in account is `account`.
    ///
    /// - Parameters:
    ///   - service: the service the forms call.
    ///   - account: the account module the service supplies.
    public init(service: Service, account: Account) {
        self.service = service
        self.account = account
    }

    /// What the open signup form holds, or nil.
    public var signupForm: AccountDetails? { form.withLock { $0 } }

    // MARK: Login

    /// Logs in with an e-mail address and a password.
    ///
    /// - Parameters:
    ///   - email: the user id, an e-mail address.
    ///   - password: the password.
    /// - Throws: what the service's login throws, such as `AccountServiceError.wrongCredentials`.
    public func login(email: String, password: String) async throws {
        try await service.login(UserIdPasswordCredential(userId: email, password: password))
    }

    /// Logs in with a user name and a password.
    ///
    /// - Parameters:
    ///   - username: the user id, a user name.
    ///   - password: the password.
    /// - Throws: what the service's login throws, such as `AccountServiceError.wrongCredentials`.
    public func login(username: String, password: String) async throws {
        try await service.login(UserIdPasswordCredential(userId: username, password: password))
    }

    // MARK: Signup form

    /// Opens the signup form (if it is not open) and fills it: e-mail, password, name, a gender
    /// identity, and, with `supplyDateOfBirth`, the picked date of birth. Submit it with
    /// ``submitSignupForm()``.
    ///
    /// - Parameters:
    ///   - email: the user id.
    ///   - password: the password.
    ///   - name: the name, or nil to leave it as it is.
    ///   - genderIdentity: the gender identity, or nil to leave it as it is.
    ///   - supplyDateOfBirth: whether to pick ``pickedDateOfBirth`` as the date of birth.
    /// - Throws: never; it is `async throws` as the seed's helper is.
    public func fillSignupForm(
        email: String, password: String, name: PersonNameComponents? = nil, genderIdentity: GenderIdentity? = nil,
        supplyDateOfBirth: Bool = false
    ) async throws {
        form.withLock { form in
            var details = form ?? AccountDetails()
            details.userId = email
            details.password = password
            if let name { details.name = name }
            if let genderIdentity { details.genderIdentity = genderIdentity }
            if supplyDateOfBirth { details.dateOfBirth = Self.pickedDateOfBirth }
            form = details
        }
    }

    /// Submits the signup form to the service (its "Signup" button); the form closes when the
    /// service accepted it and stays open with its entries when it did not.
    ///
    /// - Throws: ``HeadlessAppError/noSignupForm`` when no form is open, or what the service's signup
    ///   throws (the form then stays open).
    public func submitSignupForm() async throws {
        guard let details = signupForm else { throw HeadlessAppError.noSignupForm }
        try await service.signup(details)
        form.withLock { $0 = nil }
    }

    /// Closes the signup form. A form with entries asks whether to discard them: with
    /// `discardChangesIfAsked` it does, otherwise closing is refused.
    ///
    /// - Parameter discardChangesIfAsked: whether to discard the form's entries when asked.
    /// - Throws: ``HeadlessAppError/unsavedChanges`` for a form with entries when
    ///   `discardChangesIfAsked` is false.
    public func closeSignupForm(discardChangesIfAsked: Bool = true) throws {
        try form.withLock { form in
            if let entries = form, !entries.keys.isEmpty, !discardChangesIfAsked { throw HeadlessAppError.unsavedChanges }
            form = nil
        }
    }

    // MARK: Signup form or account overview

    /// Changes the gender identity picker from `from` to `to`: on the open signup form, or else
    /// on the signed-in account's overview (an update through the service). A picker with nothing
    /// chosen shows `.preferNotToState`.
    ///
    /// - Parameters:
    ///   - from: the identity the picker must show now.
    ///   - to: the identity to pick.
    /// - Throws: ``HeadlessAppError/unexpectedGenderIdentity(found:)`` when the picker shows another
    ///   identity, ``HeadlessAppError/notSignedIn`` without a form and a signed-in account, or what the
    ///   service's update throws.
    public func updateGenderIdentity(from: GenderIdentity, to: GenderIdentity) async throws {
        let onForm = try form.withLock { form -> Bool in
            guard var details = form else { return false }
            let shown = details.genderIdentity ?? .preferNotToState
            guard shown == from else { throw HeadlessAppError.unexpectedGenderIdentity(found: details.genderIdentity) }
            details.genderIdentity = to
            form = details
            return true
        }
        guard !onForm else { return }
        guard let current = account.details else { throw HeadlessAppError.notSignedIn }
        let shown = current.genderIdentity ?? .preferNotToState
        guard shown == from else { throw HeadlessAppError.unexpectedGenderIdentity(found: current.genderIdentity) }
        var change = AccountDetails()
        change.genderIdentity = to
        try await service.updateAccountDetails(AccountModifications(modifiedDetails: change))
    }

    /// Picks ``pickedDateOfBirth`` as the date of birth: on the open signup form, or else on the
    /// signed-in account's overview.
    ///
    /// - Throws: ``HeadlessAppError/notSignedIn`` without a form and a signed-in account, or what the
    ///   service's update throws.
    public func changeDateOfBirth() async throws {
        let onForm = form.withLock { form -> Bool in
            guard var details = form else { return false }
            details.dateOfBirth = Self.pickedDateOfBirth
            form = details
            return true
        }
        guard !onForm else { return }
        guard account.details != nil else { throw HeadlessAppError.notSignedIn }
        var change = AccountDetails()
        change.dateOfBirth = Self.pickedDateOfBirth
        try await service.updateAccountDetails(AccountModifications(modifiedDetails: change))
    }
}
