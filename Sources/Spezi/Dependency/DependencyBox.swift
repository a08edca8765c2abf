//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

/// The shared storage behind a Dependency; the runtime fills it while loading.
// Unchecked Sendable: its mutable state is held in `SpeziLock`s, written by the runtime while it loads.
final class DependencyBox: @unchecked Sendable {
    enum Kind {
        /// Needs a module of the type: a configured one, else the default instance, else a
        /// DefaultInitializable one created on demand.
        case required
        /// Takes a module of the type if one is loaded (else the default instance, if given).
        case optional
        /// Always loads the given instance and uses it.
        case load
        /// Always loads the given instances (`[any Module]`).
        case collection
    }

    /// A module an optional dependency may take, held weakly.
    private struct Candidate {
        weak var module: AnyObject?
    }

    private struct Injected {
        var strong: [any Module] = []
        /// For an optional dependency: the loaded modules it may take, the one it takes first. When
        /// that one is released, it takes the next one still alive, as upstream's does.
        var candidates: [Candidate] = []
        var isInjected = false
    }

    let kind: Kind
    /// The requested module type (not used for collections).
    let type: Any.Type?
    /// The instance to use when no module of the type is loaded (required and optional kinds).
    let makeDefault: (() -> any Module)?
    /// Creates a module of a DefaultInitializable type on demand (required kind only).
    let makeOnDemand: (() -> any Module)?
    /// The instances a `load` or collection dependency always loads.
    let instances: [any Module]
    private let injected = SpeziLock(Injected())

    init<M: Module>(kind: Kind, type: M.Type, default makeDefault: (() -> M)? = nil) {
        self.kind = kind
        self.type = M.self
        self.makeDefault = makeDefault.map { make in { make() } }
        if kind == .required, let initializable = M.self as? any (Module & DefaultInitializable).Type {
            self.makeOnDemand = { initializable.init() }
        } else {
            self.makeOnDemand = nil
        }
        self.instances = []
    }

    init<M: Module>(load instance: M) {
        self.kind = .load
        self.type = M.self
        self.makeDefault = nil
        self.makeOnDemand = nil
        self.instances = [instance]
    }

    init(instances: [any Module]) {
        self.kind = .collection
        self.type = nil
        self.makeDefault = nil
        self.makeOnDemand = nil
        self.instances = instances
    }

    var typeName: String {
        type.map(moduleName) ?? "[any Module]"
    }

    /// Whether `module` is of exactly the requested type (a subclass does not count, as upstream).
    func matches(_ module: any Module) -> Bool {
        guard let type else {
            return false
        }
        return ObjectIdentifier(Swift.type(of: module)) == ObjectIdentifier(type)
    }

    /// Whether the dependency keeps its module(s) alive and prevents unloading them.
    var isStrong: Bool { kind != .optional }

    /// The injected modules: all of a collection, one for the other kinds (none for an absent
    /// optional dependency).
    var modules: [any Module] {
        injected.withLock { state in
            if kind == .optional {
                return state.candidates.lazy.compactMap { $0.module as? any Module }.first.map { [$0] } ?? []
            }
            return state.strong
        }
    }

    var isInjected: Bool { injected.current.isInjected }

    /// Injects `modules`: for an optional dependency, the modules it may take, in order, held weakly.
    func inject(_ modules: [any Module]) {
        injected.withLock { state in
            if kind == .optional {
                state.candidates = modules.map { Candidate(module: $0) }
                state.strong = []
            } else {
                state.strong = modules
            }
            state.isInjected = true
        }
    }
}

/// The declarations found on a module instance by reflection.
struct ModuleDeclarations {
    var dependencies: [DependencyBox] = []
    var standards: [StandardBox] = []
    var provides: [any ProvidedValues] = []
    var collects: [CollectStorage] = []

    init(of module: any Module) {
        var mirror: Mirror? = Mirror(reflecting: module)
        while let current = mirror {
            for child in current.children {
                switch child.value {
                case let declaration as any DependencyDeclaration:
                    dependencies.append(declaration.dependencyBox)
                case let declaration as any StandardDeclaration:
                    standards.append(declaration.standardBox)
                case let declaration as any ProvideDeclaration:
                    provides.append(declaration.provided)
                case let declaration as any CollectDeclaration:
                    collects.append(declaration.collectStorage)
                default:
                    break
                }
            }
            mirror = current.superclassMirror
        }
    }
}
