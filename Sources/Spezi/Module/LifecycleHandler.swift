//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

/// A module that wants to hear when the process starts and stops: the server-side counterparts of
/// the seed's `willFinishLaunchingWithOptions(_:launchOptions:)` and `applicationWillTerminate(_:)`.
/// Both have empty defaults; implement what you need.
///
/// - ``willFinishLaunchingWithOptions()``: after ``SpeziRuntime/boot()`` configured every module,
///   in configuration order (dependencies first). A server has no launch options.
/// - ``applicationWillTerminate()``: from ``SpeziRuntime/shutdown()``, in the reverse of the
///   configuration order (a module stops before the modules it depends on); each is awaited.
///
/// The scene hooks of upstream's protocol (foreground, background) have no counterpart on a server.
public protocol LifecycleHandler: Module {
    /// The runtime booted: every module is configured. Start work that needs the others running.
    func willFinishLaunchingWithOptions() async
    /// The runtime is stopping: finish work and release files and connections.
    func applicationWillTerminate() async
}

extension LifecycleHandler {
    /// The default does nothing.
    public func willFinishLaunchingWithOptions() async {}

    /// The default does nothing.
    public func applicationWillTerminate() async {}
}
