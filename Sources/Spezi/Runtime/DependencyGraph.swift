//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

/// One module instance being loaded.
final class ModuleNode {
    let module: any Module
    let declarations: ModuleDeclarations
    /// Whether the runtime created or loaded it on another module's behalf (a default instance, a
    /// DefaultInitializable created on demand, a `load` or collection dependency).
    let isImplicit: Bool

    init(_ module: any Module, isImplicit: Bool) {
        self.module = module
        self.declarations = ModuleDeclarations(of: module)
        self.isImplicit = isImplicit
    }

    var id: ObjectIdentifier { ObjectIdentifier(module) }
    var name: String { moduleName(type(of: module)) }
}

/// Resolves the dependencies of a batch of modules against the modules already loaded, and
/// orders the batch dependencies-first.
///
/// Resolution, in this order: every `load` and collection dependency is loaded; a required or
/// optional dependency takes the first loaded module of exactly its type; a required one
/// without such a module takes its default instance; what is still missing is then created on
/// demand (DefaultInitializable, one at a time, since a new module may bring the others); then
/// optional dependencies with a default get it; a required dependency still missing is an error.
struct ModuleResolver {
    /// The modules loaded before, in order.
    let existing: [any Module]
    /// The modules of this batch, in the order they were added.
    private(set) var nodes: [ModuleNode] = []
    private var known: Set<ObjectIdentifier>
    private var resolved: [ObjectIdentifier: any Module] = [:]

    init(existing: [any Module]) {
        self.existing = existing
        self.known = Set(existing.map { ObjectIdentifier($0) })
    }

    /// Adds a module and, transitively, what its `load` and collection dependencies bring along.
    /// An instance that is already loaded or added is not added again.
    mutating func add(_ module: any Module, isImplicit: Bool = false) {
        guard known.insert(ObjectIdentifier(module)).inserted else {
            return
        }
        let node = ModuleNode(module, isImplicit: isImplicit)
        nodes.append(node)
        for box in node.declarations.dependencies {
            for child in box.instances {
                add(child, isImplicit: true)
            }
        }
    }

    /// The first loaded or added module a dependency accepts.
    private func provider(for box: DependencyBox) -> (any Module)? {
        if box.kind == .load || box.kind == .collection {
            return box.instances.first
        }
        return existing.first(where: box.matches) ?? nodes.lazy.map(\.module).first(where: box.matches)
    }

    private var pending: [(node: ModuleNode, box: DependencyBox)] {
        nodes.flatMap { node in
            node.declarations.dependencies.filter { resolved[ObjectIdentifier($0)] == nil && $0.kind != .collection }.map { (node, $0) }
        }
    }

    /// Resolves every dependency of the batch, adding default and on-demand modules as needed.
    ///
    /// - Throws: SpeziError/missingDependency(module:dependency:) for a required dependency nothing satisfies.
    mutating func resolve() throws(SpeziError) {
        while true {
            var progress = false
            for (_, box) in pending {
                if let module = provider(for: box) {
                    resolved[ObjectIdentifier(box)] = module
                    progress = true
                } else if box.kind == .required, let makeDefault = box.makeDefault {
                    let module = makeDefault()
                    add(module, isImplicit: true)
                    resolved[ObjectIdentifier(box)] = module
                    progress = true
                }
            }
            if progress {
                continue
            }
            if let (_, box) = pending.first(where: { $0.box.makeOnDemand != nil }), let make = box.makeOnDemand {
                add(make(), isImplicit: true)
                continue
            }
            if let (_, box) = pending.first(where: { $0.box.kind == .optional && $0.box.makeDefault != nil }), let make = box.makeDefault {
                add(make(), isImplicit: true)
                continue
            }
            break
        }
        if let (node, box) = pending.first(where: { $0.box.kind != .optional }) {
            throw .missingDependency(module: node.name, dependency: box.typeName)
        }
    }

    /// Injects what resolve() found into every dependency of the batch (an absent optional
    /// dependency is injected as nil).
    func inject() {
        for node in nodes {
            for box in node.declarations.dependencies {
                if box.kind == .collection {
                    box.inject(box.instances)
                } else {
                    box.inject(resolved[ObjectIdentifier(box)].map { [$0] } ?? [])
                }
            }
        }
    }

    /// The batch ordered so that every module comes after the modules it depends on (modules
    /// loaded before are already configured). An optional dependency orders too, unless it
    /// closes a cycle; a cycle of required dependencies is an error.
    ///
    /// - Throws: SpeziError/dependencyCycle(_:) naming the cycle.
    func configurationOrder() throws(SpeziError) -> [ModuleNode] {
        enum Mark { case visiting, done }
        let index = Dictionary(nodes.enumerated().map { ($1.id, $0) }, uniquingKeysWith: { first, _ in first })
        var marks: [Int: Mark] = [:]
        var order: [ModuleNode] = []
        var path: [Int] = []

        func edges(of node: ModuleNode) -> [(target: Int, isStrong: Bool)] {
            node.declarations.dependencies.flatMap { box in
                let targets = box.kind == .collection ? box.instances : resolved[ObjectIdentifier(box)].map { [$0] } ?? []
                return targets.compactMap { index[ObjectIdentifier($0)] }.map { ($0, box.isStrong) }
            }
        }

        func visit(_ position: Int) throws(SpeziError) {
            if marks[position] == .done {
                return
            }
            marks[position] = .visiting
            path.append(position)
            for (target, isStrong) in edges(of: nodes[position]) where target != position {
                if marks[target] == .visiting {
                    guard isStrong else {
                        continue
                    }
                    let start = path.firstIndex(of: target) ?? 0
                    throw .dependencyCycle((path[start...] + [target]).map { nodes[$0].name })
                }
                try visit(target)
            }
            path.removeLast()
            marks[position] = .done
            order.append(nodes[position])
        }

        for position in nodes.indices {
            try visit(position)
        }
        return order
    }
}
