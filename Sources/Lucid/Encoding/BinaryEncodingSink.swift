import Foundation

/// The output of one ``EntityCodec/encode(_:)`` call: the bytes and the stack of open containers.
///
/// Containers write inline; a container is closed (its end tag written) when an enclosing container writes
/// its next entry, or at the end. Writing into a container that was already closed throws.
///
/// The stored properties are `@exclusivity(unchecked)`: the dynamic checks Swift emits for class properties (about
/// a quarter of an encode's instructions, callgrind) catch overlapping accesses on one thread, and no method holds
/// an access to a property while calling out (a value's `encode(to:)`, `record`'s body, a key's `stringValue` and
/// the coding-path closures all run with none held), so they could never fire. One `encode` call uses its sink.
final class BinaryEncodingSink {
    @exclusivity(unchecked) var bytes: [UInt8] = []
    /// Ids of the open containers, innermost last (room for a few levels without regrowing).
    @exclusivity(unchecked) private var open: [Int] = {
        var ids: [Int] = []
        ids.reserveCapacity(8)
        return ids
    }()
    @exclusivity(unchecked) private var nextID = 0
    /// The first misuse found where the `Encoder` API cannot throw (opening a nested container).
    @exclusivity(unchecked) private(set) var deferredError: (any Error)?
    /// Where the value of an entry must start when an `Encoder` was handed out for it (`superEncoder`): the entry's
    /// key or place is already written, and if nothing follows by the next write to an enclosing container,
    /// `empty` is written there so that the next entry is not read as this one's value.
    @exclusivity(unchecked) private var pendingValue: Int?

    func record(_ body: () throws -> Void) {
        do { try body() } catch { if deferredError == nil { deferredError = error } }
    }

    func openContainer(_ tag: EntityCodec.Tag) -> Int {
        bytes.append(tag.rawValue)
        nextID += 1
        open.append(nextID)
        return nextID
    }

    /// Marks the current position as where a value must start (see `pendingValue`).
    func expectValue() { pendingValue = bytes.count }

    private func settlePendingValue() {
        if let position = pendingValue, bytes.count == position { bytes.append(EntityCodec.Tag.empty.rawValue) }
        pendingValue = nil
    }

    /// Closes every container opened inside `id`, so that `id` can take its next entry. The coding path is
    /// built only for an error.
    func prepare(_ id: Int, codingPath: @autoclosure () -> [any CodingKey]) throws {
        settlePendingValue()
        while let last = open.last, last != id {
            bytes.append(EntityCodec.Tag.end.rawValue)
            open.removeLast()
        }
        if open.last != id {
            throw EncodingError.invalidValue((), .init(codingPath: codingPath(),
                                                       debugDescription: "write into a container that was closed"))
        }
        // The entry about to be written sits one deeper than its container: refuse what decoding would refuse.
        if open.count > EntityCodec.maxDepth {
            throw EncodingError.invalidValue((), .init(codingPath: codingPath(), debugDescription:
                "value nested deeper than EntityCodec.maxDepth (\(EntityCodec.maxDepth)) containers"))
        }
    }

    func closeAll() {
        settlePendingValue()
        while !open.isEmpty {
            bytes.append(EntityCodec.Tag.end.rawValue)
            open.removeLast()
        }
    }

    func writeInt(_ value: Int64) { bytes.appendTaggedInt(value) }
    func writeUInt(_ value: UInt64) { bytes.appendTaggedUInt(value) }
    func writeString(_ value: String) { bytes.appendTaggedString(value) }
    func writeDouble(_ value: Double) { bytes.appendTaggedDouble(value) }
    func writeFloat(_ value: Float) { bytes.appendTaggedFloat(value) }
    func writeBool(_ value: Bool) { bytes.appendTaggedBool(value) }

    func writeKey(_ key: String) {
        var key = key
        key.withUTF8 { bytes.appendKey(utf8: $0) }
    }

    func writeNil() { bytes.append(EntityCodec.Tag.null.rawValue) }

    /// Writes one value: primitives directly, anything else through its `encode(to:)`.
    ///
    /// Primitives are recognized by type identity (a metadata comparison), not by casting the value: a cast
    /// costs a runtime call per candidate type, for every value. An optional primitive (`T == Int?`) takes the
    /// `encode(to:)` path, which writes the same bytes (its single-value container writes the wrapped value or
    /// null).
    func encodeValue<T: Encodable>(_ value: T, codingPath: @autoclosure () -> [any CodingKey]) throws {
        if T.self == String.self { writeString(unsafeBitCast(value, to: String.self)) }
        else if T.self == Int.self { writeInt(Int64(unsafeBitCast(value, to: Int.self))) }
        else if T.self == Double.self { writeDouble(unsafeBitCast(value, to: Double.self)) }
        else if T.self == Bool.self { writeBool(unsafeBitCast(value, to: Bool.self)) }
        else if T.self == Int64.self { writeInt(unsafeBitCast(value, to: Int64.self)) }
        else if T.self == Int32.self { writeInt(Int64(unsafeBitCast(value, to: Int32.self))) }
        else if T.self == Int16.self { writeInt(Int64(unsafeBitCast(value, to: Int16.self))) }
        else if T.self == Int8.self { writeInt(Int64(unsafeBitCast(value, to: Int8.self))) }
        else if T.self == UInt.self { writeUInt(UInt64(unsafeBitCast(value, to: UInt.self))) }
        else if T.self == UInt64.self { writeUInt(unsafeBitCast(value, to: UInt64.self)) }
        else if T.self == UInt32.self { writeUInt(UInt64(unsafeBitCast(value, to: UInt32.self))) }
        else if T.self == UInt16.self { writeUInt(UInt64(unsafeBitCast(value, to: UInt16.self))) }
        else if T.self == UInt8.self { writeUInt(UInt64(unsafeBitCast(value, to: UInt8.self))) }
        else if T.self == Float.self { writeFloat(unsafeBitCast(value, to: Float.self)) }
        // Date's `encode(to:)` writes `timeIntervalSinceReferenceDate` in a single-value container: the same
        // bytes, without an encoder, a coding path and a container for it.
        else if T.self == Date.self { writeDouble(unsafeBitCast(value, to: Date.self).timeIntervalSinceReferenceDate) }
        else {
            let start = bytes.count
            let depth = open.count
            let encoder = BinaryValueEncoder(sink: self, codingPath: codingPath())
            try value.encode(to: encoder)
            // Close what the value opened, so the caller's next entry goes into the caller's container.
            settlePendingValue()
            while open.count > depth {
                bytes.append(EntityCodec.Tag.end.rawValue)
                open.removeLast()
            }
            if bytes.count == start { bytes.append(EntityCodec.Tag.empty.rawValue) }
        }
    }
}
