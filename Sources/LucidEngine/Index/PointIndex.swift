import Foundation
import Synchronization

/// The published state's ``PointTable``s, one per keyspace: ``Engine/get(_:in:)`` and ``Engine/lookUp(_:in:)`` find
/// a key of at most ``PointTable/maxKeyLength`` bytes with one hashed probe instead of a descent through the
/// keyspace's primary tree (``EngineOptions/pointIndex``). It follows the published state only: a snapshot's
/// point reads use it only while it has not changed since the snapshot was taken (``epoch``), and the snapshot's
/// own trees answer otherwise.
///
/// **Exactness.** Once built, for every keyspace of the published state that has keys of at most 16 bytes, its
/// table holds exactly those keys of the primary tree, each with the tree's location (a keyspace without such keys
/// may have no table). The writer changes the two in one exclusive section of the state's lock
/// (``publish(_:location:)``, ``install(_:)``); close drops the tables. A key longer than 16 bytes, or a keyspace
/// without a table, is ``Answer/unknown``: the tree answers. Debug builds compare every answer with the tree's
/// (``Answer/location(orTree:key:keyspace:)``, for the published state and for snapshots), and
/// ``checkInvariants(against:)`` compares whole tables.
///
/// **Open.** The tables are built on a thread of their own from the state recovery published
/// (`PointIndex+Build.swift`), so that open does not wait for them (about 60 ms per million keys); until they are
/// installed every answer is ``Answer/unknown`` and reads use the trees. Whatever would change the trees waits for
/// the build first (``waitUntilBuilt()``: a commit group's publication, a compaction's swap, close, which cancels
/// it): the state the tables were built from is then still the published one when they are installed.
///
/// **Cost.** About 60 bytes of memory per key of at most 16 bytes (``PointTable``), one hashed update per operation
/// of a commit under the state's write lock (prefetched a few operations ahead), and the build after open, O(keys).
/// Tables are built, grown and copied without the lock, and those they replace are freed after it is released (the
/// methods that run under it return them: ``Retired``).
///
/// **Thread safety.** Readers call ``location(forKey:in:)`` and ``locations(forKeys:in:into:)`` holding the engine
/// state's read lock (a snapshot's reads only while ``epoch`` is the snapshot's). The tables change
/// only under its write lock: installed by the build, then changed by the thread that publishes states (the
/// writer), which builds grown and relocated tables without the lock first (``prepare(_:)``, ``relocated(by:)``),
/// copying tables that readers go on reading meanwhile and that nothing else changes.
final class PointIndex: @unchecked Sendable {
    /// What the index knows of a key.
    enum Answer {
        /// The key's record.
        case found(RecordLocation)
        /// The keyspace holds no such key.
        case absent
        /// Not the index's to say (a longer key, an index turned off): ask the primary tree.
        case unknown

        /// A table's answer: ``found(_:)`` with its location, ``absent`` without one.
        @inline(__always)
        init(_ location: RecordLocation?) { self = location.map { .found($0) } ?? .absent }
    }

    /// Whether the engine keeps the tables (``EngineOptions/pointIndex``).
    let isEnabled: Bool
    /// The tables in use, by keyspace (see the type's comment for who reads and changes them, and when). The
    /// state's lock orders every access, so Swift's run-time exclusivity check (about 80 instructions per read of
    /// the property, on every get) is left out.
    @exclusivity(unchecked) var tables: [String: PointTable] = [:]
    /// Tables ``prepare(_:)`` built for the next ``publish(_:location:)``, by keyspace.
    var prepared: [String: PointTable] = [:]
    /// Counts the changes to ``tables`` (each under the state's write lock, ``changed()``): while it keeps the value
    /// it had when a snapshot was taken (read under the same hold of the read lock as the snapshot's state), the
    /// tables hold exactly that state's keys of at most 16 bytes, so the snapshot may take their answers
    /// (``Snapshot``'s point reads, `Snapshot+PointReads.swift`). Atomic so that a snapshot can tell without the
    /// lock that it changed: it only grows, so a value seen to differ never comes back.
    let epoch = Atomic<UInt64>(0)

    /// Entered while the build after open runs.
    let building = DispatchGroup()
    /// Set by close: a build still running stops and installs nothing.
    let buildCancelled = Atomic<Bool>(false)

    /// Tables taken out of use under the state's write lock, for the caller to drop once it has released the lock
    /// (freeing a large table unmaps tens of megabytes, which readers should not wait for).
    typealias Retired = [PointTable]

    init(enabled: Bool) { isEnabled = enabled }

    /// Under the state's write lock, with each change to ``tables``: a new ``epoch``.
    func changed() { epoch.add(1, ordering: .relaxed) }

    // MARK: Reading (the state's read lock held)

    /// What the index knows of `key` in `keyspace`. O(1) expected.
    @inline(__always)
    func location(forKey key: UnsafeRawBufferPointer, in keyspace: String) -> Answer {
        guard let k = PointTable.Key(key), let t = tables.position(ofName: keyspace) else { return .unknown }
        return Answer(tables.values[t].location(forKey: k))
    }

