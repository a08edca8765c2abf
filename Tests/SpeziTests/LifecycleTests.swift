//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Spezi
import Synchronization
import Testing

final class ShutdownLog: Sendable {
    let names = Mutex<[String]>([])
}

final class Storage: Module, LifecycleHandler, DefaultInitializable {
    nonisolated(unsafe) static var log: ShutdownLog?
    init() {}
    func applicationWillTerminate() async { Self.log?.names.withLock { $0.append("Storage") } }
}

final class Frontend: Module, LifecycleHandler {
    @Dependency(Storage.self) var storage
    let log: ShutdownLog
    init(log: ShutdownLog) { self.log = log }
    func applicationWillTerminate() async { log.names.withLock { $0.append("Frontend") } }
}

final class LifecycleDelegate: SpeziAppDelegate {
    let log: ShutdownLog
    init(log: ShutdownLog) {
        self.log = log
        super.init()
    }
    override var configuration: Configuration {
        Configuration { Frontend(log: log) }
    }
}

@Suite("Lifecycle: the counterpart of applicationWillTerminate", .serialized)
struct LifecycleTests {
    @Test("applicationWillTerminate reaches every LifecycleHandler once, dependents before their dependencies")
    func shutdownOrder() async throws {
        let log = ShutdownLog()
        Storage.log = log
        defer { Storage.log = nil }
        let delegate = LifecycleDelegate(log: log)
        _ = try await delegate.boot()
        await delegate.applicationWillTerminate()
        await delegate.applicationWillTerminate()
        #expect(log.names.withLock { $0 } == ["Frontend", "Storage"])
    }
}

private final class LaunchRecorder: Module, LifecycleHandler {
    @Dependency var storage = LaunchStorage()
    let log: ShutdownLog
    init(log: ShutdownLog) { self.log = log }
    func configure() { log.names.withLock { $0.append("configure Recorder") } }
    func willFinishLaunchingWithOptions() async { log.names.withLock { $0.append("launch Recorder") } }
}

private final class LaunchStorage: Module, LifecycleHandler {
    static let log = ShutdownLog()
    func willFinishLaunchingWithOptions() async { Self.log.names.withLock { $0.append("launch Storage") } }
}

@Suite("Lifecycle: the counterpart of willFinishLaunchingWithOptions")
struct LaunchTests {
    @Test("willFinishLaunchingWithOptions reaches every LifecycleHandler after all are configured, dependencies first")
    func launchOrder() async throws {
        let log = ShutdownLog()
        let recorder = LaunchRecorder(log: log)
        let runtime = SpeziRuntime(configuration: Configuration { recorder })
        try await runtime.boot()
        #expect(log.names.withLock { $0 } == ["configure Recorder", "launch Recorder"])
        #expect(LaunchStorage.log.names.withLock { $0 } == ["launch Storage"])
        // the termination hook has a default: a module implementing only the launch hook stops quietly
        await runtime.shutdown()
        #expect(log.names.withLock { $0.count } == 2)
    }
}
