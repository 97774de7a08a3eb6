@testable import LucidEngine
import LucidEngineTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The store directory's own entry (ALICE: a new directory is durable only once its parent is synced). The
/// fault file system drops, in a crash, every directory whose entry in its parent was not synced, with all its
/// files; `createDirectory` syncs the parent of each directory it makes, as `PosixFileSystem` does.
@Suite("Crash: the store directory's entry")
struct StoreDirectoryDurabilityTests {
    static func put(_ key: String) -> WriteBatch {
        var batch = WriteBatch()
        batch.put(Array("value of \(key)".utf8), forKey: Array(key.utf8), in: "t")
        return batch
    }

    @Test("the parent and the ancestors of a store path",
          arguments: [("/data/store", "/data", ["/data", "/"]), ("/data/store/", "/data", ["/data", "/"]),
                      ("/store", "/", ["/"]), ("store", ".", ["."]), ("a/b//", "a", ["a", "."]), ("/", "/", []),
                      (".", "..", []), ("store/.", ".", ["."]), ("./a/./b", "a", ["a", "."]),
                      ("x/..", "x/../..", []), ("../store", "..", [])])
    func parentDirectory(_ path: String, _ parent: String, _ ancestors: [String]) {
        #expect(DirectoryPaths.parent(of: path) == parent)
        #expect(DirectoryPaths.ancestors(of: path) == ancestors)
    }

    @Test("directories made without syncs above the store are synced too, before anything is acknowledged")
    func ancestorsMadeWithoutSync() throws {
        for (label, prepare) in [
            ("an application's mkdir -p without syncs", { (fs: FaultFileSystem) throws in
                try fs.createDirectory(at: "/x/y/store", syncingParents: false)
            }),
            ("an open that failed at its first parent sync", { (fs: FaultFileSystem) throws in
                _ = fs.failOperation([.syncDirectory], nth: 1)
                #expect(throws: LucidError.self) { try Engine.open(at: "/x/y/store", options: crashFaultOptions(fs)) }
                #expect(fs.directoryExists(at: "/x") && !fs.directoryIsDurable(at: "/x"))
            }),
        ] {
            let fs = FaultFileSystem()
            try prepare(fs)
            let engine = try Engine.open(at: "/x/y/store", options: crashFaultOptions(fs))
            #expect(fs.directoryIsDurable(at: "/x/y/store"), "\(label)")
            _ = try engine.commitAndWait(Self.put("deep"))
            let reopened = try Engine.open(at: "/x/y/store", options: crashFaultOptions(fs.crash(policy: .dropUnsynced)))
            #expect(try reopened.get(Array("deep".utf8), in: "t") == Array("value of deep".utf8), "\(label)")
            try reopened.close()
            try engine.close()
        }
    }

    @Test("the fault file system drops a directory whose entry was never synced, and keeps one created whole")
    func faultFileSystemModel() throws {
        let fs = FaultFileSystem()
        try fs.createDirectory(at: "/a/b")
        #expect(fs.directoryIsDurable(at: "/a") && fs.directoryIsDurable(at: "/a/b"))
        #expect(fs.operationCount(.syncDirectory) == 2, "one parent sync per directory made")
        try fs.createDirectory(at: "/a/b")
        #expect(fs.operationCount(.syncDirectory) == 2, "an existing directory syncs nothing")

        // The parent's sync fails: the directory stays, without a durable entry.
        _ = fs.failOperation([.syncDirectory], nth: 1)
        #expect(throws: LucidError.self) { try fs.createDirectory(at: "/a/c") }
        #expect(fs.directoryExists(at: "/a/c") && !fs.directoryIsDurable(at: "/a/c"))
        let file = try fs.openFile(at: "/a/c/f", mode: .readWrite(create: true))
        try file.write([1, 2, 3], at: 0)
        try file.sync()
        try fs.syncDirectory(at: "/a/c")
        try fs.createDirectory(at: "/a/c/d")
        // Synced data in a directory whose entry is not durable is lost with it, subdirectories included.
        let dropped = fs.crash(policy: .dropUnsynced)
        #expect(!dropped.directoryExists(at: "/a/c") && !dropped.directoryExists(at: "/a/c/d"))
        #expect(dropped.bytes(of: "/a/c/f") == nil)
        #expect(dropped.directoryExists(at: "/a/b"))
        let kept = fs.crash(policy: .keepAll)
        #expect(kept.bytes(of: "/a/c/f") == [1, 2, 3] && kept.directoryIsDurable(at: "/a/c/d"))
        // Syncing the parent makes the entry durable, and the subtree with it.
        try fs.syncDirectory(at: "/a")
        #expect(fs.directoryIsDurable(at: "/a/c"))
        #expect(fs.crash(policy: .dropUnsynced).bytes(of: "/a/c/f") == [1, 2, 3])
    }