    /// A lookup of one key begun by ``beginLocation(forKey:in:)``: the key's table and home slot, whose load the
    /// processor was asked to start. Valid only while the state's read lock stays held (it lends the table).
    struct PendingLookup {
        fileprivate let table: Unmanaged<PointTable>
        fileprivate let key: PointTable.Key
        fileprivate let home: Int
    }

    /// ``location(forKey:in:)`` in two steps, for a caller with other work to do while memory answers: this one
    /// finds the key's table and home slot and asks for the slot's load; ``location(of:)`` then reads it (nil:
    /// the key is not the index's, ``Answer/unknown``). O(1), no wait on the slot's memory.
    @inline(__always)
    func beginLocation(forKey key: UnsafeRawBufferPointer, in keyspace: String) -> PendingLookup? {
        guard let k = PointTable.Key(key), let t = tables.position(ofName: keyspace) else { return nil }
        let table = tables.values[t]
        let home = table.home(k)
        table.prefetch(home: home)
        return PendingLookup(table: Unmanaged.passUnretained(table), key: k, home: home)
    }

    /// The answer of a lookup begun by ``beginLocation(forKey:in:)`` under the same hold of the state's read lock.
    /// O(1) expected.
    @inline(__always)
    func location(of pending: PendingLookup?) -> Answer {
        guard let p = pending else { return .unknown }
        return p.table._withUnsafeGuaranteedRef { Answer($0.location(forKey: p.key, from: p.home)) }
    }

    /// What the index knows of each of `keys` in `keyspace`, written to `answers` (as many as `keys`, in their
    /// order): ``location(forKey:in:)`` for each, the probes' loads overlapped through a
    /// ``PointTable/PrefetchRing`` (the slots are scattered). Returns false, writing nothing, when the keyspace has
    /// no table (every answer ``Answer/unknown``). O(keys) expected.
    @discardableResult
    func locations(forKeys keys: ArraySlice<[UInt8]>, in keyspace: String,
                   into answers: UnsafeMutableBufferPointer<Answer>) -> Bool {
        guard let t = tables.position(ofName: keyspace) else { return false }
        let table = tables.values[t]
        let first = keys.startIndex
        func answer(_ item: (index: Int, key: PointTable.Key), _ home: Int) {
            answers[item.index] = Answer(table.location(forKey: item.key, from: home))
        }
        PointTable.PrefetchRing<(index: Int, key: PointTable.Key)>.with { ring in
            for i in keys.indices {
                guard let k = keys[i].withUnsafeBytes({ PointTable.Key($0) }) else { continue }
                ring.add((i - first, k), home: table.home(k), in: table, answer)
            }
            ring.drain(answer)
        }
        return true
    }

    /// Keys held and bytes of memory taken, over every table.
    var statistics: (keys: Int, bytes: Int) {
        tables.values.reduce((0, 0)) { ($0.0 + $1.count, $0.1 + $1.bytes) }
    }

    // MARK: Commits (the writer thread)

    /// Without the state's lock, before ``publish(_:location:)``: builds the grown tables that `plan`'s puts need
    /// (a new keyspace's table, or a copy with room to spare of one that would pass its load), so that the
    /// exclusive section only installs them. Only puts of keys of at most 16 bytes count. O(operations), plus
    /// O(capacity) for a table that grows.
    func prepare(_ plan: CommitGroupPlan) {
        guard isEnabled else { return }
        let names = plan.operations.keyspaceNames
        plan.operations.withPacked { ops in
            withUnsafeTemporaryAllocation(of: Int.self, capacity: names.count) { puts in
                puts.initialize(repeating: 0)
                for i in 0 ..< ops.count where ops[i].kind == .put && PointTable.holds(keyLength: ops[i].keyLength) {
                    puts[ops[i].keyspace] += 1
                }
                for (n, name) in names.enumerated() where puts[n] > 0 {
                    if let t = tables.position(ofName: name) {
                        let table = tables.values[t]
                        if table.needsGrowth(adding: puts[n]) {
                            prepared[name] = table.grown(toHold: table.count + puts[n])
                        }
                    } else {
                        prepared[name] = PointTable(reserving: puts[n])
                    }
                }
            }
        }
    }

    /// Under the state's write lock, with the primary trees' ``EngineState/publish(_:location:)``: installs the
    /// prepared tables and applies `plan`'s operations in commit order; `location(i)` is where operation `i` was
    /// written. Returns the tables replaced, to drop after the lock. O(operations) expected.
    func publish(_ plan: CommitGroupPlan, location: (Int) -> RecordLocation) -> Retired {
        guard isEnabled else { return [] }
        changed()
        var retired: Retired = []
        for (name, table) in prepared {
            if let old = tables.updateValue(table, forKey: name) { retired.append(old) }
        }
        prepared = [:]
        let names = plan.operations.keyspaceNames
        // Each keyspace's table, by the batch's number for it (nil: deletes in a keyspace that does not exist);
        // unretained: `tables` holds them.
        withUnsafeTemporaryAllocation(of: Unmanaged<PointTable>?.self, capacity: names.count) { byKeyspace in
            for (n, name) in names.enumerated() {
                byKeyspace[n] = tables.position(ofName: name).map { Unmanaged.passUnretained(tables.values[$0]) }
            }
            plan.operations.withPacked { ops in Self.apply(ops, to: byKeyspace, location: location) }
        }
        return retired
    }

