//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import EventLogProtocol
import Foundation

/// One append, validated and sized, on its way to a write transaction. A class: a group of 64
/// moves through the queue, the batch and the outcomes, and a struct of this many references
/// was retained and released field by field at every step.
// Unchecked Sendable: its fields are set by the appending task before it is queued and read by the writer thread after (the queue's lock orders the two).
final class AppendRequest: @unchecked Sendable {
    let streamID: String
    let expected: ExpectedVersion
    let events: [ProposedEvent]
    /// The records, encoded by the appender but for the fields the writer adds (position, stream
    /// version, timestamp, chain hash, CRC): `sizes[0]` bytes for the first event, then the next.
    let templates: [UInt8]
    let sizes: [Int]
    /// Unique keys this stream takes, and keys it gives up, in the same transaction.
    let claims: Set<String>
    let releases: Set<String>
    /// For imported events: each one's own time (µs since 1970) instead of the log's clock.
    let timestamps: [Int64]?
    /// The encoded size of all its records.
    var byteCount: Int { templates.count }
    init(
        streamID: String, expected: ExpectedVersion, events: [ProposedEvent], templates: [UInt8], sizes: [Int],
        claims: Set<String>, releases: Set<String>, timestamps: [Int64]?
    ) {
        self.streamID = streamID
        self.expected = expected
        self.events = events
        self.templates = templates
        self.sizes = sizes
        self.claims = claims
        self.releases = releases
        self.timestamps = timestamps
    }

    /// Called with the outcome after the commit (set when the request is queued, under the
    /// writer's lock; read by the writer thread only).
    var completion: (@Sendable (Result<AppendResult, any Error>) -> Void)?
    /// When it was queued (for the append-duration metric).
    var queuedAt: ContinuousClock.Instant?
    /// True on the last request of a part of a batch whose next part is being prepared: the
    /// writer waits a little for it rather than commit the batch in pieces.
    var moreFollows = false
}
