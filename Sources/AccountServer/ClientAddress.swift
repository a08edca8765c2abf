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

/// The one header a trusted proxy sets to name the client it forwards for. Only that header is
/// read; whatever the client put in any other (a `Forwarded` of its own behind a proxy that
/// appends to `X-Forwarded-For`, say) is ignored.
public struct ForwardedHeader: Sendable, Equatable, CustomStringConvertible {
    /// How the header lists addresses.
    enum Syntax: Sendable, Equatable {
        /// `X-Forwarded-For` style: addresses separated by commas, each proxy appending the peer it saw.
        case addressList
        /// RFC 7239 `Forwarded`: elements separated by commas, the address in each one's `for=`.
        case forwarded
    }

    /// The header's name, as given.
    public let name: String
    let field: HTTPField.Name
    let syntax: Syntax

    /// `X-Forwarded-For` (what nginx's `$proxy_add_x_forwarded_for` and most load balancers append to).
    public static let xForwardedFor = ForwardedHeader(checkedName: "X-Forwarded-For")
    /// RFC 7239 `Forwarded` (`for=` of each element).
    public static let forwarded = ForwardedHeader(checkedName: "Forwarded")

    /// The header called `name`: `Forwarded` is read as RFC 7239 says, any other name (such as
    /// `X-Forwarded-For` or `X-Real-IP`) as a comma-separated list of addresses. Nil for a name that
    /// is not a valid header field name.
    ///
    /// - Parameter name: The header's name, in any case.
    public init?(_ name: String) {
        guard HTTPField.Name(name) != nil else { return nil }
        self.init(checkedName: name)
    }

    private init(checkedName name: String) {
        self.name = name
        self.field = HTTPField.Name(name)!
        self.syntax = name.lowercased() == "forwarded" ? .forwarded : .addressList
    }

    public var description: String { name }

    public static func == (left: ForwardedHeader, right: ForwardedHeader) -> Bool {
        left.field == right.field
    }
}

/// Who a request comes from, for the limits: the socket's peer, or, when that peer is a trusted
/// proxy, the address the proxies say they forwarded for, read from the one configured header
/// (``ForwardedHeader``) from the right: the right-most address that is not a trusted proxy. A hop
/// that is not an address (`unknown`, an obfuscated `_hidden` identifier, a typo) stops the walk at
/// the proxy that wrote it, so such requests count against that proxy's address, never against a
/// bucket that strangers share. IPv6 clients are grouped by their /64, the block one subscriber
/// usually holds.
struct ClientAddressResolver: Sendable {
    let trustedProxies: [AddressBlock]
    let header: ForwardedHeader

    init(trustedProxies: [AddressBlock], header: ForwardedHeader = .xForwardedFor) {
        self.trustedProxies = trustedProxies
        self.header = header
    }

    /// The key the limits count under.
    func client(peer: String?, headers: HTTPFields) -> String {
        guard let peer else { return "unknown" }
        var address = peer
        if isTrusted(peer) {
            for hop in forwardedChain(headers).reversed() {
                // The proxy at `address` wrote this hop; one it could not name stays its own.
                guard let hop else { break }
                address = hop
                if !isTrusted(hop) { break }
            }
        }
        return Self.group(address)
    }

    func isTrusted(_ address: String) -> Bool {
        trustedProxies.contains { $0.contains(address) }
    }

    /// The hops of the configured header, first (the original client) to last; nil for a hop that
    /// is not an address.
    private func forwardedChain(_ headers: HTTPFields) -> [String?] {
        let elements = headers[values: header.field].flatMap { $0.split(separator: ",", omittingEmptySubsequences: false) }
        switch header.syntax {
        case .addressList:
            return elements.map { Self.address(String($0).trimmingCharacters(in: .whitespaces)) }
        case .forwarded:
            return elements.map { element in
                // An element without `for=` (`by=x` alone) names no client: the proxy's own.
                for pair in element.split(separator: ";") {
                    let parts = pair.split(separator: "=", maxSplits: 1)
                    guard parts.count == 2, parts[0].trimmingCharacters(in: .whitespaces).lowercased() == "for" else { continue }
                    var value = parts[1].trimmingCharacters(in: .whitespaces)
                    if value.hasPrefix("\""), value.hasSuffix("\""), value.count >= 2 { value = String(value.dropFirst().dropLast()) }
                    return Self.address(value)
                }
                return nil
            }
        }
    }

    /// The address in a hop (`[2001:db8::1]:4711` and `192.0.2.1:4711` lose their port); nil when
    /// it is none.
    private static func address(_ text: String) -> String? {
        var value = text
        if value.hasPrefix("["), let end = value.firstIndex(of: "]") {
            value = String(value[value.index(after: value.startIndex)..<end])
        } else if value.filter({ $0 == ":" }).count == 1, let colon = value.firstIndex(of: ":") {
            value = String(value[..<colon])
        }
        return AddressBlock.parse(value) != nil ? value : nil
    }

    /// An IPv4 address as it is; an IPv6 address as its /64.
    static func group(_ address: String) -> String {
        guard let bytes = AddressBlock.parse(address) else { return address }
        if bytes.count == 4 { return AddressBlock.format(bytes) }
        return AddressBlock.format(AddressBlock.prefix(bytes, length: 64)) + "/64"
    }
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
