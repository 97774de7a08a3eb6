import LucidEngine
import Synchronization

extension FaultFileSystem {
    /// What a crash does to data and directory entries that were not made durable.
    ///
    /// Durable bytes (synced) and durable entries (directory synced) always survive. For the rest:
    public enum CrashPolicy: String, Sendable, Hashable, CaseIterable {
        /// Nothing unsynced survives: every file holds exactly its durable bytes (a file whose unsynced appends
        /// are dropped is back at its durable length), every directory exactly its durable entries.
        case dropUnsynced
        /// Everything survives, as if the disk had written it all just before the crash.
        case keepAll
        /// Each sector (``FaultFileSystem/sectorSize``) that differs from its durable version keeps its new
        /// or its old content at random, independently (the disk wrote back pages in any order). When a kept
        /// sector lies past the durable end, the file extends to it and dropped sectors in between read as
        /// zeros (a hole). An unsynced shrink survives or not as a whole. Each directory keeps a random prefix of
        /// its unsynced entry changes (journaled metadata stays ordered; each rename stays atomic).
        case randomSubset
        /// Unsynced sectors survive in file order up to a random point; the first sector past it is torn: it
        /// keeps a random prefix of its new bytes and the rest of its unsynced bytes become zeros or random
        /// garbage; later sectors are dropped. Bytes equal in the current and durable versions are never
        /// touched. Directories as in ``randomSubset``.
        case tornWrites
    }

    /// Returns a new file system holding what a crash at this moment would leave on disk under `policy`. This
    /// instance is not changed (crash the same state several ways, or keep using it).
    ///
    /// In the result every file's current and durable bytes are equal, every directory's current and durable
    /// entries are equal, there are no open handles, no locks, no fault rules, and operation counts are 0.
    /// Handles and locks of this instance keep acting on this instance only.
    ///
    /// The random policies are deterministic for a given `seed` (each file's fate depends only on the seed, its
    /// path and its bytes; each directory's only on the seed, its path and its history). Costs a copy of every
    /// surviving file.
    public func crash(policy: CrashPolicy, seed: UInt64 = 0) -> FaultFileSystem {
        let old = state.withLock { $0 }
        let sectorSize = sectorSize
        var new = FaultFSState(sectorSize: sectorSize)
        new.nextNodeID = old.nextNodeID
        new.directories = [:]
        var canonicalPath: [Int: String] = [:]
        let surviving = Self.survivingDirectories(old, policy: policy, seed: seed)
        for (path, directory) in old.directories where surviving.contains(path) {
            var random = FaultFSRandom(seed: seed, salt: "directory:" + path)
            var entries: [String: Int]
            switch policy {
            case .dropUnsynced:
                entries = directory.durable
            case .keepAll:
                entries = directory.current
            case .randomSubset, .tornWrites:
                entries = directory.durable
                let kept = random.next(upTo: directory.pending.count + 1)
                for group in directory.pending.prefix(kept) {
                    for change in group { entries[change.name] = change.node }
                }
            }
            let subdirectories = directory.subdirectories.filter { surviving.contains(FaultFSPath.join(path, $0)) }
            new.directories[path] = FaultFSDirectory(current: entries, durable: entries, pending: [],
                                                     subdirectories: subdirectories,
                                                     durableSubdirectories: subdirectories)
            for (name, node) in entries {
                let full = FaultFSPath.join(path, name)
                if canonicalPath[node].map({ full < $0 }) ?? true { canonicalPath[node] = full }
            }
        }
        for (node, path) in canonicalPath {
            guard let file = old.nodes[node] else { continue }
            var random = FaultFSRandom(seed: seed, salt: "file:" + path)
            let bytes = Self.survivingBytes(current: file.writableBytes(sectorSize: sectorSize), durable: file.durable,
                                            policy: policy, sectorSize: sectorSize, random: &random)
            new.nodes[node] = FaultFSNode(current: bytes, durable: bytes)
        }
        return FaultFileSystem(sectorSize: sectorSize, state: new)
    }

