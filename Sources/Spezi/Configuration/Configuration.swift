//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

/// The Standard and the Modules of a Spezi application.
///
/// ```swift
/// let configuration = Configuration(standard: ExampleStandard()) {
///     ExampleModule()
///     if useOther { OtherModule() }
/// }
/// ```
public struct Configuration {
    /// The standard.
    public let standard: any Standard
    /// The top-level modules, in declaration order.
    public let modules: [any Module]

    /// A configuration with the given standard and modules.
    ///
    /// - Parameters:
    ///   - standard: the standard every module of the application sees.
    ///   - modules: the top-level modules, in declaration order.
    public init<S: Standard>(standard: S, _ modules: ModuleCollection) {
        self.standard = standard
        self.modules = modules.elements
    }

    /// A configuration with the given standard and modules written with the ModuleBuilder.
    ///
    /// - Parameters:
    ///   - standard: the standard every module of the application sees.
    ///   - modules: the top-level modules, written with the ``ModuleBuilder``.
    public init<S: Standard>(standard: S, @ModuleBuilder _ modules: () -> ModuleCollection) {
        self.init(standard: standard, modules())
    }

    /// A configuration with a DefaultStandard.
    ///
    /// - Parameter modules: the top-level modules, written with the ``ModuleBuilder``.
    public init(@ModuleBuilder _ modules: () -> ModuleCollection) {
        self.init(standard: DefaultStandard(), modules())
    }
}
