//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

/// One module instance in the graph being booted.
final class ModuleNode {
    let module: any Module
    let declarations: ModuleDeclarations
    /// Indices of the nodes this node depends on.
    var edges: [Int] = []

    init(_ module: any Module) {
        self.module = module
        self.declarations = ModuleDeclarations(of: module)
    }

    var name: String { moduleName(type(of: module)) }
}

/// Resolves the dependencies of a configuration and orders the modules dependencies-first.
struct DependencyGraph {
    private(set) var nodes: [ModuleNode] = []
    private var byType: [ObjectIdentifier: Int] = [:]
    private var byInstance: [ObjectIdentifier: Int] = [:]

    /// Adds a module (and, transitively, the modules its collection dependencies bring along).
    /// A second instance of an already registered type is ignored: the first one wins.
    @discardableResult
    mutating func add(_ module: any Module) -> Int {
        if let index = byInstance[ObjectIdentifier(module)] {
            return index
        }
        let typeId = ObjectIdentifier(type(of: module))
        if let index = byType[typeId] {
            return index
        }
        let node = ModuleNode(module)
        let index = nodes.count
        nodes.append(node)
        byType[typeId] = index
        byInstance[ObjectIdentifier(module)] = index
        for box in node.declarations.dependencies where box.kind == .collection {
            for child in box.instances {
                let childIndex = add(child)
                nodes[index].edges.append(childIndex)
            }
        }
        return index
    }

    private func provider(for box: DependencyBox) -> Int? {
        if let type = box.type, let index = byTypeLookup(type) {
            return index
        }
        return nodes.firstIndex { box.matches($0.module) }
    }

    private func byTypeLookup(_ type: Any.Type) -> Int? {
        byType[ObjectIdentifier(type)]
    }

    /// Resolves required and optional dependencies, creating on-demand modules, and injects them.
    mutating func resolve() throws {
        // required dependencies first; creating a module may add more nodes, so loop by index.
        var index = 0
        while index < nodes.count {
            let node = nodes[index]
            for box in node.declarations.dependencies where box.kind == .required {
                if let providerIndex = provider(for: box) {
                    node.edges.append(providerIndex)
                } else if let makeFallback = box.makeFallback {
                    node.edges.append(add(makeFallback()))
                } else {
                    throw SpeziError.missingDependency(module: node.name, dependency: box.typeName)
                }
            }
            index += 1
        }
        for node in nodes {
            for box in node.declarations.dependencies where box.kind == .optional {
                if let providerIndex = provider(for: box) {
                    node.edges.append(providerIndex)
                }
            }
        }
        for node in nodes {
            for box in node.declarations.dependencies {
                switch box.kind {
                case .collection:
                    box.resolved.withLock { $0 = box.instances }
                case .required, .optional:
                    let resolved = provider(for: box).map { [nodes[$0].module] } ?? []
                    box.resolved.withLock { $0 = resolved }
                }
                box.isInjected.withLock { $0 = true }
            }
        }
    }

    /// The nodes ordered so that every module comes after its dependencies; throws on a cycle.
    func configurationOrder() throws -> [ModuleNode] {
        enum Mark { case visiting, done }
        var marks: [Int: Mark] = [:]
        var order: [ModuleNode] = []
        var path: [Int] = []

        func visit(_ index: Int) throws {
            switch marks[index] {
            case .done:
                return
            case .visiting:
                let start = path.firstIndex(of: index) ?? 0
                let cycle = (path[start...] + [index]).map { nodes[$0].name }
                throw SpeziError.dependencyCycle(Array(cycle))
            case nil:
                break
            }
            marks[index] = .visiting
            path.append(index)
            for edge in nodes[index].edges where edge != index {
                try visit(edge)
            }
            path.removeLast()
            marks[index] = .done
            order.append(nodes[index])
        }

        for index in nodes.indices {
            try visit(index)
        }
        return order
    }
}
