import Foundation
import Synchronization

/// The build of a ``PointIndex``'s tables after open, on a thread of its own.
extension PointIndex {
    /// Builds the tables of `state` (the state open published, before anything changes the trees) on a thread of
    /// its own, then, unless ``cancelBuild()`` was called, calls `install` with them, which installs them with
    /// ``install(built:)`` under the state's write lock. Nothing when the index is off. O(keys) on that thread;
    /// the state is released before the build counts as done, so the writer's first changes do not copy the
    /// trees' nodes it still shares.
    func startBuilding(from state: EngineState, install: @escaping @Sendable (Built) -> Void) {
        guard isEnabled else { return }
        building.enter()
        let source = Mutex<EngineState?>(state)
        let thread = Thread { [self] in
            if let built = Built(taking: source, cancelled: buildCancelled) { install(built) }
            building.leave()
        }
        thread.name = "lucid.point-index"
        thread.start()
    }

    /// Blocks until the build started at open has installed its tables (or stopped, cancelled). O(1) once it has.
    func waitUntilBuilt() { building.wait() }

    /// Makes a build still running stop at its next keyspace or 64k keys, installing nothing (close).
    func cancelBuild() { buildCancelled.store(true, ordering: .relaxed) }

    /// Tables built from a state's primary trees, for ``install(built:)``.
    struct Built: Sendable {
        /// A table per keyspace of the state that holds keys of at most 16 bytes, by name.
        fileprivate(set) var tables: [String: PointTable] = [:]

        /// The tables of the state `source` holds, which it takes (leaving nil) and releases before returning;
        /// nil when `cancelled` is set meanwhile. O(keys): each keyspace's tree walked in order twice, to count
        /// its keys of at most 16 bytes, then (when it has some) to put them in a table sized for them.
        init?(taking source: borrowing Mutex<EngineState?>, cancelled: borrowing Atomic<Bool>) {
            guard let state = source.withLock({ state in defer { state = nil }; return state }) else { return nil }
            for (name, keyspace) in state.keyspaces {
                var short = 0
                keyspace.primary.forEach { key, _ in
                    if PointTable.holds(keyLength: key.count) { short += 1 }
                    return true
                }
                guard short > 0 else { continue }   // no table: the tree answers for longer keys
                let table = PointTable(reserving: short)
                PointTable.PrefetchRing<PointTable.Slot>.with { ring in
                    var visited = 0
                    keyspace.primary.forEach { key, location in
                        if let k = PointTable.Key(key) {
                            ring.add(PointTable.slot(k, location), home: table.home(k), in: table) {
                                table.insertNew($0, from: $1)
                            }
                        }
                        visited += 1
                        return visited & 0xFFFF != 0 || !cancelled.load(ordering: .relaxed)
                    }
                    ring.drain { table.insertNew($0, from: $1) }
                }
                if cancelled.load(ordering: .relaxed) { return nil }
                tables[name] = table
            }
        }
    }

    /// Under the state's write lock: makes `built` the tables. O(keyspaces).
    func install(built: Built) {
        tables = built.tables
        changed()
    }

    /// Under the state's write lock, once the build is done or cancelled: drops every table (the engine closes).
    /// Returns them, to drop after the lock.
    func removeAll() -> Retired {
        defer {
            tables = [:]
            prepared = [:]
            changed()
        }
        return Array(tables.values) + Array(prepared.values)
    }
}