    /// Returns an independent copy of this file system: same current and durable bytes and entries (including
    /// what is not yet durable), but no open handles, no locks, no fault rules and operation counts at 0.
    /// Costs O(number of files) (file bytes are shared copy-on-write).
    public func copy() -> FaultFileSystem {
        var snapshot = state.withLock { $0 }
        snapshot.handles = [:]
        snapshot.locks = [:]
        snapshot.rules = []
        snapshot.counts = [:]
        snapshot.injectedFaultCount = 0
        return FaultFileSystem(sectorSize: sectorSize, state: snapshot)
    }

    /// The bytes a file holds after a crash: `durable`, plus the unsynced differences leading to `current`
    /// kept, dropped or torn according to `policy`.
    static func survivingBytes(current: [UInt8], durable: [UInt8], policy: CrashPolicy, sectorSize: Int,
                               random: inout FaultFSRandom) -> [UInt8] {
        switch policy {
        case .dropUnsynced: return durable
        case .keepAll: return current
        case .randomSubset, .tornWrites: break
        }
        if current == durable { return durable }
        // A byte is unsynced when the current and durable versions disagree on it (or only one has it).
        func unsynced(_ i: Int) -> Bool { i >= durable.count || i >= current.count || current[i] != durable[i] }
        let span = max(current.count, durable.count)
        var dirty: [Int] = []
        for sector in 0..<((span + sectorSize - 1) / sectorSize) {
            let range = (sector * sectorSize)..<min(span, (sector + 1) * sectorSize)
            if range.contains(where: unsynced) { dirty.append(sector) }
        }
        enum Fate { case kept, dropped, torn(cut: Int, garbage: Bool) }
        var fates: [Fate] = []
        switch policy {
        case .randomSubset:
            fates = dirty.map { _ in random.nextBool() ? .kept : .dropped }
        default:
            let keptCount = random.next(upTo: dirty.count + 1)
            for index in dirty.indices {
                if index < keptCount {
                    fates.append(.kept)
                } else if index == keptCount {
                    fates.append(.torn(cut: random.next(upTo: sectorSize), garbage: random.nextBool()))
                } else {
                    fates.append(.dropped)
                }
            }
        }
        var length = durable.count
        if current.count < durable.count {
            if random.nextBool() { length = current.count }
        } else {
            for (index, sector) in dirty.enumerated() {
                if case .dropped = fates[index] { continue }
                length = max(length, min(current.count, (sector + 1) * sectorSize))
            }
        }
        var result = Array(durable.prefix(length))
        if result.count < length { result.append(contentsOf: repeatElement(0, count: length - result.count)) }
        for (index, sector) in dirty.enumerated() {
            let start = sector * sectorSize
            let end = min(length, current.count, start + sectorSize)
            guard start < end else { continue }
            switch fates[index] {
            case .dropped:
                continue
            case .kept:
                for i in start..<end { result[i] = current[i] }
            case .torn(let cut, let garbage):
                for i in start..<end where unsynced(i) {
                    result[i] = i - start < cut ? current[i] : (garbage ? random.nextByte() : 0)
                }
            }
        }
        return result
    }
}

extension FaultFileSystem {
    /// The directories a crash under `policy` leaves: those whose entry, and every parent's, is durable; under
    /// ``CrashPolicy/keepAll`` every one; under the random policies also each other one at random (seeded by its
    /// path), when its parent survives.
    static func survivingDirectories(_ state: FaultFSState, policy: CrashPolicy, seed: UInt64) -> Set<String> {
        var surviving: [String: Bool] = [:]
        func survives(_ path: String) -> Bool {
            if let known = surviving[path] { return known }
            let result: Bool
            if let parts = FaultFSPath.split(path) {
                let entryKept: Bool
                if state.directories[parts.parent]?.durableSubdirectories.contains(parts.name) == true {
                    entryKept = true
                } else {
                    switch policy {
                    case .dropUnsynced: entryKept = false
                    case .keepAll: entryKept = true
                    case .randomSubset, .tornWrites:
                        var random = FaultFSRandom(seed: seed, salt: "mkdir:" + path)
                        entryKept = random.next(upTo: 2) == 1
                    }
                }
                result = entryKept && survives(parts.parent)
            } else {
                result = true   // "/" and "."
            }
            surviving[path] = result
            return result
        }
        return Set(state.directories.keys.filter(survives))
    }

