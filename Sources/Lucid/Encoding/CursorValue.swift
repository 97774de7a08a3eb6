/// One kind of value ``EntityRecordReader/cursorRead(_:_:)`` reads in place: `read` is one of ``BinaryReader``'s
/// success-only fast paths, giving the value and the position just past it, or nil wherever the checked read would
/// answer otherwise (the caller then takes the checked path).
protocol CursorValue {
    associatedtype Value
    static func read(_ buffer: UnsafeBufferPointer<UInt8>, _ position: Int) -> (value: Value, end: Int)?
}

/// A `string` (``BinaryReader/readString(_:_:)``).
enum StringRead: CursorValue {
    @inline(__always)
    static func read(_ buffer: UnsafeBufferPointer<UInt8>, _ position: Int) -> (value: String, end: Int)? {
        BinaryReader.readString(buffer, position)
    }
}

/// An `Int` (``BinaryReader/readInt(_:_:)``).
enum IntRead: CursorValue {
    @inline(__always)
    static func read(_ buffer: UnsafeBufferPointer<UInt8>, _ position: Int) -> (value: Int, end: Int)? {
        BinaryReader.readInt(buffer, position)
    }
}

/// An `Int64` (``BinaryReader/readInt64(_:_:)``).
enum Int64Read: CursorValue {
    @inline(__always)
    static func read(_ buffer: UnsafeBufferPointer<UInt8>, _ position: Int) -> (value: Int64, end: Int)? {
        BinaryReader.readInt64(buffer, position)
    }
}

/// A `double` (``BinaryReader/readDouble(_:_:)``).
enum DoubleRead: CursorValue {
    @inline(__always)
    static func read(_ buffer: UnsafeBufferPointer<UInt8>, _ position: Int) -> (value: Double, end: Int)? {
        BinaryReader.readDouble(buffer, position)
    }
}

/// A `true` or `false` (``BinaryReader/readBool(_:_:)``).
enum BoolRead: CursorValue {
    @inline(__always)
    static func read(_ buffer: UnsafeBufferPointer<UInt8>, _ position: Int) -> (value: Bool, end: Int)? {
        BinaryReader.readBool(buffer, position)
    }
}

/// A null (nil) or what `Wrapped` reads, for `decodeIfPresent`.
enum OptionalRead<Wrapped: CursorValue>: CursorValue {
    @inline(__always)
    static func read(_ buffer: UnsafeBufferPointer<UInt8>, _ position: Int) -> (value: Wrapped.Value?, end: Int)? {
        guard position < buffer.count else { return nil }
        if buffer[position] == EntityCodec.Tag.null.rawValue { return (nil, position + 1) }
        guard let (value, end) = Wrapped.read(buffer, position) else { return nil }
        return (value, end)
    }
}

/// An identifier with an `Int` remote value (``BinaryReader/readIntIdentifier(_:_:)``).
enum IntIdentifierRead: CursorValue {
    @inline(__always)
    static func read(_ buffer: UnsafeBufferPointer<UInt8>,
                     _ position: Int) -> (value: (local: String?, remote: Int?), end: Int)? {
        BinaryReader.readIntIdentifier(buffer, position)
    }
}
