/// A string compared and hashed by its UTF-8 bytes, not by Unicode canonical equivalence as `String` is.
///
/// Identifiers key by it so that memory and disk agree: the disk store files entities under the UTF-8 bytes of
/// their ids, so `"e\u{301}"` and `"\u{e9}"` are two ids everywhere.
public struct ByteString: Hashable, Sendable, CustomStringConvertible {
    /// The string.
    public let value: String

    @inlinable public init(_ value: String) { self.value = value }

    @inlinable public static func == (lhs: ByteString, rhs: ByteString) -> Bool {
        lhs.value.utf8.elementsEqual(rhs.value.utf8)
    }

    @inlinable public func hash(into hasher: inout Hasher) {
        var copy = value
        copy.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
    }

    public var description: String { value }
}
