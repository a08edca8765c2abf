//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

/// Who keeps a module loaded with ``SpeziRuntime/loadModule(_:ownership:)`` alive.
public enum ModuleOwnership: Sendable, Hashable {
    /// The runtime keeps a strong reference: the module stays until it is unloaded.
    case spezi
    /// The caller owns the module; the runtime keeps only a weak reference. When the last outside
    /// reference goes, the module is gone from ``SpeziRuntime/modules``, optional dependencies on it
    /// read the next loaded module of its type at once (or `nil`), what it provided with ``Provide``
    /// is no longer collected, and what was loaded on its behalf alone goes with it, as with
    /// ``SpeziRuntime/unloadModule(_:)``. A required dependency of another module keeps it alive, as
    /// in upstream Spezi.
    case external
}
