import CLucidSupport

extension BTreeLayout {
    /// How many leaves ahead `BTree.Node.insertSorted` starts loading a leaf object; the leaf's arrays are
    /// loaded one leaf ahead, once the object (which points to them) has arrived.
    static let prefetchDistance = 4
}

extension BTree.Node {
    /// Hints the CPU to start loading `children[i]` (a leaf about to be updated): with `storage == false`
    /// the node object itself, otherwise the start of its arrays (the object must be cached by now, as it is
    /// read to find them): the heads and key offsets that binary search reads, and the headers of the key
    /// bytes and values. Changes nothing and retains nothing; a hint only. O(1).
    @inline(__always)
    func prefetchChild(_ i: Int, storage: Bool) {
        children.withUnsafeBufferPointer { children in
            Unmanaged.passUnretained(children[i])._withUnsafeGuaranteedRef { leaf in
                guard storage else {
                    let object = UnsafeRawPointer(Unmanaged.passUnretained(leaf).toOpaque())
                    lucid_prefetch(object)
                    lucid_prefetch(object + 64)
                    return
                }
                // An array is one reference to its storage object: a header of 32 bytes, then the elements.
                // Reading it as a pointer (not through `withUnsafeBufferPointer`) avoids retaining the storage,
                // which would wait for its memory.
                Self.prefetch(unsafeBitCast(leaf.keyHeads, to: UnsafeRawPointer.self), bytes: 32 + 8 * 64)
                Self.prefetch(unsafeBitCast(leaf.keyEnds, to: UnsafeRawPointer.self), bytes: 32 + 4 * 64)
                Self.prefetch(unsafeBitCast(leaf.keyBytes, to: UnsafeRawPointer.self), bytes: 0)
                Self.prefetch(unsafeBitCast(leaf.values, to: UnsafeRawPointer.self), bytes: 0)
            }
        }
    }

    /// Prefetches the cache lines of `bytes` bytes from `start` (at least one). O(bytes / 64).
    @inline(__always)
    private static func prefetch(_ start: UnsafeRawPointer, bytes: Int) {
        var offset = 0
        repeat {
            lucid_prefetch(start + offset)
            offset &+= 64
        } while offset < bytes
    }
}
