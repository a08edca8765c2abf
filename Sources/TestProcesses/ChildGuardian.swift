//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Ends what this process started when this process ends, however it ends: a test run that
/// crashes, or is killed with SIGKILL, leaves no server and no PostgreSQL cluster running.
///
/// On first use it starts a small watchdog (`/bin/sh`) whose standard input is the read end of a
/// pipe that only this process holds the write end of (close-on-exec, and no child gets it): when
/// this process ends, the kernel closes that end, the watchdog's `read` returns, and it ends every
/// process group still registered in this process's registry file (``ChildProcess`` registers each
/// child's group and removes it once the child is reaped) and runs every registered clean-up
/// command (``register(cleanup:id:)``: a PostgreSQL cluster's `pg_ctl stop -m immediate`). The
/// watchdog is in a session of its own, so nothing that ends this process's group ends it.
public final class ChildGuardian: Sendable {
    /// The guardian of this process, started on first use.
    public static let shared: Result<ChildGuardian, SpawnError> = {
        do {
            return .success(try ChildGuardian())
        } catch let error as SpawnError {
            return .failure(error)
        } catch {
            return .failure(SpawnError(description: "\(error)"))
        }
    }()

    /// glibc's `POSIX_SPAWN_SETSID` (2.26 and later), which Swift's Glibc module does not declare.
    private static let setSessionId: Int32 = 0x80

    /// The registry: one line per registration (`+group PGID`, `-group PGID`, `+cleanup ID
    /// COMMAND`, `-cleanup ID`), appended with `O_APPEND`.
    let registryPath: String
    private let registry: Int32
    /// The write end of the watchdog's pipe, held until this process ends.
    private let lifeline: Int32
    private let lock = Mutex(())

    private init() throws {
        registryPath =
            FileManager.default.temporaryDirectory.appendingPathComponent("spezi-children-\(getpid())-\(UInt32.random(in: 0...UInt32.max))").path
        registry = open(registryPath, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        guard registry >= 0 else { throw SpawnError(description: "cannot create \(registryPath): \(String(cString: strerror(errno)))") }
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else { throw SpawnError(description: "pipe: \(String(cString: strerror(errno)))") }
        // Only this process holds the write end: no child may inherit it.
        _ = fcntl(ends[1], F_SETFD, FD_CLOEXEC)
        lifeline = ends[1]
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, ends[0], 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        try Spawning.closeEverythingFrom(3, in: &actions)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        Spawning.resetSignals(in: &attributes)
        // A session of its own: a test that ends this process's group (or its terminal's) spares it.
        posix_spawnattr_setflags(&attributes, Int16(Self.setSessionId | Int32(POSIX_SPAWN_SETSIGDEF) | Int32(POSIX_SPAWN_SETSIGMASK)))
        let words: [String] = ["/bin/sh", "-c", Self.watchdog, "spezi-child-guardian", registryPath]
        let argv = words.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, "/bin/sh", &actions, &attributes, argv, environ)
        close(ends[0])
        guard spawned == 0 else { throw SpawnError(description: "cannot start the child guardian: \(String(cString: strerror(spawned)))") }
        // Nobody waits for the watchdog: it outlives this process by design. A thread reaps it
        // should it end first (it does not, but a zombie would stay for this process's life).
        let watchdog = pid
        Thread.detachNewThread {
            var status: Int32 = 0
            while waitpid(watchdog, &status, 0) < 0 && errno == EINTR {}
        }
    }

    /// The watchdog: waits for the end of its standard input (this process's end), then ends the
    /// registered groups and runs the registered clean-ups that were not withdrawn.
    private static let watchdog = #"""
        registry="$1"
        while read -r _; do :; done
        awk '$1=="+group"{g[$2]=1} $1=="-group"{delete g[$2]} END{for (k in g) print k}' "$registry" |
            while read -r group; do kill -KILL -"$group" 2>/dev/null; done
        awk '$1=="+cleanup"{id=$2; sub(/^[^ ]+ [^ ]+ /, ""); c[id]=$0} $1=="-cleanup"{delete c[$2]} END{for (k in c) print c[k]}' "$registry" |
            while read -r command; do sh -c "$command" >/dev/null 2>&1; done
        rm -f "$registry"
        """#

    private func append(_ line: String) {
        lock.withLock { _ in
            let bytes = Array((line + "\n").utf8)
            _ = bytes.withUnsafeBytes { write(registry, $0.baseAddress, $0.count) }
        }
    }

    /// Registers the process group `group` (a child's id, as ``ChildProcess`` starts it).
    func register(group: pid_t) { append("+group \(group)") }

    /// Withdraws `group` once its leader was reaped.
    func unregister(group: pid_t) { append("-group \(group)") }

    /// Registers a shell command to run if this process ends before ``withdraw(cleanup:)``
    /// withdraws it (one line, no newline in it).
    ///
    /// - Parameters:
    ///   - command: A command for `/bin/sh -c`.
    ///   - id: A word naming it (no white space).
    public func register(cleanup command: String, id: String) {
        append("+cleanup \(id) \(command.replacingOccurrences(of: "\n", with: " "))")
    }

    /// Withdraws the clean-up `id`: what it would undo is undone already.
    public func withdraw(cleanup id: String) { append("-cleanup \(id)") }

    /// Reaps `pid` when it ends (a child nobody waited for), then withdraws its group.
    func adopt(_ pid: pid_t) {
        Thread.detachNewThread { [self] in
            var status: Int32 = 0
            while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
            unregister(group: pid)
        }
    }

    /// Quotes `word` for `/bin/sh`.
    public static func quoted(_ word: String) -> String {
        "'" + word.replacingOccurrences(of: "'", with: #"'\''"#) + "'"
    }
}
