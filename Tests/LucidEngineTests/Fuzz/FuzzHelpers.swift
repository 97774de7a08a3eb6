// Helpers shared by the engine's fuzz checks: models, stores on a fault-injecting file system, comparisons (shared
// with the Fuzz package: see FuzzInput.swift).

import LucidEngine
@_spi(Fuzzing) import LucidEngine
import LucidEngineTestSupport
import Logging
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Keyspace -> key -> value: what a store holds.
public typealias StoreModel = [String: [[UInt8]: [UInt8]]]

enum FuzzHelpers {
    static let quietLogger: Logger = {
        var logger = Logger(label: "lucid.fuzz")
        logger.logLevel = .critical
        return logger
    }()

    static func options(_ fs: FaultFileSystem, sync: EngineOptions.SyncMode = .always, pageCacheBytes: Int = 1 << 20,
                        recoveryMode: EngineOptions.RecoveryMode = .pointInTime,
                        compression: EngineOptions.PageCompression = EngineOptions().pageCompression) -> EngineOptions {
        var o = EngineOptions()
        o.pageCompression = compression
        o.fileSystem = fs
        o.pageSize = 4096
        o.segmentSize = 1 << 20
        o.syncMode = sync
        o.pageCacheBytes = pageCacheBytes
        o.recoveryMode = recoveryMode
        o.logger = quietLogger
        return o
    }

    static func le32(_ b: [UInt8], _ at: Int) -> UInt32 {
        guard at + 4 <= b.count else { return 0 }
        return (0..<4).reduce(UInt32(0)) { $0 | UInt32(b[at + $1]) << (8 * UInt32($1)) }
    }

    static func le64(_ b: [UInt8], _ at: Int) -> UInt64 {
        UInt64(le32(b, at)) | UInt64(le32(b, at + 4)) << 32
    }

    /// Deterministic bytes: `count` bytes of SplitMix64 output seeded by `seed` (incompressible).
    static func noise(seed: UInt64, count: Int) -> [UInt8] {
        var state = seed
        var out: [UInt8] = []
        out.reserveCapacity(count + 8)
        while out.count < count {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            z ^= z >> 31
            withUnsafeBytes(of: z.littleEndian) { out.append(contentsOf: $0) }
        }
        out.removeLast(out.count - count)
        return out
    }

    static func fnv(_ parts: [UInt8]...) -> UInt64 {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for part in parts {
            for b in part { h = (h ^ UInt64(b)) &* 0x100_0000_01b3 }
            h = (h ^ 0xFF) &* 0x100_0000_01b3
        }
        return h
    }

    /// A value that names its keyspace, key and version: `"V" ks 0 hex(key) 0 version 0` then `size` filler
    /// bytes (repetitive when `compressible`, noise otherwise) derived from the same three.
    static func value(_ keyspace: String, _ key: [UInt8], version: Int, size: Int, compressible: Bool) -> [UInt8] {
        let hexKey = key.map { String($0, radix: 16) }.joined(separator: ".")
        var v: [UInt8] = Array("V\(keyspace)\u{0}\(hexKey)\u{0}\(version)\u{0}".utf8)
        let seed = fnv(Array(keyspace.utf8), key, Array(String(version).utf8))
        if compressible {
            let unit = noise(seed: seed, count: 7)
            for i in 0..<size { v.append(unit[i % 7]) }
        } else {
            v += noise(seed: seed, count: size)
        }
        return v
    }

    /// The keyspace, key and version a value names, when it is one ``value(_:_:version:size:compressible:)`` made.
    static func parseValue(_ v: [UInt8]) -> (keyspace: String, hexKey: String, version: Int)? {
        guard v.first == UInt8(ascii: "V") else { return nil }
        let parts = v.dropFirst().split(separator: 0, maxSplits: 3, omittingEmptySubsequences: false)
        guard parts.count == 4, let version = Int(String(decoding: parts[2], as: UTF8.self)) else { return nil }
        return (String(decoding: parts[0], as: UTF8.self), String(decoding: parts[1], as: UTF8.self), version)
    }

