//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import ArgumentParser
import Foundation

/// `accountctl serve`'s settings from three places, under one rule: an option given on the command
/// line wins over the environment (`ACCOUNTCTL_<NAME>`, the long name in capitals with `_` for
/// `-`), which wins over the JSON file of `--config` (`ACCOUNTCTL_CONFIG`), whose keys are the long
/// names; what none gives keeps its default.
///
/// The options are the command's own, read from its argument parser's description
/// (`--experimental-dump-help`), so a new flag of `serve` is settable in all three places without
/// another edit. The environment and the file become command-line arguments before the parser
/// runs: every value is checked exactly as a flag's is.
enum ServeSettings {
    /// One option of `serve`, as its parser describes it.
    struct Option: Equatable {
        let name: String
        let isFlag: Bool
        let isRepeating: Bool
        let defaultValue: String?
    }

    /// Where an effective setting came from.
    enum Source: String {
        case commandLine = "command line"
        case environment
        case file
        case defaultValue = "default"
    }

    /// One effective setting.
    struct Setting: Equatable {
        let name: String
        let values: [String]
        let source: Source
    }

    /// Options the three places do not set: the file itself, the check, and help.
    static let excluded: Set = ["config", "check-config", "help"]

    /// `serve`'s options, from its parser.
    static func options() -> [Option] {
        let json: String
        do {
            _ = try Serve.parseAsRoot(["--experimental-dump-help"])
            return []
        } catch {
            json = Serve.fullMessage(for: error)
        }
        guard let object = try? JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any],
            let command = object["command"] as? [String: Any], let arguments = command["arguments"] as? [[String: Any]]
        else { return [] }
        return arguments.compactMap { argument in
            guard let kind = argument["kind"] as? String, kind == "option" || kind == "flag",
                let name = (argument["names"] as? [[String: Any]])?.first(where: { $0["kind"] as? String == "long" })?["name"] as? String,
                !excluded.contains(name)
            else { return nil }
            return Option(
                name: name, isFlag: kind == "flag", isRepeating: argument["isRepeating"] as? Bool ?? false,
                defaultValue: argument["defaultValue"] as? String)
        }
    }

    /// The environment variable of an option.
    static func environmentName(_ option: String) -> String {
        "ACCOUNTCTL_" + option.uppercased().replacingOccurrences(of: "-", with: "_")
    }

    /// `arguments` (after `serve`) with what the environment and the config file set added, and
    /// every effective setting with its source.
    ///
    /// - Parameters:
    ///   - arguments: The command line after `serve`.
    ///   - environment: The process's environment.
    /// - Returns: The arguments to parse, and the settings.
    /// - Throws: `ValidationError` for an unreadable file, an unknown key, or a value of the wrong shape.
    static func resolve(_ arguments: [String], environment: [String: String]) throws -> (arguments: [String], settings: [Setting]) {
        let options = options()
        let given = givenOnCommandLine(arguments)
        let file = try configFile(path: value(of: "config", in: arguments) ?? environment["ACCOUNTCTL_CONFIG"], options: options)
        var added: [String] = []
        var settings: [Setting] = []
        for option in options {
            if let values = given[option.name] {
                settings.append(Setting(name: option.name, values: values, source: .commandLine))
                continue
            }
            let values: [String]
            let source: Source
            if let raw = environment[environmentName(option.name)] {
                values = try environmentValues(raw, of: option)
                source = .environment
            } else if let fromFile = file[option.name] {
                values = fromFile
                source = .file
            } else {
                settings.append(Setting(name: option.name, values: option.defaultValue.map { [$0] } ?? [], source: .defaultValue))
                continue
            }
            settings.append(Setting(name: option.name, values: values, source: source))
            if option.isFlag {
                if values == ["true"] { added.append("--\(option.name)") }
            } else {
                for value in values { added += ["--\(option.name)", value] }
            }
        }
        return (arguments + added, settings)
    }

    /// The options the command line gives, with their values (`--name value`, `--name=value`, `--flag`).
    static func givenOnCommandLine(_ arguments: [String]) -> [String: [String]] {
        var given: [String: [String]] = [:]
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            guard argument.hasPrefix("--"), argument.count > 2 else { continue }
            let body = argument.dropFirst(2)
            if let equals = body.firstIndex(of: "=") {
                given[String(body[..<equals]), default: []].append(String(body[body.index(after: equals)...]))
            } else if index < arguments.count, !arguments[index].hasPrefix("--") {
                given[String(body), default: []].append(arguments[index])
                index += 1
            } else {
                given[String(body), default: []].append("true")
            }
        }
        return given
    }

    private static func value(of name: String, in arguments: [String]) -> String? {
        givenOnCommandLine(arguments)[name]?.last
    }

    /// An environment variable's values: a JSON array for a repeatable option, else the text
    /// itself; for a flag, `true`/`1` or `false`/`0`.
    private static func environmentValues(_ raw: String, of option: Option) throws -> [String] {
        let name = environmentName(option.name)
        if option.isFlag {
            switch raw.lowercased() {
            case "1", "true", "yes": return ["true"]
            case "0", "false", "no", "": return ["false"]
            default: throw ValidationError("\(name) must be true or false")
            }
        }
        if option.isRepeating, raw.hasPrefix("[") {
            guard let array = try? JSONSerialization.jsonObject(with: Data(raw.utf8)) as? [Any] else {
                throw ValidationError("\(name) is not a JSON array")
            }
            return try array.map { try text($0, name) }
        }
        return [raw]
    }

    /// The config file's settings by option name; an unknown key is an error (a typo would
    /// otherwise be ignored).
    private static func configFile(path: String?, options: [Option]) throws -> [String: [String]] {
        guard let path else { return [:] }
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw ValidationError("--config: cannot read \(path): \(error.localizedDescription)")
        }
        guard data.count <= 1 << 20, let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            throw ValidationError("--config: \(path) is not a JSON object of at most 1 MiB")
        }
        let byName = Dictionary(uniqueKeysWithValues: options.map { ($0.name, $0) })
        var settings: [String: [String]] = [:]
        for (key, value) in object {
            guard let option = byName[key] else {
                throw ValidationError("--config: \(path) sets \(key), which is no option of serve")
            }
            let context = "--config: \(key)"
            if option.isFlag {
                guard let flag = value as? Bool else { throw ValidationError("\(context) must be true or false") }
                settings[key] = [flag ? "true" : "false"]
            } else if let array = value as? [Any] {
                guard option.isRepeating else { throw ValidationError("\(context) takes one value, not a list") }
                settings[key] = try array.map { try text($0, context) }
            } else {
                settings[key] = [try text(value, context)]
            }
        }
        return settings
    }

    private static func text(_ value: Any, _ context: String) throws -> String {
        if let string = value as? String { return string }
        if let integer = value as? Int { return String(integer) }
        if let number = value as? Double { return String(number) }
        throw ValidationError("\(context) must be a string or a number")
    }

    /// The settings as `accountctl serve --check-config` prints them: one per line, with its
    /// source; the password of a `postgres://` URL is replaced by `***`. (Secrets are never set
    /// inline: the admin credential, the metrics token and provider keys are read from files.)
    static func describe(_ settings: [Setting]) -> String {
        settings.map { setting in
            let shown = setting.values.map(redacted).map { $0.contains(" ") || $0.isEmpty ? "\"\($0)\"" : $0 }
            let value = setting.values.isEmpty ? "(none)" : shown.joined(separator: ", ")
            return "\(setting.name) = \(value)  [\(setting.source.rawValue)]"
        }.joined(separator: "\n")
    }

    static func redacted(_ value: String) -> String {
        guard let url = URLComponents(string: value), url.scheme?.hasPrefix("postgres") == true, url.password != nil else { return value }
        var copy = url
        copy.password = "***"
        return copy.string ?? value
    }
}
