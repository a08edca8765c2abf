//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//
// The subject of the constant-time test: checks one password against a stored hash whose key
// matches, differs in its first byte or differs in its last byte, many times over. Run under
// valgrind's callgrind with the comparison's instructions counted, the three counts must be equal;
// an early-exit comparison run the same way ("early-first", "early-last") shows that the method can
// tell the difference.
// Usage: timing-check <equal|first|last|early-first|early-last> [repetitions]

import Foundation
import SpeziAccountStore

let arguments = CommandLine.arguments
guard arguments.count >= 2, ["equal", "first", "last", "early-first", "early-last"].contains(arguments[1]) else {
    FileHandle.standardError.write(Data("usage: timing-check <equal|first|last|early-first|early-last> [repetitions]\n".utf8))
    exit(64)
}
let mode = arguments[1]
let repetitions = arguments.count > 2 ? Int(arguments[2]) ?? 50 : 50

/// The comparison constant time is measured against: it stops at the first differing byte.
@inline(never)
func earlyExitEquals(_ lhs: [UInt8], _ rhs: [UInt8]) -> Bool {
    guard lhs.count == rhs.count else { return false }
    for index in lhs.indices where lhs[index] != rhs[index] { return false }
    return true
}

/// `stored` with one byte of its key (the last `$` field, unpadded base64) changed.
func changingKey(of stored: String, at index: (Int) -> Int) -> String {
    var fields = stored.split(separator: "$", omittingEmptySubsequences: false).map(String.init)
    let encoded = fields[fields.count - 1]
    let padded = encoded + String(repeating: "=", count: (4 - encoded.count % 4) % 4)
    var key = [UInt8](Data(base64Encoded: padded)!)
    key[index(key.count)] ^= 0x01
    var changed = Data(key).base64EncodedString()
    if !encoded.hasSuffix("=") { changed = String(changed.prefix { $0 != "=" }) }
    fields[fields.count - 1] = changed
    return fields.joined(separator: "$")
}

do {
    let hasher = try PasswordHasher(parameters: ScryptParameters(logN: 4, blockSize: 1, parallelism: 1), allowingWeakParameters: true)
    let stored = try hasher.hash("correct horse battery staple", salt: Array(repeating: 7, count: PasswordHasher.saltLength))
    let target: String =
        switch mode {
        case "first", "early-first": changingKey(of: stored, at: { _ in 0 })
        case "last", "early-last": changingKey(of: stored, at: { $0 - 1 })
        default: stored
        }
    var matches = 0
    for _ in 0..<repetitions {
        if mode.hasPrefix("early") {
            let keyOf: (String) -> [UInt8] = { [UInt8](Data(base64Encoded: String($0.split(separator: "$").last!) + "=")!) }
            if earlyExitEquals(keyOf(stored), keyOf(target)) { matches += 1 }
        } else if try hasher.verify("correct horse battery staple", against: target) {
            matches += 1
        }
    }
    print("\(mode): \(matches) of \(repetitions) matched")
} catch {
    FileHandle.standardError.write(Data("timing-check: \(error)\n".utf8))
    exit(1)
}