    /// Applies `ops` in commit order, where the batch holds them (in key order they are scattered over it), to
    /// the tables of their keyspaces, through a ``PointTable/PrefetchRing`` (the slots are scattered).
    private static func apply(_ ops: WriteBatch.Packed, to tables: UnsafeMutableBufferPointer<Unmanaged<PointTable>?>,
                              location: (Int) -> RecordLocation) {
        /// Changes operation `operation`, whose key is `key` with home `home`, in its keyspace's table.
        func apply(_ item: (operation: Int, key: PointTable.Key), _ home: Int) {
            let table = tables[ops[item.operation].keyspace].unsafelyUnwrapped.takeUnretainedValue()
            switch ops[item.operation].kind {
            case .put: table.update(location(item.operation), forKey: item.key, home: home)
            case .delete: table.remove(item.key, home: home)
            }
        }
        PointTable.PrefetchRing<(operation: Int, key: PointTable.Key)>.with { ring in
            for i in 0 ..< ops.count {
                guard let table = tables[ops[i].keyspace]?.takeUnretainedValue(),
                      let key = PointTable.Key(ops.key(i)) else { continue }
                ring.add((i, key), home: table.home(key), in: table, apply)
            }
            ring.drain(apply)
        }
    }

    // MARK: Compaction (the writer thread)

    /// The tables that a compaction's relocations give, built without the state's lock: a copy of each table
    /// whose keyspace's compaction holds many records of keys of at most 16 bytes (more than a sixteenth of the
    /// table's slots), with each record still at its old location moved to its new one. Keyspaces with fewer are
    /// left to ``install(_:)``. O(records + copied slots).
    func relocated(by plan: CompactionPlan) -> Relocation {
        var relocation = Relocation(plan: plan)
        guard isEnabled else { return relocation }
        for (k, keyspace) in plan.keyspaces.enumerated() {
            guard let t = tables.position(ofName: keyspace.name) else { continue }
            let short = (0 ..< keyspace.count).reduce(0) { n, i in
                n + (PointTable.holds(keyLength: keyspace.withKey(i) { $0.count }) ? 1 : 0)
            }
            guard short > tables.values[t].capacity / 16 else { continue }
            let copy = PointTable(copying: tables.values[t])
            Self.move(plan.keyspaces[k], in: copy)
            relocation.tables[keyspace.name] = copy
        }
        return relocation
    }

    /// Under the state's write lock, as the compacted state is published: installs the relocated tables and moves
    /// the records of the other keyspaces. Returns the tables replaced, to drop after the lock. O(records of those
    /// keyspaces).
    func install(_ relocation: Relocation) -> Retired {
        guard isEnabled else { return [] }
        changed()
        var retired: Retired = []
        for keyspace in relocation.plan.keyspaces {
            if let table = relocation.tables[keyspace.name] {
                if let old = tables.updateValue(table, forKey: keyspace.name) { retired.append(old) }
            } else if let t = tables.position(ofName: keyspace.name) {
                Self.move(keyspace, in: tables.values[t])
            }
        }
        return retired
    }

    /// Moves each record of `keyspace` that `table` still has at its old location to its new one (a record written
    /// again since the compaction read it stays where the writer put it), as the compaction moves them in the
    /// primary tree.
    private static func move(_ keyspace: CompactionPlan.Keyspace, in table: PointTable) {
        for i in 0 ..< keyspace.count {
            keyspace.withKey(i) { key in
                guard let k = PointTable.Key(key), table.location(forKey: k) == keyspace.oldLocations[i] else { return }
                table.update(keyspace.newLocations[i], forKey: k)
            }
        }
    }

    /// What ``relocated(by:)`` built for a compaction, for ``install(_:)``.
    struct Relocation {
        /// The compaction's plan: each keyspace's records with their old and new locations.
        let plan: CompactionPlan
        /// The copies built for keyspaces with many records to move, by keyspace.
        var tables: [String: PointTable] = [:]
    }
}

extension PointIndex.Answer {
    /// The location the answer gives (nil for ``absent``), or `tree()`'s for ``unknown``, where `tree()` looks
    /// `key` up in the primary tree of `keyspace` in the state the index describes. Debug builds check a known
    /// answer against `tree()` too. O(1), plus `tree()` for ``unknown``.
    @inline(__always)
    func location(orTree tree: () -> RecordLocation?, key: [UInt8], keyspace: String) -> RecordLocation? {
        let location: RecordLocation?
        switch self {
        case .found(let found): location = found
        case .absent: location = nil
        case .unknown: return tree()
        }
        #if LUCID_INTERNAL_CHECKS
        precondition(location == tree(), "point index: \(key) in \(keyspace) is not where the primary tree has it")
        #endif
        return location
    }
}
