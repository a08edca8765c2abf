//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A child process for tests and tools, with the shape of Foundation's `Process` (the tests used
/// that), started with `posix_spawn` instead:
///
/// - **No descriptor but its three standard ones** (`posix_spawn_file_actions_addclosefrom_np`),
///   whatever this process holds. Foundation's `Process.run` lists `/proc/self/fd` to close the
///   others and, in Swift 6.3.1, reads past its listing buffer once about 1,355 descriptors are
///   open (a crash seen in test runs); it is not used here.
/// - **Its own process group**, so that what it starts goes with it.
/// - **It dies with this process:** it is registered with the ``ChildGuardian``, which ends every
///   registered group that still runs when this process ends, however it ends (SIGKILL included).
public final class ChildProcess: Sendable {
    /// How a child ended.
    public enum TerminationReason: Sendable, Equatable {
        case exit
        case uncaughtSignal
    }

    private struct State {
        var executableURL: URL?
        var arguments: [String] = []
        var environment: [String: String]?
        var currentDirectoryURL: URL?
        var standardInput: Descriptor = .null
        var standardOutput: Descriptor = .inherit
        var standardError: Descriptor = .inherit
        var pid: pid_t = 0
        /// The raw `waitpid` status once the child was reaped.
        var status: Int32?
    }

    /// Where a standard stream of the child goes.
    private enum Descriptor: @unchecked Sendable {
        // Unchecked Sendable: FileHandle and Pipe are classes the child's set-up only reads the
        // descriptor of, before the child starts.
        case inherit
        case null
        case handle(FileHandle)
        case pipe(Pipe)

        func descriptor(reading: Bool) -> Int32? {
            switch self {
            case .inherit, .null: nil
            case let .handle(handle): handle.fileDescriptor
            case let .pipe(pipe): reading ? pipe.fileHandleForReading.fileDescriptor : pipe.fileHandleForWriting.fileDescriptor
            }
        }
    }

    private let state = Mutex(State())

    /// A child not started yet.
    public init() {}

    /// The program to run.
    public var executableURL: URL? {
        get { state.withLock { $0.executableURL } }
        set { state.withLock { $0.executableURL = newValue } }
    }

    /// Its arguments (without the program's own name).
    public var arguments: [String] {
        get { state.withLock { $0.arguments } }
        set { state.withLock { $0.arguments = newValue } }
    }

    /// Its environment; nil: this process's.
    public var environment: [String: String]? {
        get { state.withLock { $0.environment } }
        set { state.withLock { $0.environment = newValue } }
    }

    /// Its working folder; nil: this process's.
    public var currentDirectoryURL: URL? {
        get { state.withLock { $0.currentDirectoryURL } }
        set { state.withLock { $0.currentDirectoryURL = newValue } }
    }

    /// Its standard input: a `Pipe` (it reads the read end), a `FileHandle`, or nil for `/dev/null`.
    public var standardInput: Any? {
        get { nil }
        set { state.withLock { $0.standardInput = Self.descriptor(newValue, otherwise: .null) } }
    }

    /// Its standard output: a `Pipe` (it writes the write end), a `FileHandle`, or nil for this
    /// process's own.
    public var standardOutput: Any? {
        get { nil }
        set { state.withLock { $0.standardOutput = Self.descriptor(newValue, otherwise: .inherit) } }
    }

    /// Its standard error, as ``standardOutput``.
    public var standardError: Any? {
        get { nil }
        set { state.withLock { $0.standardError = Self.descriptor(newValue, otherwise: .inherit) } }
    }

    private static func descriptor(_ value: Any?, otherwise: Descriptor) -> Descriptor {
        switch value {
        case let pipe as Pipe: .pipe(pipe)
        case let handle as FileHandle: .handle(handle)
        default: otherwise
        }
    }

    /// Its process id (0 before it started).
    public var processIdentifier: Int32 { state.withLock { $0.pid } }