    /// Writes the current bytes of every file directly inside `directory` (subdirectories are skipped) to
    /// files of the same names in the real directory `realDirectory`, which is created when missing. Existing
    /// real files are overwritten; others are left alone. Nothing is synced on the real disk.
    ///
    /// To export only what would survive a crash, export from `crash(policy: .dropUnsynced)`.
    /// Not counted, never faulted. Throws `.notFound` when `directory` does not exist here, and the
    /// ``PosixFileSystem`` errors of the real writes.
    public func exportDirectory(_ directory: String, toRealDirectory realDirectory: String) throws {
        let directory = FaultFSPath.normalize(directory)
        let files: [(name: String, bytes: [UInt8])] = try state.withLock { s in
            guard let entries = s.directories[directory]?.current else {
                throw FaultFSErrors.notFound("opendir", directory)
            }
            return entries.map { (name: $0.key, bytes: s.nodes[$0.value]?.current ?? []) }
        }
        let posix = PosixFileSystem()
        try posix.createDirectory(at: realDirectory)
        for file in files.sorted(by: { $0.name < $1.name }) {
            let handle = try posix.openFile(at: realDirectory + "/" + file.name, mode: .readWrite(create: true))
            defer { try? handle.close() }
            try handle.truncate(to: 0)
            try handle.write(file.bytes, at: 0)
        }
    }

    /// Copies every regular file directly inside the real directory `realDirectory` into `directory` here
    /// (created with its parents when missing), as durable files with durable names, replacing files of the
    /// same names. Subdirectories are skipped.
    ///
    /// Not counted, never faulted. Throws the ``PosixFileSystem`` errors of the real reads (`.notFound` when
    /// `realDirectory` is missing), and `.io` `EEXIST` when a file here is in the way of `directory`.
    public func importDirectory(fromRealDirectory realDirectory: String, into directory: String) throws {
        let posix = PosixFileSystem()
        var files: [(name: String, bytes: [UInt8])] = []
        for name in try posix.contentsOfDirectory(at: realDirectory).sorted() {
            let path = realDirectory + "/" + name
            guard posix.fileExists(at: path) else { continue }
            let handle = try posix.openFile(at: path, mode: .readOnly)
            defer { try? handle.close() }
            let size = try handle.size()
            files.append((name: name, bytes: try handle.read(at: 0, count: Int(size))))
        }
        let directory = FaultFSPath.normalize(directory)
        let imported = files
        try state.withLock { s in
            try s.createDirectory(directory, durable: true)
            for file in imported {
                s.installDurableFile(FaultFSPath.join(directory, file.name), bytes: file.bytes)
            }
        }
    }
}

/// SplitMix64: a tiny, fast, seedable generator, so crash outcomes replay exactly for a seed.
struct FaultFSRandom: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) {
        state = seed
    }

    /// Seeds from `seed` mixed with a stable (FNV-1a) hash of `salt`, so each file gets its own stream.
    init(seed: UInt64, salt: String) {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in salt.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        state = seed ^ hash
    }

    mutating func next() -> UInt64 {
        state = state &+ 0x9e37_79b9_7f4a_7c15
        var z = state
        z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
        z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
        return z ^ (z >> 31)
    }

    /// A value in `0..<bound` (`bound` > 0).
    mutating func next(upTo bound: Int) -> Int {
        Int(next() % UInt64(bound))
    }

    mutating func nextBool() -> Bool {
        next() & 1 == 1
    }

    mutating func nextByte() -> UInt8 {
        UInt8(truncatingIfNeeded: next())
    }
}