    /// Everything the engine holds, read through `scan` (checking key order and `count`, and that `get` and
    /// `forEach` agree).
    static func readAll(_ engine: Engine, alsoKeyspaces: some Sequence<String> = []) throws -> StoreModel {
        var model = StoreModel()
        for keyspace in Set(engine.keyspaces()).union(alsoKeyspaces) {
            let pairs = try engine.scan(in: keyspace)
            try fuzzRequire(engine.count(in: keyspace) == pairs.count,
                        "count(in: \(keyspace)) = \(engine.count(in: keyspace)) but scan returned \(pairs.count)")
            var keys: [[UInt8]: [UInt8]] = [:]
            for (i, pair) in pairs.enumerated() {
                if i > 0 {
                    try fuzzRequire(pairs[i - 1].key.lexicographicallyPrecedes(pair.key),
                                "scan of \(keyspace) is not in strictly ascending key order at \(i)")
                }
                keys[pair.key] = pair.value
                let direct = try engine.get(pair.key, in: keyspace)
                try fuzzRequire(direct == pair.value, "get and scan disagree on key \(pair.key) in \(keyspace)")
            }
            // The streaming walk (a page held across a run of records, point reads between runs) agrees.
            var walked = 0
            var walkAgrees = true
            try engine.snapshot().forEach(in: keyspace) { record in
                walkAgrees = walked < pairs.count && record.key == pairs[walked].key && same(record.value, pairs[walked].value)
                walked += 1
                return walkAgrees
            }
            try fuzzRequire(walkAgrees && walked == pairs.count, "forEach and scan disagree in \(keyspace) at \(walked)")
            if !keys.isEmpty { model[keyspace] = keys }
        }
        return model
    }

    /// Byte-array equality through `memcmp` (the generic `==` is very slow in unoptimised builds, and the
    /// recovery fixture compares megabyte files and values for every input).
    static func same(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        a.count == b.count && a.withUnsafeBytes { x in b.withUnsafeBytes { y in
            x.count == 0 || memcmp(x.baseAddress!, y.baseAddress!, x.count) == 0
        } }
    }

    static func same(_ a: StoreModel, _ b: StoreModel) -> Bool {
        a.count == b.count && a.allSatisfy { ks, pairs in
            guard let other = b[ks], other.count == pairs.count else { return false }
            return pairs.allSatisfy { key, value in other[key].map { same($0, value) } ?? false }
        }
    }

    static func same(_ a: [String: [UInt8]], _ b: [String: [UInt8]]) -> Bool {
        a.count == b.count && a.allSatisfy { name, bytes in b[name].map { same($0, bytes) } ?? false }
    }

    /// `bytes[from...]` as a new array, copied with `memcpy`.
    static func suffix(_ bytes: [UInt8], from: Int) -> [UInt8] {
        guard from < bytes.count else { return [] }
        return bytes.withUnsafeBufferPointer { Array(UnsafeBufferPointer(rebasing: $0[from...])) }
    }

    static func describe(_ m: StoreModel) -> String {
        m.keys.sorted().map { "\($0): \(m[$0]!.count) keys" }.joined(separator: ", ")
    }

    static func readFile(_ fs: FaultFileSystem, _ path: String) throws -> [UInt8]? {
        guard fs.fileExists(at: path) else { return nil }
        let h = try fs.openFile(at: path, mode: .readOnly)
        defer { try? h.close() }
        return try h.read(at: 0, count: Int(try h.size()))
    }

    static func writeFile(_ fs: FaultFileSystem, _ path: String, _ bytes: [UInt8]) throws {
        let h = try fs.openFile(at: path, mode: .readWrite(create: true))
        defer { try? h.close() }
        try h.truncate(to: 0)
        try h.write(bytes, at: 0)
        try h.sync()
    }

    /// Every file of a directory with its bytes (the lock file excluded).
    static func files(_ fs: FaultFileSystem, _ dir: String) throws -> [String: [UInt8]] {
        var out: [String: [UInt8]] = [:]
        for name in try fs.contentsOfDirectory(at: dir) where name != "LOCK" {
            out[name] = try readFile(fs, dir + "/" + name)
        }
        return out
    }
}
