import Synchronization

extension Engine {
    /// Defines (or redefines) index `index` of `keyspace` over the records already stored: every record is
    /// rewritten with the terms `terms(key, value)` returns for that index (its terms for other indexes are
    /// kept). Records written from now on carry their terms in their own batches, as usual.
    ///
    /// Terms live in the records (so that recovery rebuilds every index from the log without user code); the
    /// engine cannot derive them from values by itself, which is why a new index over existing records needs
    /// this call. Runs in batches of `batchSize` records, each an atomic commit made on the writer thread from
    /// the current value, so concurrent writers are never overwritten with stale data; readers see the index
    /// fill batch by batch. - Complexity: reads and rewrites every record of the keyspace once (the old
    /// versions become dead bytes for compaction). - Returns: the number of records rewritten.
    /// - Throws: whatever `terms` throws (batches before stay committed); invalidArgument for an invalid index
    ///   name or term; closed, failedState, io.
    public func rebuildIndex(_ index: String, in keyspace: String, batchSize: Int = 1000,
                             terms: @escaping @Sendable (_ key: [UInt8], _ value: [UInt8]) throws -> [IndexValue])
        async throws -> Int {
        try await rewrite(keyspace: keyspace, keysFrom: { $0.keys(in: keyspace) }, batchSize: batchSize) { key, value, old in
            old.filter { $0.index != index } + (try terms(key, value)).map { IndexTerm(index: index, value: $0) }
        }
    }

    /// Removes index `index` of `keyspace`: every record holding terms for it is rewritten without them, so the
    /// index disappears (and its memory is freed) now and after any reopen. - Complexity: rewrites only the
    /// records that have entries in the index. - Returns: the number of records rewritten.
    /// - Throws: closed, failedState, io.
    public func dropIndex(_ index: String, in keyspace: String, batchSize: Int = 1000) async throws -> Int {
        try await rewrite(keyspace: keyspace, keysFrom: { snapshot in
            // A record with several terms in the index appears once per term.
            var seen = Set<[UInt8]>()
            return snapshot.entries(matching: IndexQuery(keyspace: keyspace, index: index, condition: .any))
                .compactMap { seen.insert($0.key).inserted ? $0.key : nil }
        }, batchSize: batchSize) { _, _, old in old.filter { $0.index != index } }
    }

    /// Rewrites the records of `keyspace` named by `keysFrom(snapshot)` with new terms, batch by batch, each batch
    /// built and written on the writer thread from the records' current versions.
    private func rewrite(keyspace: String, keysFrom: (Snapshot) -> [[UInt8]], batchSize: Int,
                         newTerms: @escaping @Sendable ([UInt8], [UInt8], [IndexTerm]) throws -> [IndexTerm])
        async throws -> Int {
        guard batchSize > 0 else { throw LucidError.invalidArgument("batchSize must be positive") }
        let core = self.core
        let keys = keysFrom(snapshot())
        var rewritten = 0
        var start = 0
        while start < keys.count {
            let chunk = Array(keys[start..<min(keys.count, start + batchSize)])
            start += chunk.count
            rewritten += try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Int, any Error>) in
                let box = Mutex<Int>(0)
                var pending = PendingCommit(batch: WriteBatch()) { result in
                    continuation.resume(with: result.map { _ in box.withLock { $0 } }.mapError { $0 as any Error })
                }
                pending.job = {
                    let state = core.currentState()
                    var batch = WriteBatch()
                    for key in chunk {
                        guard let location = state.location(forKey: key, in: keyspace) else { continue }
                        let file = state.segments[UInt64(location.segment)]
                        // One page read for the value and the terms after it.
                        let page = try PageFetch.page(at: location, file: file, cache: core.cache, storePath: core.path)
                        let value = try PageFetch.value(at: location, in: page, file: file, storePath: core.path)
                        let old = try PageFetch.terms(at: location, in: page, file: file, storePath: core.path)
                        let terms = try newTerms(key, value, old)
                        if terms == old { continue }
                        batch.put(value, forKey: key, in: keyspace, indexTerms: terms)
                    }
                    guard !batch.isEmpty else { return }
                    try batch.validate()
                    do {
                        _ = try core.writeGroup([PendingCommit(batch: batch) { _ in }])
                    } catch {
                        let lucidError = error as? LucidError ?? LucidError(code: .io, message: "\(error)")
                        core.failure.withLock { $0 = lucidError }
                        throw lucidError
                    }
                    box.withLock { $0 = batch.count }
                }
                do { try core.queue.enqueue(pending) } catch {
                    continuation.resume(throwing: error)
                }
            }
        }
        return rewritten
    }
}
