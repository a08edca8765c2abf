//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLogProtocol
import Foundation
import LogRecordFormat
import PostgresNIO

/// What an append group is decided against: the log's head and, for the group's event ids,
/// streams and claims, what the log holds. Either read under the head's lock, or this process's
/// belief, which the server checks before it writes (`PostgresAppendStatements.conditionalAppend`).
struct AppendSnapshot {
    struct Head {
        var position: UInt64
        var hash: ChainHash
        var timestamp: Int64
    }

    var head: Head
    /// Event ids already in the log, with their position and stream version.
    var known: [UUID: (position: UInt64, version: UInt64)] = [:]
    /// Stream versions; a stream missing here is believed to have no events.
    var versions: [String: UInt64] = [:]
    /// Claim owners; a claim missing here is believed to be free.
    var owners: [String: String] = [:]

    /// The most streams and claims remembered between groups: past it the belief starts over
    /// (a stream forgotten is believed new, and the server's refusal teaches its version again).
    static let rememberedLimit = 65_536

    /// Takes what the server reported for a group's ids, streams and claims (after it refused a
    /// belief, or under the head's lock): everything the group touches that the report leaves out
    /// is absent from the log.
    mutating func learn(_ report: AppendSnapshot, _ keys: GroupKeys) {
        head = report.head
        known = [:]
        for id in keys.ids { if let found = report.known[id] { known[id] = found } }
        for stream in keys.streams { versions[stream] = report.versions[stream] }
        for claim in keys.claims { owners[claim] = report.owners[claim] }
    }

    /// Takes what a committed group changed, and forgets what no later group needs: the ids, and
    /// everything once the maps grow past the limit.
    mutating func absorb(_ decision: GroupDecision) {
        head = decision.head
        known = [:]
        for (stream, version) in decision.versions { versions[stream] = version }
        for (claim, owner) in decision.owners { owners[claim] = owner }
        if versions.count > Self.rememberedLimit { versions = [:] }
        if owners.count > Self.rememberedLimit { owners = [:] }
    }
}

/// The event ids, streams and claims a group touches.
struct GroupKeys {
    let ids: [UUID]
    let streams: [String]
    let claims: [String]

    init(_ appends: [CheckedAppend]) {
        ids = Array(Set(appends.flatMap { $0.events.map(\.eventID) }))
        streams = Array(Set(appends.map(\.streamID)))
        claims = Array(appends.reduce(into: Set<String>()) { $0.formUnion($1.claims.union($1.releases)) })
    }
}

/// The beliefs a group was decided on, as the server checks them: the head's position and hash, each
/// stream's version, how many of the group's event ids are stored, and each claim's owner.
struct AppendBeliefs {
    let head: Int64
    let headHash: ChainHash
    let streams: [String]
    let versions: [Int64]
    let ids: [UUID]
    let knownIDs: Int64
    let freeClaims: [String]
    let ownedClaims: [String]
    let owners: [String]

    init(_ keys: GroupKeys, snapshot: borrowing AppendSnapshot) {
        head = Int64(snapshot.head.position)
        headHash = snapshot.head.hash
        streams = keys.streams
        versions = keys.streams.map { Int64(snapshot.versions[$0] ?? 0) }
        ids = keys.ids
        knownIDs = Int64(keys.ids.count { snapshot.known[$0] != nil })
        var free: [String] = []
        var owned: [String] = []
        var owners: [String] = []
        for claim in keys.claims {
            if let owner = snapshot.owners[claim] {
                owned.append(claim)
                owners.append(owner)
            } else {
                free.append(claim)
            }
        }
        (freeClaims, ownedClaims, self.owners) = (free, owned, owners)
    }
}

/// Each append of a group decided against a snapshot, the rows and claim changes to write, and
/// what the group changes, kept apart from the snapshot (which it never copies: a process's
/// beliefs may hold tens of thousands of streams).
struct GroupDecision {
    var outcomes: [Result<AppendResult, any Error>] = []
    var rows = RecordRows()
    /// The head once the group's records are written.
    var head: AppendSnapshot.Head
    let startPosition: UInt64
    /// The stream versions the group changes.
    var versions: [String: UInt64] = [:]
    /// The claim owners the group changes (a nil owner: the claim is freed).
    var owners: [String: String?] = [:]
    /// The event ids the group writes.
    private var written: [UUID: (position: UInt64, version: UInt64)] = [:]
    /// The claims the group frees, sorted.
    private(set) var released: [String] = []
    /// The claims the group takes, with their new owners, sorted.
    private(set) var taken: [(claim: String, owner: String)] = []
    /// Seals the group's records for their chain hashes and CRCs.
    private var sealer = RecordSealer()

    var writes: Bool { head.position > startPosition }

    init(_ appends: [CheckedAppend], on snapshot: borrowing AppendSnapshot, now: Int64) {
        head = snapshot.head
        startPosition = snapshot.head.position
        for append in appends {
            outcomes.append(Result { try decide(append, on: snapshot, now: now) })
        }
        released = owners.compactMap { claim, owner in owner == nil ? claim : nil }.sorted()
        taken = owners.compactMap { claim, owner in owner.map { (claim: claim, owner: $0) } }.sorted { $0.claim < $1.claim }
    }

