// FuzzRecovery's check: open and recovery of a damaged store (shared with the Fuzz package: see FuzzInput.swift).

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

/// Input: a mode byte (bit 0: open in `strict` mode; bit 1: keep the checkpoint, else delete it so recovery reads
/// the whole log), then up to 6 mutations, each a kind byte, a file byte and kind-specific operands: truncate, flip
/// a bit, zero a range, overwrite with input bytes, append input bytes, copy a range (possibly from another file).
/// Offsets are taken from the file start, the last synced commit's end or the file end.
///
/// Checks, after `Engine.open` on the mutated image: it opens or throws a `LucidError` (never another error, never
/// a trap); it must throw when a sealed segment or the newest manifest changed while data still needs them (with a
/// checkpoint, open may skip the damaged bytes instead, and then `verify()` must report them), and must open with a
/// clean `verify()` when only the checkpoint or bytes after the last synced commit changed (acknowledged-prefix
/// rule: a damaged checkpoint is only ever ignored). When it opens and `verify()` is ok: every value read names the
/// key it is under and a version that was written; the state equals the model after exactly the last commit that
/// ends before the first changed byte; the active file was cut there; a second open changes no file and drops
/// nothing; a commit after recovery survives a reopen. `strict` mode never modifies a file and refuses any change
enum RecoveryChecks {
    enum Kind: Int, CaseIterable { case truncate, flipBit, zero, overwrite, append, copy }

    static func check(_ input: [UInt8]) throws {
        let fixture = RecoveryFixture.shared
        var input = FuzzInput(input)
        let mode = input.byte()
        let strict = mode & 1 == 1
        let keepCheckpoint = mode & 2 == 2 && fixture.paths.count > 4
        var files = fixture.original
        var described: [String] = []
        for _ in 0..<6 where !input.isAtEnd {
            let kind = Kind(rawValue: input.int(in: 0...(Kind.allCases.count - 1)))!
            let f = [1, 1, 1, 0, 2, 3, 4][input.int(in: 0...(keepCheckpoint ? 6 : 5))]
            let offset = pickOffset(&input, size: files[f].count, fixture: fixture, file: f)
            switch kind {
            case .truncate:
                files[f] = Array(files[f].prefix(offset))
            case .flipBit:
                if offset < files[f].count { files[f][offset] ^= 1 << (input.byte() & 7) }
            case .zero:
                let n = min(input.int(in: 1...8192), files[f].count - offset)
                if n > 0 { files[f].replaceSubrange(offset..<(offset + n), with: repeatElement(0, count: n)) }
            case .overwrite:
                let data = input.bytes(upTo: input.int(in: 1...64))
                let n = min(data.count, files[f].count - offset)
                if n > 0 { files[f].replaceSubrange(offset..<(offset + n), with: data[0..<n]) }
            case .append:
                let n = input.int(in: 1...4096)
                let seed = input.u32()
                files[f] += input.bool() ? [UInt8](repeating: 0, count: n) : FuzzHelpers.noise(seed: UInt64(seed), count: n)
            case .copy:
                let src = input.int(in: 0...(files.count - 1))
                let from = pickOffset(&input, size: files[src].count, fixture: fixture, file: src)
                let n = min(input.int(in: 1...8192), files[src].count - from)
                if n > 0 {
                    let chunk = Array(files[src][from..<(from + n)])
                    if offset + n > files[f].count { files[f] += [UInt8](repeating: 0, count: offset + n - files[f].count) }
                    files[f].replaceSubrange(offset..<(offset + n), with: chunk)
                }
            }
            described.append("\(kind)@\(f):\(offset)")
        }
        try run(files: files, strict: strict, keepCheckpoint: keepCheckpoint, fixture: fixture,
                described: described.joined(separator: " "))
    }

    static func pickOffset(_ input: inout FuzzInput, size: Int, fixture: RecoveryFixture, file: Int) -> Int {
        switch input.int(in: 0...2) {
        case 0: return input.int(in: 0...max(0, size))
        case 1:
            let anchor = file == 1 ? fixture.lastSyncedEnd : size / 2
            return max(0, min(size, anchor + input.int(in: -2048...4095)))
        default: return max(0, size - input.int(in: 0...4096))
        }
    }

