/// Records read whole by ``Snapshot/recordTable(in:range:reverse:limit:)``, in key order: the keys in one buffer
/// and the values in another, both in key order, so that a large range costs a few allocations, not two per
/// record, and a walk over the table by rank reads memory in order.
///
/// Records are addressed by rank (0 for the first key in the table's order). A table is a value: it holds its
/// bytes and stays valid after the snapshot and the engine are gone.
public struct RecordTable: Sendable, RandomAccessCollection {
    var keyBytes: [UInt8] = []
    /// The end of each key in `keyBytes`, by rank (each key starts where the one before ends).
    var keyEnds: [Int] = []
    /// The values, in key order as the keys (each starts where the one before ends).
    var valueBytes: [UInt8] = []
    /// The end of each value in `valueBytes`, by rank.
    var valueEnds: [Int] = []

    /// An empty table.
    public init() {}

    public var startIndex: Int { 0 }
    public var endIndex: Int { keyEnds.count }

    /// The record of rank `rank`, its key and value copied out. - Complexity: O(key + value length).
    public subscript(rank: Int) -> KeyValue { KeyValue(key: Array(key(at: rank)), value: Array(value(at: rank))) }

    /// The key of rank `rank`, without a copy. - Complexity: O(1).
    public func key(at rank: Int) -> ArraySlice<UInt8> {
        keyBytes[(rank == 0 ? 0 : keyEnds[rank - 1])..<keyEnds[rank]]
    }

    /// The value of rank `rank`, without a copy. - Complexity: O(1).
    public func value(at rank: Int) -> ArraySlice<UInt8> {
        valueBytes[(rank == 0 ? 0 : valueEnds[rank - 1])..<valueEnds[rank]]
    }

    /// Bytes held: keys and values, and the tables that find them.
    public var byteCount: Int { keyBytes.count + valueBytes.count + 16 * count }
}
