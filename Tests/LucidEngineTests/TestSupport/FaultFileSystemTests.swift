import LucidEngine
import LucidEngineTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Tests of the test infrastructure itself: the fault-injecting in-memory file system and the real-file
/// corruption helpers.
@Suite("FaultFileSystem")
struct FaultFileSystemTests {
    static let dir = "/db"
    static let path = "/db/000001.log"

    /// A file system with `/db` created and an empty, durably named `/db/000001.log`.
    func makeFS(sectorSize: Int = 512) throws -> (FaultFileSystem, any FileHandle) {
        let fs = FaultFileSystem(sectorSize: sectorSize)
        try fs.createDirectory(at: Self.dir)
        let handle = try fs.openFile(at: Self.path, mode: .readWrite(create: true))
        try fs.syncDirectory(at: Self.dir)
        return (fs, handle)
    }

    func pattern(_ count: Int, seed: UInt8) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ Int(seed) &* 7 &+ 1) | 1 }
    }

    // MARK: durability of data

    @Test func unsyncedWritesAreLostAndSyncedWritesKept() throws {
        let (fs, handle) = try makeFS()
        try handle.write(pattern(100, seed: 1), at: 0)
        #expect(fs.crash(policy: .dropUnsynced).bytes(of: Self.path) == [])
        #expect(fs.crash(policy: .keepAll).bytes(of: Self.path) == pattern(100, seed: 1))
        try handle.sync()
        #expect(fs.crash(policy: .dropUnsynced).bytes(of: Self.path) == pattern(100, seed: 1))
    }

    @Test func partiallySyncedFileKeepsExactlyItsSyncedPrefix() throws {
        let (fs, handle) = try makeFS()
        let synced = pattern(1000, seed: 2)
        try handle.write(synced, at: 0)
        try handle.sync()
        try handle.write(pattern(700, seed: 3), at: 1000)
        try handle.write([9, 9, 9], at: 10)  // an unsynced overwrite inside the synced part
        #expect(try handle.size() == 1700)
        let crashed = fs.crash(policy: .dropUnsynced)
        #expect(crashed.bytes(of: Self.path) == synced)
        #expect(crashed.durableBytes(of: Self.path) == synced)
        #expect(fs.durableBytes(of: Self.path) == synced)
        // The original is untouched by the crash.
        #expect(fs.bytes(of: Self.path)?.count == 1700)
    }

    @Test func unsyncedTruncationIsUndoneByCrash() throws {
        let (fs, handle) = try makeFS()
        try handle.write(pattern(800, seed: 4), at: 0)
        try handle.sync()
        try handle.truncate(to: 100)
        #expect(fs.crash(policy: .dropUnsynced).bytes(of: Self.path) == pattern(800, seed: 4))
        #expect(fs.crash(policy: .keepAll).bytes(of: Self.path) == Array(pattern(800, seed: 4).prefix(100)))
    }

    // MARK: durability of names

    @Test func newFileNeedsDirectorySync() throws {
        let fs = FaultFileSystem()
        try fs.createDirectory(at: "/db")
        let handle = try fs.openFile(at: "/db/new", mode: .readWrite(create: true))
        try handle.write([1, 2, 3], at: 0)
        try handle.sync()
        let lost = fs.crash(policy: .dropUnsynced)
        #expect(!lost.fileExists(at: "/db/new"))
        #expect(lost.directoryExists(at: "/db"))
        #expect(fs.crash(policy: .keepAll).bytes(of: "/db/new") == [1, 2, 3])
        try fs.syncDirectory(at: "/db")
        #expect(fs.crash(policy: .dropUnsynced).bytes(of: "/db/new") == [1, 2, 3])
    }

    @Test func renameNeedsDirectorySync() throws {
        let fs = FaultFileSystem()
        try fs.createDirectory(at: "/db")
        let handle = try fs.openFile(at: "/db/a.tmp", mode: .readWrite(create: true))
        try handle.write([7], at: 0)
        try handle.sync()
        try fs.syncDirectory(at: "/db")
        try fs.rename(from: "/db/a.tmp", to: "/db/a")
        #expect(fs.fileNames(in: "/db") == ["a"])
        #expect(fs.durableFileNames(in: "/db") == ["a.tmp"])
        let before = fs.crash(policy: .dropUnsynced)
        #expect(before.fileNames(in: "/db") == ["a.tmp"])
        #expect(before.bytes(of: "/db/a.tmp") == [7])
        try fs.syncDirectory(at: "/db")
        let after = fs.crash(policy: .dropUnsynced)
        #expect(after.fileNames(in: "/db") == ["a"])
        #expect(after.bytes(of: "/db/a") == [7])
        // The handle follows the file, not the name.
        try handle.write([8], at: 1)
        #expect(fs.bytes(of: "/db/a") == [7, 8])
    }

    @Test func unsyncedRemovalIsUndoneByCrash() throws {
        let (fs, handle) = try makeFS()
        try handle.write([5, 5], at: 0)
        try handle.sync()
        try fs.removeFile(at: Self.path)
        #expect(!fs.fileExists(at: Self.path))
        #expect(try handle.read(at: 0, count: 10) == [5, 5])
        #expect(fs.crash(policy: .dropUnsynced).bytes(of: Self.path) == [5, 5])
        try fs.syncDirectory(at: Self.dir)
        #expect(!fs.crash(policy: .dropUnsynced).fileExists(at: Self.path))
    }

    @Test func randomCrashKeepsRenamesAtomic() throws {
        let fs = FaultFileSystem()
        try fs.createDirectory(at: "/db")
        try fs.openFile(at: "/db/x", mode: .readWrite(create: true)).close()
        try fs.syncDirectory(at: "/db")
        try fs.rename(from: "/db/x", to: "/db/y")
        var outcomes = Set<[String]>()
        for seed in 0..<40 as Range<UInt64> {
            let names = fs.crash(policy: .randomSubset, seed: seed).fileNames(in: "/db")
            #expect(names == ["x"] || names == ["y"])
            outcomes.insert(names)
        }
        #expect(outcomes.count == 2)
    }

    // MARK: fault injection

    @Test(arguments: [false, true])
    func thirdWriteFails(persistent: Bool) throws {
        let (fs, handle) = try makeFS()
        fs.failOperation([.write], nth: 3, errno: EIO, persistent: persistent)
        try handle.write([1], at: 0)
        try handle.write([2], at: 1)
        let error = #expect(throws: LucidError.self) { try handle.write([3], at: 2) }
        #expect(error?.code == .io)
        #expect(error?.errno == EIO)
        #expect(fs.bytes(of: Self.path) == [1, 2])
        if persistent {
            #expect(throws: LucidError.self) { try handle.write([4], at: 2) }
            #expect(throws: LucidError.self) { try handle.write([5], at: 2) }
            #expect(fs.injectedFaultCount == 3)
        } else {
            try handle.write([4], at: 2)
            try handle.write([5], at: 3)
            #expect(fs.bytes(of: Self.path) == [1, 2, 4, 5])
            #expect(fs.injectedFaultCount == 1)
        }
        #expect(fs.operationCount(.write) == 5)
        fs.clearFaults()
        try handle.write([6], at: 0)
    }

    @Test func faultsCountOnlyMatchingOperationsAndPaths() throws {
        let (fs, handle) = try makeFS()
        let other = try fs.openFile(at: "/db/other", mode: .readWrite(create: true))
        fs.failOperation([.sync], nth: 2, pathFilter: { $0.hasSuffix("000001.log") })
        try other.sync()
        try other.sync()
        try handle.write([1], at: 0)
        try handle.sync()
        #expect(throws: LucidError.self) { try handle.sync() }
        try handle.sync()
        #expect(fs.operationCount(.sync) == 5)
    }

    @Test func failNthOperationLoopEnumeratesEveryOperation() throws {
        func workload(_ fs: FaultFileSystem) throws {
            try fs.createDirectory(at: "/db")
            let handle = try fs.openFile(at: "/db/f", mode: .readWrite(create: true))
            try handle.write([1, 2, 3], at: 0)
            try handle.sync()
            try fs.syncDirectory(at: "/db")
            try fs.rename(from: "/db/f", to: "/db/g")
            try fs.syncDirectory(at: "/db")
        }
        let clean = FaultFileSystem()
        try workload(clean)
        let total = clean.totalOperationCount
        #expect(total == 8, "createDirectory counts its mkdir and its parent's sync")
        for n in 1...(total + 1) {
            let fs = FaultFileSystem()
            fs.failOperation(Set(FaultFileSystem.Operation.allCases), nth: n, persistent: true)
            #expect((try? workload(fs)) == nil || n > total)
            #expect(fs.injectedFaultCount == (n > total ? 0 : 1))
        }
    }

    @Test func shortWriteWithENOSPCWritesAPrefix() throws {
        let (fs, handle) = try makeFS(sectorSize: 512)
        fs.failOperation([.write], nth: 1, errno: ENOSPC, shortWrite: true)
        let data = pattern(3000, seed: 5)
        let error = #expect(throws: LucidError.self) { try handle.write(data, at: 100) }
        #expect(error?.errno == ENOSPC)
        // Half of 3000 rounded down to whole sectors: 1024 bytes.
        #expect(try handle.size() == 100 + 1024)
        #expect(fs.bytes(of: Self.path) == [UInt8](repeating: 0, count: 100) + data.prefix(1024))
    }

    @Test func failedSyncLeavesDurableBytesUnchanged() throws {
        let (fs, handle) = try makeFS()
        try handle.write([1, 1], at: 0)
        try handle.sync()
        try handle.write([2, 2], at: 2)
        fs.failOperation([.sync], nth: 1, errno: EIO)
        let error = #expect(throws: LucidError.self) { try handle.sync() }
        #expect(error?.errno == EIO)
        #expect(fs.durableBytes(of: Self.path) == [1, 1])
        #expect(fs.bytes(of: Self.path) == [1, 1, 2, 2])
        #expect(fs.crash(policy: .dropUnsynced).bytes(of: Self.path) == [1, 1])
    }

    @Test func fsyncgateRetryDoesNotMakeLostDataDurable() throws {
        let (fs, handle) = try makeFS(sectorSize: 4)
        try handle.write([1, 1, 1, 1], at: 0)
        try handle.sync()
        try handle.write([2, 2, 2, 2, 3, 3, 3, 3], at: 4)
        fs.failOperation([.sync], nth: 1, errno: EIO, dropsDirtyData: true)
        #expect(throws: LucidError.self) { try handle.sync() }
        // Still readable, but the retry does not write it back; only data dirtied afterwards is.
        #expect(try handle.read(at: 4, count: 8) == [2, 2, 2, 2, 3, 3, 3, 3])
        try handle.write([4, 4, 4, 4], at: 8)
        try handle.sync()
        #expect(fs.durableBytes(of: Self.path) == [1, 1, 1, 1, 0, 0, 0, 0, 4, 4, 4, 4])
        #expect(fs.crash(policy: .keepAll).bytes(of: Self.path) == [1, 1, 1, 1, 0, 0, 0, 0, 4, 4, 4, 4])
        try handle.sync()
        #expect(fs.durableBytes(of: Self.path) == [1, 1, 1, 1, 0, 0, 0, 0, 4, 4, 4, 4])
        // Rewriting a lost sector makes it writable again.
        try handle.write([5], at: 4)
        try handle.sync()
        #expect(fs.durableBytes(of: Self.path) == [1, 1, 1, 1, 5, 2, 2, 2, 4, 4, 4, 4])
    }

    @Test func failedNamespaceOperationsChangeNothing() throws {
        let (fs, _) = try makeFS()
        fs.failOperation([.rename, .remove, .open, .createDirectory, .syncDirectory], nth: 1, persistent: true)
        #expect(throws: LucidError.self) { try fs.rename(from: Self.path, to: "/db/x") }
        #expect(throws: LucidError.self) { try fs.removeFile(at: Self.path) }
        #expect(throws: LucidError.self) { try fs.openFile(at: "/db/y", mode: .readWrite(create: true)) }
        #expect(throws: LucidError.self) { try fs.createDirectory(at: "/db/sub") }
        #expect(throws: LucidError.self) { try fs.syncDirectory(at: Self.dir) }
        #expect(fs.fileNames(in: Self.dir) == ["000001.log"])
        #expect(!fs.directoryExists(at: "/db/sub"))
    }

    // MARK: locks

    @Test func lockIsExclusiveUntilUnlockOrCrash() throws {
        let fs = FaultFileSystem()
        try fs.createDirectory(at: "/db")
        let lock = try fs.lockFile(at: "/db/LOCK", pid: 4242)
        #expect(fs.bytes(of: "/db/LOCK") == Array("4242\n".utf8))
        let error = #expect(throws: LucidError.self) { try fs.lockFile(at: "/db/LOCK", pid: 7) }
        #expect(error?.code == .locked)
        #expect(error?.pid == 4242)
        lock.unlock()
        let second = try fs.lockFile(at: "/db/LOCK", pid: 7)
        #expect(fs.lockHolder(of: "/db/LOCK") == 7)
        let crashed = fs.crash(policy: .keepAll)
        #expect(crashed.lockHolder(of: "/db/LOCK") == nil)
        let third = try crashed.lockFile(at: "/db/LOCK", pid: 8)
        #expect(fs.lockHolder(of: "/db/LOCK") == 7)
        second.unlock()
        third.unlock()
    }

    @Test func injectedLockFaultThrowsIO() throws {
        let fs = FaultFileSystem()
        fs.failOperation([.lock], nth: 1, errno: EIO)
        let error = #expect(throws: LucidError.self) { try fs.lockFile(at: "/LOCK", pid: 1) }
        #expect(error?.code == .io)
        #expect(fs.lockHolder(of: "/LOCK") == nil)
    }

    // MARK: random crash policies

    /// A file with a synced prefix, an unsynced overwrite inside it and unsynced appends.
    func fileWithUnsyncedTail(sectorSize: Int) throws -> (fs: FaultFileSystem, durable: [UInt8], current: [UInt8]) {
        let (fs, handle) = try makeFS(sectorSize: sectorSize)
        try handle.write(pattern(3000, seed: 6), at: 0)
        try handle.sync()
        try handle.write(pattern(5000, seed: 7), at: 3000)
        try handle.write(pattern(10, seed: 8), at: 2000)
        return (fs, fs.durableBytes(of: Self.path) ?? [], fs.bytes(of: Self.path) ?? [])
    }

    @Test(arguments: [FaultFileSystem.CrashPolicy.randomSubset, .tornWrites])
    func randomPoliciesAreDeterministicAndOnlyTouchUnsyncedBytes(policy: FaultFileSystem.CrashPolicy) throws {
        let (fs, durable, current) = try fileWithUnsyncedTail(sectorSize: 512)
        var outcomes = Set<[UInt8]>()
        for seed in 0..<64 as Range<UInt64> {
            let bytes = try #require(fs.crash(policy: policy, seed: seed).bytes(of: Self.path))
            #expect(fs.crash(policy: policy, seed: seed).bytes(of: Self.path) == bytes)
            outcomes.insert(bytes)
            #expect(bytes.count >= durable.count && bytes.count <= current.count)
            var tornSectors = Set<Int>()
            for i in 0..<bytes.count {
                if i < durable.count && durable[i] == current[i] {
                    #expect(bytes[i] == durable[i], "synced byte \(i) changed (seed \(seed))")
                } else if bytes[i] != current[i] && (i >= durable.count || bytes[i] != durable[i]) {
                    tornSectors.insert(i / 512)  // neither version: a hole (zeros) or a torn sector
                }
            }
            if policy == .tornWrites {
                #expect(tornSectors.count <= 1, "more than one torn sector (seed \(seed))")
            } else {
                for i in durable.count..<bytes.count where bytes[i] != current[i] { #expect(bytes[i] == 0) }
                // The overwrite at 2000..<2010 lies in one sector: all old or all new.
                let overwritten = Array(bytes[2000..<2010])
                #expect(overwritten == Array(durable[2000..<2010]) || overwritten == Array(current[2000..<2010]))
            }
        }
        #expect(outcomes.count > 8, "the seed does not vary the outcome")
    }

    @Test func tornWritesKeepAPrefixInFileOrder() throws {
        let (fs, handle) = try makeFS(sectorSize: 512)
        try handle.write(pattern(1024, seed: 9), at: 0)
        try handle.sync()
        let tail = pattern(4096, seed: 10)
        try handle.write(tail, at: 1024)
        var sawZeros = false
        var sawGarbage = false
        for seed in 0..<100 as Range<UInt64> {
            let bytes = try #require(fs.crash(policy: .tornWrites, seed: seed).bytes(of: Self.path))
            #expect(Array(bytes.prefix(1024)) == pattern(1024, seed: 9))
            let kept = Array(bytes.dropFirst(1024))
            // Everything before the first difference is new data; after it, at most one sector of damage.
            let firstDifference = kept.indices.first { kept[$0] != tail[$0] } ?? kept.count
            #expect(kept.count - firstDifference <= 512)
            #expect((kept.count % 512 == 0) || kept.count == tail.count)
            let damage = kept.dropFirst(firstDifference)
            if !damage.isEmpty, damage.allSatisfy({ $0 == 0 }) { sawZeros = true }
            if damage.contains(where: { $0 != 0 }) { sawGarbage = true }
        }
        #expect(sawZeros && sawGarbage)
    }

    @Test func crashForgetsHandlesFaultsAndCounts() throws {
        let (fs, handle) = try makeFS()
        try handle.write([1], at: 0)
        fs.failOperation([.write], nth: 1, persistent: true)
        let crashed = fs.crash(policy: .keepAll)
        #expect(crashed.totalOperationCount == 0)
        #expect(crashed.openHandleCount == 0)
        let fresh = try crashed.openFile(at: Self.path, mode: .readWrite(create: false))
        try fresh.write([2], at: 1)
        #expect(crashed.bytes(of: Self.path) == [1, 2])
        #expect(crashed.durableBytes(of: Self.path) == [1])
        #expect(throws: LucidError.self) { try handle.write([3], at: 0) }
    }

    // MARK: handle and namespace semantics

    @Test func handleSemantics() throws {
        let (fs, handle) = try makeFS()
        #expect(try handle.read(at: 0, count: 10) == [])
        try handle.write([1, 2, 3], at: 5)
        #expect(try handle.size() == 8)
        #expect(try handle.read(at: 0, count: 100) == [0, 0, 0, 0, 0, 1, 2, 3])
        #expect(try handle.read(at: 6, count: 1) == [2])
        #expect(try handle.read(at: 8, count: 4) == [])
        #expect(try handle.read(at: 1 << 40, count: 4) == [])
        let second = try fs.openFile(at: Self.path, mode: .readOnly)
        #expect(try second.read(at: 5, count: 3) == [1, 2, 3])
        #expect(throws: LucidError.self) { try second.write([1], at: 0) }
        try handle.truncate(to: 6)
        #expect(try second.size() == 6)
        try handle.truncate(to: 9)
        #expect(try second.read(at: 0, count: 9) == [0, 0, 0, 0, 0, 1, 0, 0, 0])
        try handle.close()
        try handle.close()
        let error = #expect(throws: LucidError.self) { try handle.read(at: 0, count: 1) }
        #expect(error?.code == .io)
        #expect(error?.errno == EBADF)
        #expect(throws: LucidError.self) { try handle.sync() }
        #expect(try second.size() == 9)
    }

    @Test func namespaceSemantics() throws {
        let fs = FaultFileSystem()
        let missing = #expect(throws: LucidError.self) { try fs.openFile(at: "/a/b", mode: .readWrite(create: false)) }
        #expect(missing?.code == .notFound)
        #expect(throws: LucidError.self) { try fs.openFile(at: "/a/b", mode: .readWrite(create: true)) }
        try fs.createDirectory(at: "/a/b/c")
        #expect(fs.directoryExists(at: "/a") && fs.directoryExists(at: "/a/b/") && fs.directoryExists(at: "/a//b/c"))
        try fs.openFile(at: "/a/b/f", mode: .readWrite(create: true)).close()
        #expect(fs.fileExists(at: "/a/b/f"))
        #expect(!fs.fileExists(at: "/a/b/c"))
        #expect(!fs.directoryExists(at: "/a/b/f"))
        #expect(try fs.contentsOfDirectory(at: "/a/b") == ["c", "f"])
        #expect(try fs.contentsOfDirectory(at: "/") == ["a"])
        #expect((#expect(throws: LucidError.self) { try fs.removeFile(at: "/a/b/g") })?.code == .notFound)
        #expect((#expect(throws: LucidError.self) { try fs.rename(from: "/a/b/g", to: "/a/h") })?.code == .notFound)
        #expect((#expect(throws: LucidError.self) { try fs.contentsOfDirectory(at: "/nope") })?.code == .notFound)
        #expect((#expect(throws: LucidError.self) { try fs.createDirectory(at: "/a/b/f") })?.code == .io)
        try fs.rename(from: "/a/b/f", to: "/a/f2")
        #expect(fs.fileNames(in: "/a") == ["f2"])
        #expect(fs.fileNames(in: "/a/b") == [])
        try fs.removeFile(at: "/a/f2")
        #expect(fs.fileNames(in: "/a") == [])
    }

    @Test func setBytesInjectsDurableCorruption() throws {
        let (fs, handle) = try makeFS()
        try handle.write([1, 2, 3], at: 0)
        fs.setBytes([9, 9], of: Self.path)
        #expect(try handle.read(at: 0, count: 10) == [9, 9])
        #expect(fs.crash(policy: .dropUnsynced).bytes(of: Self.path) == [9, 9])
        fs.setBytes([4], of: "/fresh/dir/file")
        #expect(fs.crash(policy: .dropUnsynced).bytes(of: "/fresh/dir/file") == [4])
    }

    @Test func concurrentWritersThroughSeveralHandles() async throws {
        let (fs, initial) = try makeFS()
        await withTaskGroup(of: Void.self) { group in
            for task in 0..<8 {
                group.addTask {
                    guard let handle = try? fs.openFile(at: Self.path, mode: .readWrite(create: false)) else { return }
                    for i in 0..<100 { try? handle.write([UInt8(task)], at: UInt64(task * 100 + i)) }
                    try? handle.close()
                }
            }
        }
        let bytes = try #require(fs.bytes(of: Self.path))
        #expect(bytes == (0..<8).flatMap { [UInt8](repeating: UInt8($0), count: 100) })
        #expect(fs.openHandleCount == 1)
        try initial.close()
        #expect(fs.openHandleCount == 0)
    }

    // MARK: real files

    @Test func exportAndImportRoundTrip() throws {
        let real = try CorruptionHelpers.makeTemporaryDirectory(prefix: "faultfs-test")
        defer { try? CorruptionHelpers.removeDirectory(real) }
        let (fs, handle) = try makeFS()
        try handle.write(pattern(2000, seed: 11), at: 0)
        try fs.createDirectory(at: "/db/sub")
        try fs.exportDirectory(Self.dir, toRealDirectory: real + "/export")
        #expect(try CorruptionHelpers.readFile(path: real + "/export/000001.log") == pattern(2000, seed: 11))
        try CorruptionHelpers.flipBit(path: real + "/export/000001.log", offset: 3, bit: 0)
        let other = FaultFileSystem()
        try other.importDirectory(fromRealDirectory: real + "/export", into: "/restored")
        var expected = pattern(2000, seed: 11)
        expected[3] ^= 1
        #expect(other.fileNames(in: "/restored") == ["000001.log"])
        #expect(other.crash(policy: .dropUnsynced).bytes(of: "/restored/000001.log") == expected)
    }

    @Test func corruptionHelpersOnRealFiles() throws {
        let dir = try CorruptionHelpers.makeTemporaryDirectory(prefix: "corruption-test")
        let second = try CorruptionHelpers.makeTemporaryDirectory(prefix: "corruption-test")
        #expect(dir != second)
        defer {
            try? CorruptionHelpers.removeDirectory(dir)
            try? CorruptionHelpers.removeDirectory(second)
        }
        let file = dir + "/f"
        try CorruptionHelpers.writeFile(path: file, bytes: [0, 0, 0, 0])
        try CorruptionHelpers.flipBit(path: file, offset: 1, bit: 7)
        #expect(try CorruptionHelpers.setByte(path: file, offset: 2, value: 5) == 0)
        #expect(try CorruptionHelpers.readFile(path: file) == [0, 0x80, 5, 0])
        #expect(throws: LucidError.self) { try CorruptionHelpers.flipBit(path: file, offset: 4, bit: 0) }
        let garbage = try CorruptionHelpers.appendGarbage(path: file, count: 100, seed: 42)
        let again = try CorruptionHelpers.appendGarbage(path: file, count: 100, seed: 42)
        #expect(garbage == again && garbage.contains { $0 != 0 })
        try CorruptionHelpers.appendZeros(path: file, count: 6)
        #expect(try CorruptionHelpers.fileSize(path: file) == 210)
        try CorruptionHelpers.zero(path: file, range: 0..<3)
        try CorruptionHelpers.truncate(path: file, to: 4)
        #expect(try CorruptionHelpers.readFile(path: file) == [0, 0, 0, 0])
        try CorruptionHelpers.writeFile(path: dir + "/g", bytes: [1])
        try PosixFileSystem().createDirectory(at: dir + "/nested/deeper")
        try CorruptionHelpers.copyDirectory(from: dir, to: second + "/copy")
        #expect(try PosixFileSystem().contentsOfDirectory(at: second + "/copy").sorted() == ["f", "g"])
        #expect(try CorruptionHelpers.readFile(path: second + "/copy/g") == [1])
        try CorruptionHelpers.removeDirectory(dir)
        #expect(!PosixFileSystem().directoryExists(at: dir))
        try CorruptionHelpers.removeDirectory(dir)  // missing: no error
        let notFound = #expect(throws: LucidError.self) { try CorruptionHelpers.fileSize(path: dir + "/f") }
        #expect(notFound?.code == .notFound)
    }
}
