//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import SpeziAccountMacros
import SwiftSyntaxMacros
import SwiftSyntaxMacrosTestSupport
import XCTest

private let macros: [String: any Macro.Type] = ["AccountKey": AccountKeyMacro.self]

final class AccountKeyMacroTests: XCTestCase {
    func testFullArguments() {
        assertMacroExpansion(
            """
            extension AccountDetails {
                @AccountKey(id: "bio", name: "Biography", category: .personalDetails, options: .default, as: String.self, initial: .empty(""))
                public var biography: String?
            }
            """,
            expandedSource: """
                extension AccountDetails {
                    public var biography: String? {
                        get {
                            self[__Key_biography.self]
                        }
                        set {
                            self[__Key_biography.self] = newValue
                        }
                    }

                    public struct __Key_biography: AccountKey {
                        public typealias Value = String
                        public static let identifier: String = "bio"
                        public static let name: String = "Biography"
                        public static let category: AccountKeyCategory = .personalDetails
                        public static let options: AccountKeyOptions = .default
                        public static var initialValue: InitialValue<Value> {
                            .empty("")
                        }
                    }
                }
                """,
            macros: macros
        )
    }

    func testDefaultsAndInternalAccess() {
        assertMacroExpansion(
            """
            extension AccountDetails {
                @AccountKey(name: "Nickname", as: String.self)
                var nickname: String?
            }
            """,
            expandedSource: """
                extension AccountDetails {
                    var nickname: String? {
                        get {
                            self[__Key_nickname.self]
                        }
                        set {
                            self[__Key_nickname.self] = newValue
                        }
                    }

                    struct __Key_nickname: AccountKey {
                        typealias Value = String
                        static let identifier: String = "nickname"
                        static let name: String = "Nickname"
                        static let category: AccountKeyCategory = .other
                        static let options: AccountKeyOptions = .default
                    }
                }
                """,
            macros: macros
        )
    }

    func testOptionalSpellingAndComplexExpressions() {
        assertMacroExpansion(
            """
            extension AccountDetails {
                @AccountKey(id: nil, name: "Scores", category: .init(title: "Scores"), options: [.read, .write], as: [String: Int].self, initial: .default([:]))
                public var scores: Optional<[String : Int]>
            }
            """,
            expandedSource: """
                extension AccountDetails {
                    public var scores: Optional<[String : Int]> {
                        get {
                            self[__Key_scores.self]
                        }
                        set {
                            self[__Key_scores.self] = newValue
                        }
                    }

                    public struct __Key_scores: AccountKey {
                        public typealias Value = [String : Int]
                        public static let identifier: String = "scores"
                        public static let name: String = "Scores"
                        public static let category: AccountKeyCategory = .init(title: "Scores")
                        public static let options: AccountKeyOptions = [.read, .write]
                        public static var initialValue: InitialValue<Value> {
                            .default([:])
                        }
                    }
                }
                """,
            macros: macros
        )
    }

    func testQualifiedOptionalAndPackageAccess() {
        assertMacroExpansion(
            """
            extension AccountDetails {
                @AccountKey(id: "user.date-of_birth2", name: "Birthday", as: Date.self, initial: .empty(Date()))
                package var `default`: Swift.Optional<Date>
            }
            """,
            expandedSource: """
                extension AccountDetails {
                    package var `default`: Swift.Optional<Date> {
                        get {
                            self[__Key_default.self]
                        }
                        set {
                            self[__Key_default.self] = newValue
                        }
                    }

                    package struct __Key_default: AccountKey {
                        package typealias Value = Date
                        package static let identifier: String = "user.date-of_birth2"
                        package static let name: String = "Birthday"
                        package static let category: AccountKeyCategory = .other
                        package static let options: AccountKeyOptions = .default
                        package static var initialValue: InitialValue<Value> {
                            .empty(Date())
                        }
                    }
                }
                """,
            macros: macros
        )
    }

    func testWhitespaceDoesNotMatterForTypeComparison() {
        assertMacroExpansion(
            """
            extension AccountDetails {
                @AccountKey(name: "Tags", as: [ String ].self)
                var tags: [String]?
            }
            """,
            expandedSource: """
                extension AccountDetails {
                    var tags: [String]? {
                        get {
                            self[__Key_tags.self]
                        }
                        set {
                            self[__Key_tags.self] = newValue
                        }
                    }

                    struct __Key_tags: AccountKey {
                        typealias Value = [String]
                        static let identifier: String = "tags"
                        static let name: String = "Tags"
                        static let category: AccountKeyCategory = .other
                        static let options: AccountKeyOptions = .default
                    }
                }
                """,
            macros: macros
        )
    }
}