    @Test("a store created in a directory whose entry is not durable syncs its parent before acknowledging anything")
    func storeInNonDurableDirectory() throws {
        let fs = FaultFileSystem()
        try fs.createDirectory(at: "/data")
        // An application made the store's directory but its parent sync failed (or it never synced it).
        _ = fs.failOperation([.syncDirectory], nth: 1)
        #expect(throws: LucidError.self) { try fs.createDirectory(at: "/data/store") }
        #expect(!fs.directoryIsDurable(at: "/data/store"))

        let engine = try Engine.open(at: "/data/store", options: crashFaultOptions(fs))
        #expect(engine.recoveryReport.created)
        #expect(fs.directoryIsDurable(at: "/data/store"), "the create synced the store directory's parent")
        _ = try engine.commitAndWait(Self.put("acknowledged"))
        let crashed = fs.crash(policy: .dropUnsynced)
        let reopened = try Engine.open(at: "/data/store", options: crashFaultOptions(crashed))
        #expect(!reopened.recoveryReport.created, "the store survived the crash")
        #expect(try reopened.get(Array("acknowledged".utf8), in: "t") == Array("value of acknowledged".utf8))
        try reopened.close()
        try engine.close()
    }

    @Test("a parent the process cannot sync (EACCES, EPERM, EINVAL, EROFS) is warned about, not fatal; EIO is",
          arguments: [EACCES, EPERM, EINVAL, EROFS, EIO])
    func parentSyncRefused(_ code: Int32) throws {
        let fs = FaultFileSystem()
        try fs.createDirectory(at: "/data/store")
        _ = fs.failOperation([.syncDirectory], nth: 1, errno: code, pathFilter: { $0 == "/data" })
        let log = CapturedLog()
        var options = crashFaultOptions(fs)
        options.logger = log.logger
        if code == EIO {
            let error = EngineTest.expectLucidError(.io, "EIO on the parent's sync") {
                try Engine.open(at: "/data/store", options: options)
            }
            #expect(error?.errno == EIO)
            return
        }
        let engine = try Engine.open(at: "/data/store", options: options)
        #expect(engine.recoveryReport.created)
        #expect(log.warnings(containing: "cannot sync a directory above the new store").count == 1)
        _ = try engine.commitAndWait(Self.put("k"))
        #expect(try engine.get(Array("k".utf8), in: "t") != nil)
        try engine.close()
    }

    @Test("an open whose directory sync failed, retried, leaves a durable store")
    func openRetriedAfterFailedParentSync() throws {
        let fs = FaultFileSystem()
        try fs.createDirectory(at: "/data")
        _ = fs.failOperation([.syncDirectory], nth: 1)
        let error = EngineTest.expectLucidError(.io, "the parent sync's fault") {
            try Engine.open(at: "/data/store", options: crashFaultOptions(fs))
        }
        #expect(error?.errno == EIO)
        #expect(fs.directoryExists(at: "/data/store"))

        let engine = try Engine.open(at: "/data/store", options: crashFaultOptions(fs))
        _ = try engine.commitAndWait(Self.put("after retry"))
        for policy in FaultFileSystem.CrashPolicy.allCases {
            let crashed = fs.crash(policy: policy, seed: 7)
            let reopened = try Engine.open(at: "/data/store", options: crashFaultOptions(crashed))
            #expect(try reopened.get(Array("after retry".utf8), in: "t") == Array("value of after retry".utf8),
                    "\(policy)")
            try reopened.close()
        }
        try engine.close()
    }
}
