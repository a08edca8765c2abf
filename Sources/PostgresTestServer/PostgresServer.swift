//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

internal import BlockingPool
import Foundation
import Synchronization
import TestProcesses

/// A throwaway PostgreSQL cluster for a test or a benchmark: `initdb` in a temporary directory, `pg_ctl start` on a
/// free port of 127.0.0.1, stopped and deleted by ``remove()`` (or when the process exits). Debian's `postgresql` package
/// provides the programs (`Tools/run.sh install-test-dependencies` installs it). As root, the
/// programs run as the `postgres` user, which owns the directory (initdb refuses root).
///
/// Starting, stopping and `psql` wait for a program to end: they run on threads of their own and
/// suspend the caller meanwhile, so that a test that starts a cluster never holds a thread of
/// Swift's cooperative pool (on two cores, two such waits would stall every other test).
public final class PostgresServer: Sendable {
    /// The cluster's folder (data in `data/`, the socket and the server log beside it).
    public let directory: URL
    /// The TCP port on 127.0.0.1.
    public var port: Int { currentPort.load(ordering: .relaxed) }
    /// Set once the first start has found a port nothing else took meanwhile.
    private let currentPort: Atomic<Int>
    private let binaries: URL

    /// Why a server could not be started.
    public struct StartError: Error, CustomStringConvertible {
        /// What failed, with the program's output.
        public let description: String
    }

    /// Creates and starts a new cluster (about a second).
    public static func start(name: String = "test") async throws -> PostgresServer {
        try await programs.run {
            try PostgresServer(name: name) { server in
                try server.run("initdb", ["-D", server.dataPath, "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8"])
            }
        }
    }

    /// Creates and starts a hot standby of `primary`: a base backup taken with `pg_basebackup -R`
    /// (streaming replication, read-only queries allowed), on a port of its own.
    public static func startStandby(of primary: PostgresServer, name: String = "standby") async throws -> PostgresServer {
        try await programs.run {
            try PostgresServer(name: name) { server in
                try server.run(
                    "pg_basebackup",
                    ["-h", "127.0.0.1", "-p", "\(primary.port)", "-U", "postgres", "-D", server.dataPath, "-R", "-X", "stream", "--no-sync"])
            }
        }
    }

    /// The threads that wait for `initdb`, `pg_ctl` and `psql`.
    private static let programs = BlockingPool(threads: 4, name: "pg test server")

