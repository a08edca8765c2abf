#!/usr/bin/env python3
# SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
# SPDX-License-Identifier: MIT
"""Reads an event log with nothing but Python's `lmdb` package and FORMAT.md.

Checks every record's CRC-32C, the SHA-256 hash chain, gap-free positions and both indexes (the
records after `indexed-through`, the unindexed tail, against the stream versions before them).
Exit status: 0 intact, 1 a problem was found (its position is printed), 2 the log cannot be read.

    python3 Tools/format-check.py LOG_DIR            # summary
    python3 Tools/format-check.py --json LOG_DIR     # every record as one JSON object per line
    python3 Tools/format-check.py --json --accounts STORE_DIR/log
                                                     # ... with account payloads decoded ("event")
"""
import argparse
import hashlib
import json
import struct
import sys
import uuid

try:
    import lmdb
except ImportError:
    sys.exit("format-check: the Python package 'lmdb' is missing (pip install lmdb)")

FORMAT_VERSION = 2
# Format 1 had no unindexed tail: its indexes hold every record.
READABLE_VERSIONS = (1, 2)


def _crc32c_table():
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
        table.append(crc)
    return table


_CRC32C_TABLE = _crc32c_table()


def crc32c(data):
    """CRC-32C (Castagnoli), bit-reflected, initial and final value 0xFFFFFFFF."""
    crc = 0xFFFFFFFF
    table = _CRC32C_TABLE
    for byte in data:
        crc = table[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


class Problem(Exception):
    def __init__(self, position, message):
        super().__init__(f"position {position}: {message}")
        self.position = position


def decode(position, value):
    """Checks one record's checksum and structure and returns its fields."""
    if len(value) < 82 + 10:
        raise Problem(position, f"record of {len(value)} bytes is too short")
    (stored_crc,) = struct.unpack_from(">I", value, 0)
    if crc32c(bytes(value[4:])) != stored_crc:
        raise Problem(position, "checksum mismatch")
    layout, flags, stored_position, version, micros = struct.unpack_from(">BBQQq", value, 36)
    if layout != 1:
        raise Problem(position, f"unknown record layout {layout}")
    if stored_position != position:
        raise Problem(position, f"record says position {stored_position}")
    event_id = uuid.UUID(bytes=bytes(value[62:78]))
    (schema_version,) = struct.unpack_from(">I", value, 78)
    offset = 82

    def take(count):
        nonlocal offset
        if offset + count > len(value):
            raise Problem(position, "record ends early")
        chunk = bytes(value[offset:offset + count])
        offset += count
        return chunk

    def string16():
        (length,) = struct.unpack(">H", take(2))
        return take(length).decode("utf-8")

    stream = string16()
    event_type = string16()
    (pair_count,) = struct.unpack(">H", take(2))
    metadata = {}
    for _ in range(pair_count):
        key = string16()
        metadata[key] = string16()
    (payload_length,) = struct.unpack(">I", take(4))
    payload = take(payload_length)
    if offset != len(value):
        raise Problem(position, f"{len(value) - offset} bytes after the payload")
    return {
        "position": position,
        "stream": stream,
        "streamVersion": version,
        "eventID": str(event_id).upper(),
        "type": event_type,
        "schemaVersion": schema_version,
        "timestampMicros": micros,
        "flags": flags,
        "metadata": metadata,
        "payloadHex": payload.hex(),
        "hashHex": bytes(value[4:36]).hex(),
    }


# The account store's payloads (FORMAT.md, "Account events"): the fields of each type, in order.
ACCOUNT_EVENTS = {
    "account.created": [("userId", "string"), ("passwordHash", "optional"), ("isAnonymous", "bool"), ("values", "values")],
    "account.anonymous-upgraded": [("userId", "string"), ("passwordHash", "optional"), ("values", "values")],
    "account.details-modified": [("modified", "values"), ("removed", "strings")],
    "account.password-changed": [("passwordHash", "string")],
    "account.userid-changed": [("old", "string"), ("new", "string")],
    "account.deleted": [],
    "auth.login-succeeded": [],
    "auth.login-failed": [("reason", "string")],
    "auth.logged-out": [],
    "auth.password-reset-requested": [("tokenHash", "string"), ("expiresAtMicros", "varint")],
    "auth.session-started": [("sessionHash", "string"), ("expiresAtMicros", "varint")],
    "auth.session-ended": [("sessionHash", "string"), ("reason", "string")],
    "external.details-modified": [("modified", "values"), ("removed", "strings")],
    "external.details-erased": [],
    "account.password-rehashed": [("passwordHash", "string")],
    "account.identity-linked": [("issuer", "string"), ("subject", "string")],
    "account.identity-unlinked": [("issuer", "string"), ("subject", "string")],
    "auth.session-client": [("sessionHash", "string"), ("address", "string"), ("userAgent", "string")],
    "auth.totp-enrolled": [("secret", "string"), ("algorithm", "string"), ("digits", "varint"), ("period", "varint"), ("recoveryCodeHashes", "strings")],
    "auth.totp-confirmed": [("step", "varint")],
    "auth.totp-used": [("step", "varint")],
    "auth.recovery-code-used": [("codeHash", "string")],
    "auth.totp-removed": [("reason", "string")],
    "auth.provider-token-stored": [("issuer", "string"), ("token", "string")],
    "auth.provider-token-revoked": [("issuer", "string")],
    "account.disabled": [("reason", "string")],
    "account.enabled": [("reason", "string")],
}


def decode_account_payload(position, event_type, payload):
    """Decodes an account event's payload field by field; None for a type that is not an account event."""
    fields = ACCOUNT_EVENTS.get(event_type)
    if fields is None:
        return None
    offset = 0

    def byte():
        nonlocal offset
        if offset >= len(payload):
            raise Problem(position, f"payload ends early at byte {offset}")
        offset += 1
        return payload[offset - 1]

    def varint():
        result = 0
        for shift in range(0, 70, 7):
            current = byte()
            result |= (current & 0x7F) << shift
            if current < 0x80:
                return result
        raise Problem(position, "varint longer than 10 bytes")

    def blob():
        nonlocal offset
        length = varint()
        if offset + length > len(payload):
            raise Problem(position, f"a length of {length} at byte {offset} passes the end of the payload")
        offset += length
        return payload[offset - length:offset]

    def boolean():
        value = byte()
        if value > 1:
            raise Problem(position, f"bool byte {value}")
        return value == 1

    readers = {
        "string": lambda: blob().decode("utf-8"),
        "optional": lambda: blob().decode("utf-8") if boolean() else None,
        "bool": boolean,
        "varint": varint,
        "strings": lambda: [blob().decode("utf-8") for _ in range(varint())],
        "values": lambda: {blob().decode("utf-8"): json.loads(blob()) for _ in range(varint())},
    }
    encoding = byte()
    if encoding == 2:
        # Sealed with the account's key (ChaCha20-Poly1305): 12-byte nonce, ciphertext, 16-byte tag.
        if len(payload) < 1 + 12 + 16:
            raise Problem(position, "sealed payload too short")
        return {"sealed": True}
    if encoding != 1:
        raise Problem(position, "unknown payload encoding version")
    event = {name: readers[kind]() for name, kind in fields}
    if offset != len(payload):
        raise Problem(position, f"{len(payload) - offset} bytes after the last payload field")
    return event


def check(path, emit):
    env = lmdb.open(path, max_dbs=8, readonly=True, lock=False, subdir=True)
    with env.begin() as txn:
        meta = env.open_db(b"meta", txn=txn, create=False)
        records = env.open_db(b"records", txn=txn, create=False)
        streams = env.open_db(b"streams", txn=txn, create=False)
        event_ids = env.open_db(b"event-ids", txn=txn, create=False)
        raw_version = txn.get(b"format-version", db=meta)
        if raw_version is None or len(raw_version) != 4:
            raise SystemExit(2)
        (version,) = struct.unpack(">I", raw_version)
        if version not in READABLE_VERSIONS:
            print(f"format version {version} is not one of {READABLE_VERSIONS}", file=sys.stderr)
            raise SystemExit(2)
        last = txn.cursor(db=records)
        head = struct.unpack(">Q", last.key())[0] if last.last() else 0
        raw_indexed = txn.get(b"indexed-through", db=meta)
        if raw_indexed is None:
            if version != 1:
                raise Problem(0, "format 2 without indexed-through")
            indexed = head
        else:
            (indexed,) = struct.unpack(">Q", raw_indexed)
        if indexed > head:
            raise Problem(head, f"indexed through {indexed}, past the last record")
        # The unindexed tail: each stream's versions must follow on from its indexed ones.
        tail_versions = {}
        previous = bytes(32)
        expected = 1
        for key, value in txn.cursor(db=records):
            (position,) = struct.unpack(">Q", key)
            if position != expected:
                raise Problem(expected, f"missing; the next record is at {position}")
            record = decode(position, value)
            computed = hashlib.sha256(previous + bytes(value[36:])).digest()
            if computed.hex() != record["hashHex"]:
                raise Problem(position, "hash chain broken")
            stream_key = record["stream"].encode() + b"\x00" + struct.pack(">Q", record["streamVersion"])
            if position <= indexed:
                if txn.get(stream_key, db=streams) != key:
                    raise Problem(position, "stream index disagrees")
                if txn.get(uuid.UUID(record["eventID"]).bytes, db=event_ids) != key:
                    raise Problem(position, "event-id index disagrees")
            else:
                if txn.get(stream_key, db=streams) is not None:
                    raise Problem(position, "a record of the unindexed tail is in the stream index")
                stream = record["stream"].encode()
                if stream not in tail_versions:
                    tail_versions[stream] = indexed_stream_version(txn, streams, stream)
                if record["streamVersion"] != tail_versions[stream] + 1:
                    raise Problem(position, "stream version does not follow on in the unindexed tail")
                tail_versions[stream] = record["streamVersion"]
            emit(record)
            previous = computed
            expected += 1
        count = expected - 1
        for name, db in (("streams", streams), ("event-ids", event_ids)):
            entries = txn.stat(db)["entries"]
            if entries != indexed:
                raise Problem(indexed, f"{indexed} indexed records but {entries} {name} entries")
    return count, previous.hex()


def indexed_stream_version(txn, streams, stream):
    """The stream's last version in the stream index, 0 when it has none there."""
    cursor = txn.cursor(db=streams)
    if not cursor.set_range(stream + b"\x01"):
        if not cursor.last():
            return 0
    elif not cursor.prev():
        return 0
    key = cursor.key()
    if len(key) == len(stream) + 9 and key.startswith(stream + b"\x00"):
        return struct.unpack(">Q", key[-8:])[0]
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("log", help="the log directory (holding data.mdb)")
    parser.add_argument("--json", action="store_true", help="print every record as a JSON line")
    parser.add_argument("--accounts", action="store_true", help="decode account event payloads too (key \"event\")")
    options = parser.parse_args()

    def emit(record):
        if options.accounts:
            record["event"] = decode_account_payload(record["position"], record["type"], bytes.fromhex(record["payloadHex"]))
        if options.json:
            print(json.dumps(record, sort_keys=True))
    try:
        count, head = check(options.log, emit)
    except Problem as problem:
        print(f"BAD {problem}", file=sys.stderr)
        sys.exit(1)
    except lmdb.Error as error:
        print(f"cannot read {options.log}: {error}", file=sys.stderr)
        sys.exit(2)
    print(f"OK {count} records, head hash {head}", file=sys.stderr)


if __name__ == "__main__":
    main()