    private func owner(of claim: String, on snapshot: borrowing AppendSnapshot) -> String? {
        if let changed = owners[claim] { return changed }
        return snapshot.owners[claim]
    }

    private mutating func decide(_ append: CheckedAppend, on snapshot: borrowing AppendSnapshot, now: Int64) throws -> AppendResult {
        // An event id already in the log makes this a retry: answer with the original positions.
        let found = append.events.compactMap { written[$0.eventID] ?? snapshot.known[$0.eventID] }
        if let first = found.first {
            let positions = found.map(\.position)
            guard found.count == append.events.count, let last = positions.last, positions == Array(first.position...last) else {
                let index = append.events.firstIndex { written[$0.eventID] != nil || snapshot.known[$0.eventID] != nil }!
                throw EventLogError.duplicateEventID(append.events[index].eventID, existingPosition: first.position)
            }
            return AppendResult(positions: first.position...last, streamVersion: found.last!.version, wasDuplicate: true)
        }
        let current = versions[append.streamID] ?? snapshot.versions[append.streamID] ?? 0
        switch append.expected {
        case .any: break
        case .noStream:
            guard current == 0 else { throw EventLogError.wrongExpectedVersion(stream: append.streamID, expected: append.expected, actual: current) }
        case let .exact(expected):
            guard current == expected else {
                throw EventLogError.wrongExpectedVersion(stream: append.streamID, expected: append.expected, actual: current == 0 ? nil : current)
            }
        }
        for claim in append.claims.sorted() {
            if let owner = owner(of: claim, on: snapshot), owner != append.streamID { throw EventLogError.claimTaken(claim, owner: owner) }
        }
        for release in append.releases where !append.claims.contains(release) && owner(of: release, on: snapshot) == append.streamID {
            owners.updateValue(nil, forKey: release)
        }
        for claim in append.claims where owner(of: claim, on: snapshot) != append.streamID {
            owners.updateValue(append.streamID, forKey: claim)
        }
        let first = head.position + 1
        var version = current
        for (index, event) in append.events.enumerated() {
            // Never earlier than the record before it, so times never decrease along positions.
            let timestamp = max(append.timestamps?[index] ?? now, head.timestamp)
            version += 1
            let position = head.position + 1
            let pairs = append.metadataPairs[index]
            let (hash, crc) = sealer.seal(
                position: position, streamVersion: version, timestampMicros: timestamp, streamID: append.streamID, event: event, pairs: pairs,
                size: append.sizes[index], previous: head.hash)
            rows.add(
                position: position, streamID: append.streamID, version: version, timestamp: timestamp, event: event,
                metadata: RecordFormat.encodeMetadata(pairs), crc: crc, hash: hash)
            written[event.eventID] = (position, version)
            head = AppendSnapshot.Head(position: position, hash: hash, timestamp: timestamp)
        }
        versions[append.streamID] = version
        return AppendResult(positions: first...head.position, streamVersion: version, wasDuplicate: false)
    }
}

/// The records a group inserts, written with one statement: the columns as they are bound, and
/// the values the checks before the write compare.
struct RecordRows {
    private(set) var positions: [Int64] = []
    private(set) var streams: [String] = []
    private(set) var versions: [Int64] = []
    private(set) var ids: [UUID] = []
    /// The first record's values (a group of one record is bound as single values).
    private(set) var first: (timestamp: Int64, type: String, schemaVersion: Int32, crc: Int32)?
    private(set) var columns = Columns()

    /// The eleven columns of `log_records`, in its order.
    struct Columns {
        var positions = EncodedColumn(of: .int8)
        var streams = EncodedColumn(of: .text)
        var versions = EncodedColumn(of: .int8)
        var timestamps = EncodedColumn(of: .int8)
        var ids = EncodedColumn(of: .uuid)
        var types = EncodedColumn(of: .text)
        var schemaVersions = EncodedColumn(of: .int4)
        var metadata = EncodedColumn(of: .bytea)
        var payloads = EncodedColumn(of: .bytea)
        var crcs = EncodedColumn(of: .int4)
        var hashes = EncodedColumn(of: .bytea)
    }

    mutating func add(
        position: UInt64, streamID: String, version: UInt64, timestamp: Int64, event: ProposedEvent, metadata pairs: [UInt8], crc: UInt32,
        hash: ChainHash
    ) {
        positions.append(Int64(position))
        streams.append(streamID)
        versions.append(Int64(version))
        ids.append(event.eventID)
        if first == nil { first = (timestamp, event.type, Int32(bitPattern: event.schemaVersion), Int32(bitPattern: crc)) }
        columns.positions.append(Int64(position))
        columns.streams.append(streamID)
        columns.versions.append(Int64(version))
        columns.timestamps.append(timestamp)
        columns.ids.append(event.eventID)
        columns.types.append(event.type)
        columns.schemaVersions.append(Int32(bitPattern: event.schemaVersion))
        columns.metadata.append(bytes: pairs)
        columns.payloads.append(bytes: event.payload)
        columns.crcs.append(Int32(bitPattern: crc))
        hash.withBytes { columns.hashes.append(bytes: $0) }
    }
}
