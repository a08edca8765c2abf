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
    /// belief): everything the group touches that the report leaves out is absent from the log.
    mutating func learn(_ report: AppendSnapshot, ids: some Sequence<UUID>, streams: some Sequence<String>, claims: some Sequence<String>) {
        head = report.head
        known = [:]
        for id in ids { if let found = report.known[id] { known[id] = found } }
        for stream in streams { versions[stream] = report.versions[stream] }
        for claim in claims { owners[claim] = report.owners[claim] }
    }

    /// Forgets what no later group needs: the ids, and everything once the maps grow past the limit.
    mutating func trim() {
        known = [:]
        if versions.count > Self.rememberedLimit { versions = [:] }
        if owners.count > Self.rememberedLimit { owners = [:] }
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

    init(_ appends: [CheckedAppend], snapshot: AppendSnapshot) {
        head = Int64(snapshot.head.position)
        headHash = snapshot.head.hash
        let streamSet = Set(appends.map(\.streamID))
        streams = Array(streamSet)
        versions = streams.map { Int64(snapshot.versions[$0] ?? 0) }
        let idSet = Set(appends.flatMap { $0.events.map(\.eventID) })
        ids = Array(idSet)
        knownIDs = Int64(idSet.count { snapshot.known[$0] != nil })
        let claims = appends.reduce(into: Set<String>()) { $0.formUnion($1.claims.union($1.releases)) }
        var free: [String] = []
        var owned: [String] = []
        var owners: [String] = []
        for claim in claims {
            if let owner = snapshot.owners[claim] {
                owned.append(claim)
                owners.append(owner)
            } else {
                free.append(claim)
            }
        }
        (freeClaims, ownedClaims, self.owners) = (free, owned, owners)
    }

    var claims: [String] { freeClaims + ownedClaims }
}

/// Each append of a group decided against a snapshot, and the rows and claim changes to write.
struct GroupDecision {
    var outcomes: [Result<AppendResult, any Error>] = []
    var rows = RecordRows()
    var changedClaims: Set<String> = []
    /// The snapshot as it is once the group's records are written.
    var after: AppendSnapshot
    let startPosition: UInt64

    var writes: Bool { after.head.position > startPosition }
    /// The claims the group frees, sorted.
    var released: [String] { changedClaims.filter { after.owners[$0] == nil }.sorted() }
    /// The claims the group takes, with their new owners, sorted.
    var taken: [(claim: String, owner: String)] {
        changedClaims.compactMap { claim in after.owners[claim].map { (claim, $0) } }.sorted { $0.claim < $1.claim }
    }

    init(_ appends: [CheckedAppend], snapshot: AppendSnapshot, now: Int64) {
        after = snapshot
        startPosition = snapshot.head.position
        for append in appends {
            outcomes.append(Result { try decide(append, now: now) })
        }
    }

    private mutating func decide(_ append: CheckedAppend, now: Int64) throws -> AppendResult {
        // An event id already in the log makes this a retry: answer with the original positions.
        let found = append.events.compactMap { after.known[$0.eventID] }
        if let first = found.first {
            let positions = found.map(\.position)
            guard found.count == append.events.count, let last = positions.last, positions == Array(first.position...last) else {
                let index = append.events.firstIndex { after.known[$0.eventID] != nil }!
                throw EventLogError.duplicateEventID(append.events[index].eventID, existingPosition: first.position)
            }
            return AppendResult(positions: first.position...last, streamVersion: found.last!.version, wasDuplicate: true)
        }
        let current = after.versions[append.streamID] ?? 0
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
            if let owner = after.owners[claim], owner != append.streamID { throw EventLogError.claimTaken(claim, owner: owner) }
        }
        for release in append.releases where !append.claims.contains(release) && after.owners[release] == append.streamID {
            after.owners[release] = nil
            changedClaims.insert(release)
        }
        for claim in append.claims where after.owners[claim] != append.streamID {
            after.owners[claim] = append.streamID
            changedClaims.insert(claim)
        }
        var head = after.head
        let first = head.position + 1
        var version = current
        for (index, event) in append.events.enumerated() {
            // Never earlier than the record before it, so times never decrease along positions.
            let timestamp = max(append.timestamps?[index] ?? now, head.timestamp)
            version += 1
            let position = head.position + 1
            let encoded = RecordFormat.encode(
                position: position, streamVersion: version, timestampMicros: timestamp, streamID: append.streamID, event: event,
                pairs: append.metadataPairs[index], size: append.sizes[index], previous: head.hash)
            rows.add(
                position: position, streamID: append.streamID, version: version, timestamp: timestamp, event: event,
                metadata: RecordFormat.encodeMetadata(append.metadataPairs[index]), crc: encoded.crc, hash: encoded.hash)
            after.known[event.eventID] = (position, version)
            head = AppendSnapshot.Head(position: position, hash: encoded.hash, timestamp: timestamp)
        }
        after.head = head
        after.versions[append.streamID] = version
        return AppendResult(positions: first...head.position, streamVersion: version, wasDuplicate: false)
    }
}

/// The columns of the records a group inserts, written with one statement.
struct RecordRows {
    var positions: [Int64] = []
    var streams: [String] = []
    var versions: [Int64] = []
    var timestamps: [Int64] = []
    var ids: [UUID] = []
    var types: [String] = []
    var schemaVersions: [Int32] = []
    var metadata: [ByteBuffer] = []
    var payloads: [ByteBuffer] = []
    var crcs: [Int32] = []
    var hashes: [ByteBuffer] = []

    mutating func add(
        position: UInt64, streamID: String, version: UInt64, timestamp: Int64, event: ProposedEvent, metadata pairs: [UInt8], crc: UInt32,
        hash: ChainHash
    ) {
        positions.append(Int64(position))
        streams.append(streamID)
        versions.append(Int64(version))
        timestamps.append(timestamp)
        ids.append(event.eventID)
        types.append(event.type)
        schemaVersions.append(Int32(bitPattern: event.schemaVersion))
        metadata.append(ByteBuffer(bytes: pairs))
        payloads.append(ByteBuffer(data: event.payload))
        crcs.append(Int32(bitPattern: crc))
        hashes.append(ByteBuffer(bytes: hash.bytes))
    }
}
