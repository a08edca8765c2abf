//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
import Testing

@testable import SpeziAccountStore

private let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

/// A kind as a document describes it: its name, its schema version (when the document gives one)
/// and its fields' names and types.
private struct DescribedKind: Equatable, CustomStringConvertible {
    let name: String
    let schemaVersion: UInt32?
    let fields: [String]

    var description: String { "\(name) v\(schemaVersion.map(String.init) ?? "?"): \(fields.joined(separator: ", "))" }
}

@Suite("The event catalogue")
struct EventCatalogueTests {
    /// The catalogue as the documents should describe it (fields as `type name`, FORMAT.md's words).
    private static func catalogue(versions: Bool) -> [DescribedKind] {
        AccountEvent.Kind.allCases.map { kind in
            DescribedKind(
                name: kind.name, schemaVersion: versions ? kind.declaration.schemaVersion : nil,
                fields: kind.declaration.fields.map { "\($0.type.rawValue) \($0.name)" })
        }
    }

    @Test("each kind is declared once, in case order, under a name of its own that finds it again")
    func declarations() {
        #expect(AccountEvent.Kind.catalogue.count == AccountEvent.Kind.allCases.count)
        for (index, kind) in AccountEvent.Kind.allCases.enumerated() {
            #expect(Int(kind.rawValue) == index)
            #expect(AccountEvent.Kind(name: kind.name) == kind)
            #expect(AccountEvent.currentSchemaVersions[kind.name] == kind.declaration.schemaVersion)
        }
        #expect(Set(AccountEvent.Kind.allCases.map(\.name)).count == AccountEvent.Kind.allCases.count)
        #expect(AccountEvent.currentSchemaVersions.count == AccountEvent.Kind.allCases.count)
    }

    @Test("a kind sets a user id (a field for the view) exactly when it takes or moves a claim")
    func claimsAndRoles() {
        for kind in AccountEvent.Kind.allCases {
            let setsUserId = kind.declaration.fields.contains { $0.role == .userId }
            #expect(setsUserId == [.takes, .moves].contains(kind.declaration.userIdClaim), "\(kind.name)")
        }
    }

    @Test("every kind has a sample, which encodes to its declared fields and is read by its view as decoded")
    func samplesFollowTheirDeclarations() throws {
        let samples = AccountEventCodingTests.samples
        #expect(Set(samples.compactMap(\.kind)) == Set(AccountEvent.Kind.allCases), "a kind without a sample in AccountEventCodingTests")
        for sample in samples {
            let kind = try #require(sample.kind)
            let payload = sample.encodedPayload()
            try payload.withUnsafeBytes { bytes in
                let fields = try kind.declaration.readFields(bytes)
                #expect(fields.map(\.field) == kind.declaration.fields)
                let view = try AccountEventView(kind, payload: bytes)
                #expect(view.userId == sample.userIdSet, "\(kind.name)")
                #expect(try view.event() == sample)
            }
            #expect(sample.carriesPersonalData == kind.declaration.carriesPersonalData)
        }
    }

