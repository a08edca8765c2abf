//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

/// The shared storage behind a Dependency; the runtime fills `resolved` once while booting.
final class DependencyBox: @unchecked Sendable {
    enum Kind {
        case required
        case optional
        case collection
    }

    let kind: Kind
    /// The requested module type (not used for collections).
    let type: Any.Type?
    /// Whether a module instance satisfies this dependency.
    let matches: (any Module) -> Bool
    /// Creates a module on demand when the configuration has none.
    let makeFallback: (() -> any Module)?
    /// The instances of a collection dependency.
    let instances: [any Module]
    /// What the runtime injected.
    let resolved = SpeziLock<[any Module]>([])
    /// Whether the runtime has injected this dependency (possibly with nothing, for an optional one).
    let isInjected = SpeziLock(false)

    init<M: Module>(kind: Kind, type: M.Type, fallback: M? = nil) {
        self.kind = kind
        self.type = M.self
        self.matches = { $0 is M }
        self.instances = []
        if let fallback {
            self.makeFallback = { fallback }
        } else if kind == .required, let initializable = M.self as? any (Module & DefaultInitializable).Type {
            self.makeFallback = { initializable.init() }
        } else {
            self.makeFallback = nil
        }
    }

    init(instances: [any Module]) {
        self.kind = .collection
        self.type = nil
        self.matches = { _ in false }
        self.makeFallback = nil
        self.instances = instances
    }

    var typeName: String {
        type.map(moduleName) ?? "[any Module]"
    }
}

/// The declarations found on a module instance by reflection.
struct ModuleDeclarations {
    var dependencies: [DependencyBox] = []
    var standards: [StandardBox] = []

    init(of module: any Module) {
        var mirror: Mirror? = Mirror(reflecting: module)
        while let current = mirror {
            for child in current.children {
                if let declaration = child.value as? any DependencyDeclaration {
                    dependencies.append(declaration.dependencyBox)
                } else if let declaration = child.value as? any StandardDeclaration {
                    standards.append(declaration.standardBox)
                }
            }
            mirror = current.superclassMirror
        }
    }
}