    /// The first offset where `a` and `b` differ (the shorter length when one is a prefix of the other).
    static func firstDifference(_ a: [UInt8], _ b: [UInt8]) -> Int? {
        let n = min(a.count, b.count)
        let first = a.withUnsafeBufferPointer { x in b.withUnsafeBufferPointer { y in
            (0..<n).first { x[$0] != y[$0] }
        } }
        return first ?? (a.count == b.count ? nil : n)
    }

    /// True when the segment's header decodes and a valid page starts anywhere after it (FORMAT.md: an unlisted
    /// segment may be removed "only if it holds no valid page").
    static func holdsValidPage(_ segment: [UInt8]) -> Bool {
        guard let salt = FuzzingSupport.pageSalt(ofSegmentHeader: segment) else { return false }
        let body = FuzzHelpers.suffix(segment, from: FuzzingSupport.segmentHeaderLength)
        // Two steps: the first page, or the first failure plus the search for a later valid page.
        return !FuzzingSupport.scanSegmentBody(body, salt: salt, maxSteps: 2).pageOffsets.isEmpty
    }

    static func run(files: [[UInt8]], strict: Bool, keepCheckpoint: Bool, fixture: RecoveryFixture,
                    described: String) throws {
        let fs = fixture.image.copy()
        let changed = fixture.paths.indices.map { !FuzzHelpers.same(files[$0], fixture.original[$0]) }
        for (i, path) in fixture.paths.enumerated() where changed[i] {
            try FuzzHelpers.writeFile(fs, path, files[i])
        }
        if fixture.paths.count > 4 && !keepCheckpoint { try fs.removeFile(at: fixture.paths[4]) }
        let dir = RecoveryFixture.directory
        let before = try FuzzHelpers.files(fs, dir)
        let sealedChanged = changed[0]
        let activeDiff = changed[1] ? firstDifference(files[1], fixture.original[1]) : nil
        // Which of the fixture's two manifests each slot holds now ("newest", "older", or nil). Nobody forges a CRC,
        // so a slot decodes only to what it held or to a copy of the other slot's bytes: a copy of the older slot over
        // the newest leaves the older manifest in both, and a copy of the newest over the older puts the newest
        // manifest in that slot, where open finds it just the same.
        let newest = FuzzingSupport.decodeManifest(fixture.original[fixture.newestSlot])
        let older = FuzzingSupport.decodeManifest(fixture.original[fixture.newestSlot ^ 1])
        let slotHolds = [2, 3].map { i -> String? in
            let now = FuzzingSupport.decodeManifest(files[i])
            return now == newest ? "newest" : now == older ? "older" : nil
        }
        // Manifest in force: the newest one any slot still holds.
        let newestValid = slotHolds.contains("newest")
        let olderValid = slotHolds.contains("older")
        // Only bytes that were never acknowledged durable (or the checkpoint, an accelerator) changed.
        let onlyUnacknowledged = !sealedChanged && (activeDiff ?? Int.max) >= fixture.lastSyncedEnd
            && !changed[2] && !changed[3]
        let context = "[\(strict ? "strict " : "")\(keepCheckpoint ? "checkpoint " : "")\(described); sealedChanged=\(sealedChanged) activeDiff=\(activeDiff.map(String.init) ?? "none") slots=\(slotHolds.map { $0 ?? "invalid" })]"

        // What must happen.
        var mustThrow = false
        var mustOpen = false
        var expected: Int? = nil        // exact commit index the state must equal when it opens
        var allowed = 0...(fixture.states.count - 1)
        if newestValid {
            if sealedChanged || (activeDiff ?? Int.max) < FuzzingSupport.segmentHeaderLength {
                mustThrow = true
            } else if let m = activeDiff {
                expected = fixture.lastCommit(endingBy: m)
                if strict { mustThrow = true } else if m >= fixture.lastSyncedEnd { mustOpen = true }
            } else {
                expected = fixture.states.count - 1
                mustOpen = true
            }
        } else if olderValid {
            // The older slot names only the first segment, as the active one; the second is unlisted.
            if holdsValidPage(files[1]) { mustThrow = true }
            allowed = 0...(fixture.firstActiveCommit - 1)
            if !sealedChanged && !strict { expected = fixture.firstActiveCommit - 1 }
        } else {
            // No valid manifest: only a store whose creation crashed (no segment holds a page) may be recreated.
            if holdsValidPage(files[0]) || holdsValidPage(files[1]) { mustThrow = true }
            allowed = 0...0
        }

        let engine: Engine
        do {
            engine = try Engine.open(at: dir, options: FuzzHelpers.options(fs, recoveryMode: strict ? .strict : .pointInTime))
        } catch let error as LucidError {
            try fuzzRequire(!mustOpen, "open must succeed but threw \(error) \(context)")
            if strict { try fuzzRequire(FuzzHelpers.same(try FuzzHelpers.files(fs, dir), before), "strict open that failed modified files \(context)") }
            return
        } catch {
            throw FuzzCheckFailure("open threw a non-LucidError \(error) \(context)")
        }
        let verify = try engine.verify()
        if !verify.ok {
            // Allowed only when a checkpoint let open skip damaged durable bytes; verify must then report them.
            try fuzzRequire(keepCheckpoint && engine.recoveryReport.checkpointUsed && !onlyUnacknowledged,
                        "verify after recovery: \(verify.problems.prefix(3)) (report \(engine.recoveryReport)) \(context)")
            try engine.close()
            return
        }
        try fuzzRequire(!mustThrow, "open must fail but succeeded (report \(engine.recoveryReport)) \(context)")
        let state: StoreModel
        do { state = try FuzzHelpers.readAll(engine, alsoKeyspaces: ["a", "b", "c", "d", "e", "f", "big"]) } catch let error as LucidError {
            throw FuzzCheckFailure("a read failed although verify() was ok: \(error) \(context)")
        }
        for (ks, pairs) in state {
            for (key, value) in pairs {
                guard let named = FuzzHelpers.parseValue(value), named.keyspace == ks,
                      named.hexKey == key.map({ String($0, radix: 16) }).joined(separator: "."),
                      fixture.written.contains("\(ks)/\(String(decoding: key, as: UTF8.self))/\(named.version)")
                else { throw FuzzCheckFailure("read a value that was never written under \(ks)/\(key) \(context)") }
            }
        }
        guard let commit = allowed.last(where: { FuzzHelpers.same(fixture.states[$0], state) }) else {
            throw FuzzCheckFailure("recovered state is no committed prefix: \(FuzzHelpers.describe(state)) \(context)")
        }
        if let expected {
            try fuzzRequire(commit == expected, "recovered commit \(commit), expected \(expected) \(context)")
        }
        if strict { try fuzzRequire(FuzzHelpers.same(try FuzzHelpers.files(fs, dir), before), "strict open modified files \(context)") }
        if newestValid, let expected, expected >= fixture.firstActiveCommit - 1 {
            let size = try FuzzHelpers.readFile(fs, fixture.paths[1])!.count
            try fuzzRequire(size == fixture.activeEnds[expected]!,
                        "active segment is \(size) bytes after recovery, commit \(expected) ends at \(fixture.activeEnds[expected]!) \(context)")
        }
        try engine.close()

        // A second open (same mode: a pointInTime open after a strict one may still clean up) changes nothing.
        let afterFirst = try FuzzHelpers.files(fs, dir)
        let second = try Engine.open(at: dir, options: FuzzHelpers.options(fs, recoveryMode: strict ? .strict : .pointInTime))
        let report = second.recoveryReport
        try fuzzRequire(report.droppedBytes == 0 && report.removedFiles.isEmpty && !report.created,
                    "second open was not a no-op: \(report) \(context)")
        try fuzzRequire(FuzzHelpers.same(try FuzzHelpers.readAll(second), state), "second open recovered another state \(context)")
        try fuzzRequire(FuzzHelpers.same(try FuzzHelpers.files(fs, dir), afterFirst), "second open modified files \(context)")

        // The recovered store takes new commits that survive a reopen.
        var batch = WriteBatch()
        let fresh = FuzzHelpers.value("post", [1], version: 1_000_000, size: 32, compressible: false)
        batch.put(fresh, forKey: [1], in: "post")
        try second.commitAndWait(batch)
        try second.close()
        let third = try Engine.open(at: dir, options: FuzzHelpers.options(fs))
        var expectedAfter = state
        expectedAfter["post"] = [[1]: fresh]
        try fuzzRequire(FuzzHelpers.same(try FuzzHelpers.readAll(third), expectedAfter), "a commit after recovery was lost on reopen \(context)")
        let verify3 = try third.verify()
        try fuzzRequire(verify3.ok, "verify after a post-recovery commit: \(verify3.problems.prefix(3)) \(context)")
        try third.close()
    }
}
