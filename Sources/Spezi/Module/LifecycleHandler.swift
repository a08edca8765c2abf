//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

/// A module that wants to hear when the runtime stops: the Linux counterpart of the seed's
/// `applicationWillTerminate(_:)`. ``SpeziRuntime/shutdown()`` calls it on every booted module
/// that conforms, in the reverse of the configuration order (a module stops before the modules it
/// depends on), and waits for each.
public protocol LifecycleHandler: Module {
    /// The runtime is stopping: finish work and release files and connections.
    func applicationWillTerminate() async
}
