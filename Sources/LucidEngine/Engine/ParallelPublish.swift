import Dispatch
import Foundation

/// Fork-join for publishing a large commit group: the primary tree and each secondary index of a keyspace are
/// independent trees, so their sorted runs go in on several threads at once (`DispatchQueue.concurrentPerform`,
/// the writer thread taking part), while readers wait on the state lock as they would for a sequential publish.
///
/// Each tree is uniquely owned by one task: the caller takes the trees out of the keyspace first, and the tasks
/// reach them through pointers to distinct places, so no memory is shared between tasks but what they only read
/// (the group's keys, terms and locations). B-tree nodes a snapshot still shares are copied before being written,
/// as always (copy-on-write reads the shared node and its atomic reference count only).
enum ParallelPublish {
    /// Groups with fewer new entries than this (records and index entries together) are published on the writer
    /// thread alone: handing work to another thread costs some tens of microseconds.
    static let minimumEntries = 512

    /// Whether a keyspace's run of `entries` new entries is worth spreading over threads. O(1).
    static func worthIt(entries: Int) -> Bool { entries >= minimumEntries && processors > 1 }

    private static let processors = ProcessInfo.processInfo.activeProcessorCount

    /// Calls `primaryWork(&primary)` and `index(n, &indexes[n])` for every `n`, concurrently; returns when all
    /// have returned. The calls must touch nothing but their own tree and what every call only reads.
    static func run(_ primary: inout BTree<RecordLocation>, _ indexes: inout [BTree<UInt16>],
                    primaryWork: (inout BTree<RecordLocation>) -> Void,
                    index: (Int, inout BTree<UInt16>) -> Void) {
        withoutActuallyEscaping(primaryWork) { primaryWork in
            withoutActuallyEscaping(index) { index in
                withUnsafeMutablePointer(to: &primary) { primary in
                    indexes.withUnsafeMutableBufferPointer { indexes in
                        let work = Work(primary: primary, indexes: indexes, primaryWork: primaryWork, index: index)
                        DispatchQueue.concurrentPerform(iterations: 1 + indexes.count) { task in
                            if task == 0 {
                                work.primaryWork(&work.primary.pointee)
                            } else {
                                work.index(task - 1, &work.indexes[task - 1])
                            }
                        }
                    }
                }
            }
        }
    }

    /// The trees of one publish and the work on them. `@unchecked Sendable`: each tree is written by one task only,
    /// and the closures, though not `@Sendable`, touch nothing but their own tree and data every task only reads
    /// (see the type's comment); none of it outlives ``run(_:_:primaryWork:index:)``.
    private struct Work: @unchecked Sendable {
        let primary: UnsafeMutablePointer<BTree<RecordLocation>>
        let indexes: UnsafeMutableBufferPointer<BTree<UInt16>>
        let primaryWork: (inout BTree<RecordLocation>) -> Void
        let index: (Int, inout BTree<UInt16>) -> Void
    }
}