    private init(name: String, makeData: (PostgresServer) throws -> Void) throws {
        binaries = try Self.findBinaries()
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("pg-\(name)-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        currentPort = Atomic(try Self.freePort())
        if getuid() == 0 {
            try Self.run("/bin/chown", ["-R", "postgres:postgres", directory.path])
        }
        try makeData(self)
        try startServer(onFreshPort: true)
        // Stopped and deleted even if this process is killed: the child guardian runs this then.
        try? ChildGuardian.shared.get().register(cleanup: cleanupCommand, id: cleanupId)
        Self.running.withLock { running in
            if running.isEmpty { atexit { PostgresServer.removeAll() } }
            running.append(self)
        }
    }

    /// Every server this process started and has not removed: removed when the process exits, so
    /// that no test leaves a server behind.
    private static let running = Mutex<[PostgresServer]>([])

    private static func removeAll() {
        for server in running.withLock({ $0 }) { server.removeNow() }
    }

    private var dataPath: String { directory.appendingPathComponent("data").path }

    /// A URL for a log in database `postgres`, schema `schema`.
    public func url(schema: String = "spezi_account_log") -> String {
        "postgres://postgres@127.0.0.1:\(port)/postgres?schema=\(schema)&sslmode=disable"
    }

    /// Starts the (stopped) server again on the same port.
    public func start() async throws {
        try await Self.programs.run { [self] in try startServer() }
    }

    /// Starts the server. On its first start (`onFreshPort`), a port another process took between
    /// the probe and the server's bind (the tests start several servers at once) is replaced by a
    /// new one, up to four times.
    private func startServer(onFreshPort: Bool = false) throws {
        let logPath = directory.appendingPathComponent("server.log")
        var attempts = 0
        while true {
            // What the server logs from here on is this attempt's (the log is appended to).
            let logged = ((try? FileManager.default.attributesOfItem(atPath: logPath.path))?[.size] as? NSNumber)?.intValue ?? 0
            do {
                try run(
                    "pg_ctl",
                    [
                        "-D", dataPath, "-l", logPath.path, "-w", "-t", "60", "-o",
                        "-c listen_addresses=127.0.0.1 -p \(port) -k \(directory.path) -c fsync=on -c max_connections=200 -c log_lock_waits=on -c deadlock_timeout=1s -c log_min_duration_statement=2000",
                        "start"
                    ])
                return
            } catch {
                attempts += 1
                let log = (try? Data(contentsOf: logPath)).map { String(decoding: $0.dropFirst(logged), as: UTF8.self) } ?? ""
                guard onFreshPort, attempts < 5, log.contains("could not bind") else { throw error }
                currentPort.store(try Self.freePort(), ordering: .relaxed)
            }
        }
    }

    /// Stops the server: `fast` closes connections cleanly, `immediate` is a crash (no checkpoint;
    /// the server recovers from its WAL on the next start).
    public func stop(mode: String = "fast") async throws {
        try await Self.programs.run { [self] in try stopServer(mode: mode) }
    }

    private func stopServer(mode: String) throws {
        try run("pg_ctl", ["-D", dataPath, "-m", mode, "-w", "-t", "60", "stop"])
    }

    /// Stops the server and deletes the cluster, on a thread of its own: this returns at once
    /// (so it fits a `defer`). A server still stopping when the process exits is stopped then.
    public func remove() {
        Task { [self] in try? await Self.programs.run { [self] in removeNow() } }
    }

    private func removeNow() {
        try? stopServer(mode: "immediate")
        try? FileManager.default.removeItem(at: directory)
        try? ChildGuardian.shared.get().withdraw(cleanup: cleanupId)
        Self.running.withLock { $0.removeAll { $0 === self } }
    }

    private var cleanupId: String { "pg-" + directory.lastPathComponent }

    /// What the child guardian runs when this process ends without removing the cluster.
    private var cleanupCommand: String {
        let pgCtl = ChildGuardian.quoted(binaries.appendingPathComponent("pg_ctl").path)
        let stop = "\(pgCtl) -D \(ChildGuardian.quoted(dataPath)) -m immediate -w -t 20 stop"
        let asOwner = getuid() == 0 ? "/usr/sbin/runuser -u postgres -- \(stop)" : stop
        return "\(asOwner); rm -rf \(ChildGuardian.quoted(directory.path))"
    }

    /// Runs `psql` with `sql` and returns what it printed (unaligned, tuples only).
    public func psql(_ sql: String) async throws -> String {
        try await Self.programs.run { [self] in try psqlNow(sql) }
    }

    private func psqlNow(_ sql: String) throws -> String {
        try run(
            "psql",
            ["-h", "127.0.0.1", "-p", "\(port)", "-U", "postgres", "-d", "postgres", "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-c", sql])
    }

    @discardableResult
    private func run(_ program: String, _ arguments: [String]) throws -> String {
        let path = binaries.appendingPathComponent(program).path
        if getuid() == 0 {
            return try Self.run("/usr/sbin/runuser", ["-u", "postgres", "--", path] + arguments)
        }
        return try Self.run(path, arguments)
    }

    /// Runs a program and waits for it with `posix_spawn` and `waitpid`, its output in a file.
    /// Not Foundation's `Process`: it takes a child's end only when every descriptor it handed
    /// down is closed, and the server that `pg_ctl start` leaves running holds them for its life.
    /// For the same reason the program gets no descriptor of this process but its three standard
    /// ones: a server started while another test reads a child's output through a pipe would
    /// otherwise keep that pipe's write end open, and that test would wait for its end forever.
    @discardableResult
    private static func run(_ executable: String, _ arguments: [String]) throws -> String {
        let outputPath = FileManager.default.temporaryDirectory.appendingPathComponent("pg-output-\(UUID().uuidString)").path
        defer { unlink(outputPath) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        guard let closeFrom = closeFrom else {
            throw StartError(description: "this C library has no posix_spawn_file_actions_addclosefrom_np (glibc 2.34 or later has it)")
        }
        let closing = closeFrom(&actions, 3)
        guard closing == 0 else { throw StartError(description: "posix_spawn_file_actions_addclosefrom_np: \(String(cString: strerror(closing)))") }
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, executable, &actions, nil, argv, environ)
        guard spawned == 0 else { throw StartError(description: "cannot start \(executable): \(String(cString: strerror(spawned)))") }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        let text = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        let exitCode = (status & 0x7F) == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
        guard exitCode == 0 else {
            throw StartError(description: "\(executable) \(arguments.joined(separator: " ")) failed (\(exitCode)): \(text)")
        }
        return text
    }

    /// glibc's `posix_spawn_file_actions_addclosefrom_np`, which Swift's Glibc module does not
    /// declare (it sits behind `_GNU_SOURCE`): looked up once by name.
    private static let closeFrom: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32)? = {
        guard let symbol = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np") else { return nil }
        return unsafeBitCast(symbol, to: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32).self)
    }()

    /// The newest `/usr/lib/postgresql/<version>/bin`.
    private static func findBinaries() throws -> URL {
        let root = URL(fileURLWithPath: "/usr/lib/postgresql")
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: root.path)) ?? []).compactMap(Int.init).sorted()
        guard let newest = versions.last else {
            throw StartError(
                description: "no PostgreSQL server in /usr/lib/postgresql: run Tools/run.sh install-test-dependencies (apt-get install postgresql)")
        }
        return root.appendingPathComponent("\(newest)/bin")
    }

    /// A port that nothing listens on right now.
    private static func freePort() throws -> Int {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw StartError(description: "socket() failed") }
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, length) == 0 && getsockname(descriptor, $0, &length) == 0
            }
        }
        guard bound else { throw StartError(description: "cannot find a free port") }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
