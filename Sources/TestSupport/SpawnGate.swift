//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Starts child processes only while the test process has few enough open descriptors for
/// Foundation's `Process.run()` to list them safely.
///
/// On Linux, `Process.run()` of swift-corelibs-foundation (up to the Swift 6.3 releases) finds
/// the highest open descriptor by reading `/proc/self/fd` and copies each entry's whole 256-byte
/// `d_name` field, though an entry is 24 bytes. glibc reads the directory into a 32 KiB buffer:
/// once about 1,355 descriptors are open, the last entry of a full buffer sits within 256 bytes of
/// its end, the copy reads past the allocation, and the process dies of SIGSEGV when that memory
/// is not mapped (fixed upstream by swift-corelibs-foundation's pull request 5472). The whole
/// suite holds up to about 1,700 descriptors in its first minute (seventy stores and fifty servers
/// open at once), and a crash was seen there once in four runs. Below ``descriptorLimit`` the
/// listing's last entry ends at least 3 KiB before the buffer's end.
public enum SpawnGate {
    /// The most descriptors open when a child is started.
    public static let descriptorLimit = 1_200
    /// How long a start waits for the count to fall, at most; then it starts anyway and says so.
    public static let longestWait = Duration.seconds(90)
    static let pollInterval = Duration.milliseconds(50)

    /// The number of descriptors this process has open (without the one the count itself uses).
    public static func openDescriptors() -> Int {
        guard let directory = opendir("/proc/self/fd") else { return 0 }
        defer { closedir(directory) }
        var entries = 0
        // Only counted: an entry's name is never copied.
        while readdir(directory) != nil { entries += 1 }
        // ".", ".." and the listing's own descriptor.
        return max(entries - 3, 0)
    }

    static func isSafe() -> Bool { openDescriptors() < descriptorLimit }

    static func gaveUp(_ started: ContinuousClock.Instant) {
        let count = openDescriptors()
        print("SpawnGate: \(count) descriptors still open after \(ContinuousClock.now - started); starting the child anyway")
    }
}

extension Process {
    /// `run()`, once fewer than ``SpawnGate/descriptorLimit`` descriptors are open (see
    /// ``SpawnGate``): the wait suspends the caller, it holds no thread.
    public func runWhenSafe() async throws {
        let started = ContinuousClock.now
        while !SpawnGate.isSafe() {
            guard ContinuousClock.now - started < SpawnGate.longestWait else {
                SpawnGate.gaveUp(started)
                break
            }
            try await Task.sleep(for: SpawnGate.pollInterval)
        }
        try run()
    }

    /// `run()`, once fewer than ``SpawnGate/descriptorLimit`` descriptors are open, waiting on the
    /// calling thread: for code that already runs on a thread of its own (``offThePool(_:)``) or
    /// blocks it anyway.
    public func runWhenSafeBlocking() throws {
        let started = ContinuousClock.now
        while !SpawnGate.isSafe() {
            guard ContinuousClock.now - started < SpawnGate.longestWait else {
                SpawnGate.gaveUp(started)
                break
            }
            Thread.sleep(forTimeInterval: 0.05)
        }
        try run()
    }
}