    /// Starts it. The write end of a pipe given as its output (the read end of one given as its
    /// input) is closed here afterwards, as Foundation's `Process` does, so reading to the end
    /// finishes when the child does.
    ///
    /// - Throws: ``SpawnError`` when it cannot be started.
    public func run() throws {
        let setup = state.withLock { $0 }
        guard let executable = setup.executableURL else { throw SpawnError(description: "no executable") }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        for (target, descriptor, reading) in [
            (Int32(0), setup.standardInput, true), (Int32(1), setup.standardOutput, false), (Int32(2), setup.standardError, false)
        ] {
            if let source = descriptor.descriptor(reading: reading) {
                posix_spawn_file_actions_adddup2(&actions, source, target)
            } else if case .null = descriptor {
                posix_spawn_file_actions_addopen(&actions, target, "/dev/null", reading ? O_RDONLY : O_WRONLY, 0)
            }
        }
        if let directory = setup.currentDirectoryURL {
            guard let changeDirectory = Spawning.changeDirectory else {
                throw SpawnError(description: "this C library has no posix_spawn_file_actions_addchdir_np")
            }
            let result = directory.path.withCString { changeDirectory(&actions, $0) }
            guard result == 0 else { throw SpawnError(description: "addchdir: \(String(cString: strerror(result)))") }
        }
        try Spawning.closeEverythingFrom(3, in: &actions)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // Its own process group, and the signals this process ignores or blocks back to normal.
        Spawning.resetSignals(in: &attributes)
        posix_spawnattr_setpgroup(&attributes, 0)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))
        let environment = (setup.environment ?? ProcessInfo.processInfo.environment).map { "\($0.key)=\($0.value)" }
        let argv = ([executable.path] + setup.arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup($0) } + [nil]
        defer {
            for pointer in argv { free(pointer) }
            for pointer in envp { free(pointer) }
        }
        var pid: pid_t = 0
        // The guardian runs before the first child does.
        let guardian = try ChildGuardian.shared.get()
        let spawned = posix_spawn(&pid, executable.path, &actions, &attributes, argv, envp)
        guard spawned == 0 else {
            throw SpawnError(description: "cannot start \(executable.path): \(String(cString: strerror(spawned)))")
        }
        guardian.register(group: pid)
        state.withLock { $0.pid = pid }
        // The child has its copies; ours of the ends it uses go (Foundation's Process does the same).
        if case let .pipe(pipe) = setup.standardOutput { try? pipe.fileHandleForWriting.close() }
        if case let .pipe(pipe) = setup.standardError, !Self.same(setup.standardError, setup.standardOutput) {
            try? pipe.fileHandleForWriting.close()
        }
        if case let .pipe(pipe) = setup.standardInput { try? pipe.fileHandleForReading.close() }
    }

    private static func same(_ left: Descriptor, _ right: Descriptor) -> Bool {
        if case let .pipe(first) = left, case let .pipe(second) = right { return first === second }
        return false
    }

    /// Whether it is running (started and not reaped).
    public var isRunning: Bool {
        reap(blocking: false)
        return state.withLock { $0.pid != 0 && $0.status == nil }
    }

    /// Waits for it to end (blocking: call it off Swift's cooperative pool).
    public func waitUntilExit() {
        reap(blocking: true)
    }

    /// Its exit status, or the signal that ended it.
    public var terminationStatus: Int32 {
        guard let status = state.withLock({ $0.status }) else { return 0 }
        return (status & 0x7F) == 0 ? (status >> 8) & 0xFF : status & 0x7F
    }

    /// Whether it exited or a signal ended it.
    public var terminationReason: TerminationReason {
        guard let status = state.withLock({ $0.status }) else { return .exit }
        return (status & 0x7F) == 0 ? .exit : .uncaughtSignal
    }

    /// Sends it SIGTERM.
    public func terminate() {
        signal(SIGTERM)
    }

    /// Sends `signal` to it (not to its group).
    public func signal(_ signal: Int32) {
        let pid = state.withLock { $0.status == nil ? $0.pid : 0 }
        if pid > 0 { kill(pid, signal) }
    }

    private func reap(blocking: Bool) {
        let pid = state.withLock { $0.status == nil ? $0.pid : 0 }
        guard pid > 0 else { return }
        var status: Int32 = 0
        var result: pid_t
        repeat {
            result = waitpid(pid, &status, blocking ? 0 : WNOHANG)
        } while result < 0 && errno == EINTR
        guard result == pid else { return }
        state.withLock { $0.status = status }
        try? ChildGuardian.shared.get().unregister(group: pid)
    }

    deinit {
        // A child nobody waited for is reaped when it ends (its group is ended with this process).
        let pid = state.withLock { $0.status == nil ? $0.pid : 0 }
        if pid > 0 { try? ChildGuardian.shared.get().adopt(pid) }
    }
}

/// Why a child could not be started.
public struct SpawnError: Error, CustomStringConvertible, Sendable {
    public let description: String
    public init(description: String) { self.description = description }
}

/// glibc's `posix_spawn` extensions that Swift's Glibc module does not declare (they sit behind
/// `_GNU_SOURCE`), looked up once by name.
enum Spawning {
    typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
    typealias ChangeDirectory = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, UnsafePointer<CChar>) -> Int32

    static let closeFrom: CloseFrom? = {
        guard let symbol = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np") else { return nil }
        return unsafeBitCast(symbol, to: CloseFrom.self)
    }()

    static let changeDirectory: ChangeDirectory? = {
        guard let symbol = dlsym(nil, "posix_spawn_file_actions_addchdir_np") else { return nil }
        return unsafeBitCast(symbol, to: ChangeDirectory.self)
    }()

    /// Closes every descriptor from `first` on in the child.
    /// Sets every signal's disposition back to its default and unblocks them all in the child
    /// (flags `POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK` make it take effect).
    static func resetSignals(in attributes: inout posix_spawnattr_t) {
        var defaults = sigset_t()
        sigfillset(&defaults)
        var empty = sigset_t()
        sigemptyset(&empty)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setsigmask(&attributes, &empty)
    }

    static func closeEverythingFrom(_ first: Int32, in actions: inout posix_spawn_file_actions_t) throws {
        guard let closeFrom else {
            throw SpawnError(description: "this C library has no posix_spawn_file_actions_addclosefrom_np (glibc 2.34 or later has it)")
        }
        let result = closeFrom(&actions, first)
        guard result == 0 else { throw SpawnError(description: "addclosefrom: \(String(cString: strerror(result)))") }
    }
}
