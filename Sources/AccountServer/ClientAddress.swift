//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// A block of addresses, `192.0.2.0/24` or `2001:db8::/32` (a single address without a prefix
/// length is the block of that address alone).
public struct AddressBlock: Sendable, Equatable, CustomStringConvertible {
    let bytes: [UInt8]
    let prefixLength: Int

    /// Parses `address/length` or `address`; nil for anything else.
    ///
    /// - Parameter text: An IPv4 or IPv6 address, optionally followed by `/` and a prefix length (at
    ///   most 32 or 128).
    public init?(_ text: String) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count), let bytes = Self.parse(String(parts[0])) else { return nil }
        let length: Int
        if parts.count == 2 {
            guard let value = Int(parts[1]), (0...bytes.count * 8).contains(value) else { return nil }
            length = value
        } else {
            length = bytes.count * 8
        }
        self.bytes = bytes
        self.prefixLength = length
    }

    /// Whether `address` (in text form) lies in the block.
    ///
    /// - Parameter address: An IPv4 or IPv6 address in text form; brackets and a zone are ignored.
    /// - Returns: True when its first prefix-length bits equal the block's; false for text that is not
    ///   an address, or one of the other family (an IPv4-mapped IPv6 address counts as IPv4).
    public func contains(_ address: String) -> Bool {
        guard let other = Self.parse(address), other.count == bytes.count else { return false }
        return Self.prefix(other, length: prefixLength) == Self.prefix(bytes, length: prefixLength)
    }

    public var description: String {
        "\(Self.format(bytes))/\(prefixLength)"
    }

    /// The 4 or 16 bytes of an IPv4 or IPv6 address; an IPv4-mapped IPv6 address gives its 4.
    static func parse(_ text: String) -> [UInt8]? {
        var text = text
        if text.hasPrefix("[") && text.hasSuffix("]") { text = String(text.dropFirst().dropLast()) }
        if let zone = text.firstIndex(of: "%") { text = String(text[..<zone]) }
        if let address = try? SocketAddress(ipAddress: text, port: 0) {
            switch address {
            case let .v4(v4):
                var raw = v4.address.sin_addr
                return withUnsafeBytes(of: &raw) { Array($0) }
            case let .v6(v6):
                var raw = v6.address.sin6_addr
                let bytes = withUnsafeBytes(of: &raw) { Array($0) }
                if bytes[0..<10].allSatisfy({ $0 == 0 }) && bytes[10] == 0xFF && bytes[11] == 0xFF { return Array(bytes[12...]) }
                return bytes
            case .unixDomainSocket:
                return nil
            }
        }
        return nil
    }

    static func prefix(_ bytes: [UInt8], length: Int) -> [UInt8] {
        bytes.enumerated().map { index, byte in
            let bits = min(8, max(0, length - index * 8))
            return bits == 8 ? byte : byte & UInt8(truncatingIfNeeded: 0xFF << (8 - bits))
        }
    }

    static func format(_ bytes: [UInt8]) -> String {
        if bytes.count == 4 { return bytes.map(String.init).joined(separator: ".") }
        return stride(from: 0, to: 16, by: 2).map { String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16) }.joined(separator: ":")
    }
}

/// Who a request comes from, for the limits: the socket's peer, or, when that peer is a trusted
/// proxy, the address the proxies say they forwarded for (`Forwarded: for=`, else
/// `X-Forwarded-For`, read from the right, skipping trusted proxies). IPv6 clients are grouped by
/// their /64, the block one subscriber usually holds.
struct ClientAddressResolver: Sendable {
    let trustedProxies: [AddressBlock]

    /// The key the limits count under.
    func client(peer: String?, headers: HTTPFields) -> String {
        guard let peer else { return "unknown" }
        var address = peer
        if isTrusted(peer) {
            for hop in forwardedChain(headers).reversed() {
                address = hop
                if !isTrusted(hop) { break }
            }
        }
        return Self.group(address)
    }

    func isTrusted(_ address: String) -> Bool {
        trustedProxies.contains { $0.contains(address) }
    }

    /// The addresses the proxies appended, first (the original client) to last.
    private func forwardedChain(_ headers: HTTPFields) -> [String] {
        let forwarded = headers[values: .forwarded]
        if !forwarded.isEmpty {
            return forwarded.flatMap { $0.split(separator: ",") }.compactMap { element in
                for pair in element.split(separator: ";") {
                    let parts = pair.split(separator: "=", maxSplits: 1)
                    guard parts.count == 2, parts[0].trimmingCharacters(in: .whitespaces).lowercased() == "for" else { continue }
                    var value = parts[1].trimmingCharacters(in: .whitespaces)
                    if value.hasPrefix("\""), value.hasSuffix("\""), value.count >= 2 { value = String(value.dropFirst().dropLast()) }
                    // `[2001:db8::1]:4711` or `192.0.2.1:4711`: the port goes.
                    if value.hasPrefix("["), let end = value.firstIndex(of: "]") {
                        value = String(value[value.index(after: value.startIndex)..<end])
                    } else if value.filter({ $0 == ":" }).count == 1, let colon = value.firstIndex(of: ":") {
                        value = String(value[..<colon])
                    }
                    return AddressBlock.parse(value) != nil ? value : "unknown"
                }
                return nil
            }
        }
        return headers[values: .xForwardedFor].flatMap { $0.split(separator: ",") }.map {
            let value = $0.trimmingCharacters(in: .whitespaces)
            return AddressBlock.parse(value) != nil ? value : "unknown"
        }
    }

    /// An IPv4 address as it is; an IPv6 address as its /64.
    static func group(_ address: String) -> String {
        guard let bytes = AddressBlock.parse(address) else { return address }
        if bytes.count == 4 { return AddressBlock.format(bytes) }
        return AddressBlock.format(AddressBlock.prefix(bytes, length: 64)) + "/64"
    }
}

extension HTTPField.Name {
    static let forwarded = HTTPField.Name("Forwarded")!
    static let xForwardedFor = HTTPField.Name("X-Forwarded-For")!
}

/// Sets the request context's client (see ``ClientAddressResolver``) before any route runs.
struct ClientAddressMiddleware<Context: AccountRequestContext>: RouterMiddleware {
    let resolver: ClientAddressResolver

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var context = context
        context.client = resolver.client(peer: context.peer, headers: request.headers)
        return try await next(request, context)
    }
}