    @Test("FORMAT.md's table of event types lists every kind, with its schema version and its fields")
    func formatDocumentTable() throws {
        let text = try String(contentsOf: repositoryRoot.appendingPathComponent("FORMAT.md"), encoding: .utf8)
        let described = try Self.formatTable(text)
        #expect(
            described == Self.catalogue(versions: true), "FORMAT.md, \"Event types\": \(Self.difference(described, Self.catalogue(versions: true)))")
    }

    @Test("FORMAT.md names exactly the kinds that carry personal data as sealed")
    func formatDocumentSealedKinds() throws {
        let text = try String(contentsOf: repositoryRoot.appendingPathComponent("FORMAT.md"), encoding: .utf8)
        // "… seals the payloads that carry personal data (`account.created`, …) with …"
        let section = try #require(text.range(of: "### Sealed payloads").map { String(text[$0.upperBound...]) })
        let lead = try #require(section.range(of: "carry personal data"))
        let open = try #require(section.range(of: "(", range: lead.upperBound..<section.endIndex))
        let close = try #require(section.range(of: ")", range: open.upperBound..<section.endIndex))
        let names = Self.backticked(String(section[open.upperBound..<close.lowerBound]))
        let sealed = AccountEvent.Kind.allCases.filter(\.declaration.carriesPersonalData).map(\.name)
        #expect(names == sealed)
    }

    @Test("Tools/format-check.py's table of account events lists every kind with its fields")
    func pythonCheckerTable() throws {
        let text = try String(contentsOf: repositoryRoot.appendingPathComponent("Tools/format-check.py"), encoding: .utf8)
        let described = try Self.pythonTable(text)
        #expect(
            described == Self.catalogue(versions: false),
            "format-check.py, ACCOUNT_EVENTS: \(Self.difference(described, Self.catalogue(versions: false)))")
    }

    @Test("the parsers find a kind that is missing, and a field that differs")
    func parsersNoticeDifferences() throws {
        let table = """
            ### Event types

            | type | schema version | payload fields, in order |
            | --- | --- | --- |
            | `a.one` | 2 | `string` reason (`x`, `y`), `varint` at (µs) |
            | `a.two` | 1 | (nothing) |

            """
        #expect(
            try Self.formatTable(table) == [
                DescribedKind(name: "a.one", schemaVersion: 2, fields: ["string reason", "varint at"]),
                DescribedKind(name: "a.two", schemaVersion: 1, fields: [])
            ])
        let python = """
            ACCOUNT_EVENTS = {
                "a.one": [("reason", "string"), ("passwordHash", "optional")],
                "a.two": [],
            }
            """
        #expect(
            try Self.pythonTable(python) == [
                DescribedKind(name: "a.one", schemaVersion: nil, fields: ["string reason", "optional string passwordHash"]),
                DescribedKind(name: "a.two", schemaVersion: nil, fields: [])
            ])
    }

    /// What a document says that the catalogue does not, in a line.
    private static func difference(_ described: [DescribedKind], _ declared: [DescribedKind]) -> String {
        let missing = declared.filter { kind in !described.contains { $0.name == kind.name } }.map(\.name)
        let unknown = described.filter { kind in !declared.contains { $0.name == kind.name } }.map(\.name)
        let differing = described.filter { kind in declared.contains { $0.name == kind.name && $0 != kind } }
        let order = described.map(\.name) == declared.map(\.name) ? "" : "; the kinds are in another order than the catalogue's"
        return "missing \(missing), not in the catalogue \(unknown), differing \(differing)" + order
    }

    // MARK: Reading the documents

    /// The rows of FORMAT.md's "Event types" table.
    private static func formatTable(_ text: String) throws -> [DescribedKind] {
        let lines = text.components(separatedBy: "\n")
        let heading = try #require(lines.firstIndex { $0.hasPrefix("### Event types") }, "no \"### Event types\" section")
        var rows: [DescribedKind] = []
        for line in lines[(heading + 1)...] {
            if line.hasPrefix("#") { break }
            guard line.hasPrefix("| `") else {
                if !rows.isEmpty { break }
                continue
            }
            let cells = line.split(separator: "|", omittingEmptySubsequences: false).dropFirst().dropLast()
                .map { $0.trimmingCharacters(in: .whitespaces) }
            // The fields cell may hold `|` nowhere, so there are exactly three cells.
            try #require(cells.count == 3, "a row of FORMAT.md's event table has \(cells.count) cells: \(line)")
            let fields = splitOutsideParentheses(cells[2]).compactMap { item -> String? in
                // "`type` name, then words or a parenthesis"; "(nothing …)" is no field.
                guard item.hasPrefix("`"), let close = item.dropFirst().firstIndex(of: "`") else { return nil }
                let type = item[item.index(after: item.startIndex)..<close]
                let name = item[item.index(after: close)...].split(separator: " ").first.map(String.init) ?? ""
                return "\(type) \(name)"
            }
            rows.append(DescribedKind(name: cells[0].trimmingCharacters(in: ["`"]), schemaVersion: UInt32(cells[1]), fields: fields))
        }
        return rows
    }

    /// The entries of format-check.py's `ACCOUNT_EVENTS`, with its type words turned into FORMAT.md's.
    private static func pythonTable(_ text: String) throws -> [DescribedKind] {
        let start = try #require(text.range(of: "ACCOUNT_EVENTS = {"), "no ACCOUNT_EVENTS table").upperBound
        let end = try #require(text.range(of: "\n}", range: start..<text.endIndex)).lowerBound
        let words = ["optional": "optional string"]
        let entry = /^\s*"([^"]+)":\s*\[(.*)\],?\s*$/
        let field = /\("([^"]+)",\s*"([^"]+)"\)/
        return try text[start..<end].split(separator: "\n").compactMap { line in
            guard let match = try entry.wholeMatch(in: String(line)) else { return nil }
            let fields = String(match.2).matches(of: field).map { "\(words[String($0.2)] ?? String($0.2)) \($0.1)" }
            return DescribedKind(name: String(match.1), schemaVersion: nil, fields: fields)
        }
    }

    /// `text` cut at the commas that are not inside parentheses, each piece trimmed.
    private static func splitOutsideParentheses(_ text: String) -> [String] {
        var pieces: [String] = []
        var current = ""
        var depth = 0
        for character in text {
            switch character {
            case "(": depth += 1
            case ")": depth -= 1
            case "," where depth == 0:
                pieces.append(current.trimmingCharacters(in: .whitespaces))
                current = ""
                continue
            default: break
            }
            current.append(character)
        }
        pieces.append(current.trimmingCharacters(in: .whitespaces))
        return pieces.filter { !$0.isEmpty }
    }

    /// The words between backticks, in order.
    private static func backticked(_ text: String) -> [String] {
        text.split(separator: "`", omittingEmptySubsequences: false).enumerated().filter { $0.offset % 2 == 1 }.map { String($0.element) }
    }
}
