import LucidEngine

/// The disk store's reads of records by key: through the decoded-entity cache (``EntityCache``), then the
/// engine. A read that the cache knows to be current for its snapshot takes the cached entity; one whose entry
/// may be stale looks the key up and compares the record's commit sequence; the rest read and decode the record.
extension DiskStore {
    /// The entity under `key` in `snapshot`: from the cache when it holds this record, else read, decoded and
    /// offered to the cache.
    func fetch(_ key: [UInt8], in snapshot: Snapshot) throws(StoreError) -> E? {
        let cacheKey = EntityCacheKey(key)
        let probe = cache.probe(cacheKey, at: snapshot.sequence)
        if probe.current, let box = probe.box { return try cached(box) }
        guard let handle = try recordHandle(key, in: snapshot) else { return nil }
        return try entity(at: handle, key: key, cacheKey: cacheKey, probe: probe, in: snapshot)
    }

    /// The entities under `keys` in `snapshot`, in order (keys without a record are skipped), as ``fetch(_:in:)``
    /// reads them. The array is filled in place: in generic code each `append` would look `Array<E>`'s
    /// metadata up at run time, and no `E?` passes per key.
    func fetch(_ keys: [[UInt8]], in snapshot: Snapshot) throws(StoreError) -> [E] {
        let sequence = snapshot.sequence
        var failure: StoreError?
        let entities = [E](unsafeUninitializedCapacity: keys.count) { buffer, count in
            do throws(StoreError) {
                for key in keys {
                    let cacheKey = EntityCacheKey(key)
                    let probe = cache.probe(cacheKey, at: sequence)
                    if probe.current, let box = probe.box {
                        (buffer.baseAddress! + count).initialize(to: try cached(box))
                        count += 1
                        continue
                    }
                    guard let handle = try recordHandle(key, in: snapshot) else { continue }
                    let entity = try entity(at: handle, key: key, cacheKey: cacheKey, probe: probe, in: snapshot)
                    (buffer.baseAddress! + count).initialize(to: entity)
                    count += 1
                }
            } catch {
                failure = error   // the entities initialized so far are released with the array
            }
        }
        if let failure { throw failure }
        return entities
    }

    /// The entity in a box of the cache.
    @inline(__always)
    static func unbox(_ box: any AnyObject & Sendable) -> E { unsafeDowncast(box, to: EntityBox<E>.self).entity }

    /// The entity in a box of the cache, taken without reading the engine: unless the engine was closed since
    /// the read's snapshot was taken (a read then fails as the engine read would).
    @inline(__always)
    func cached(_ box: any AnyObject & Sendable) throws(StoreError) -> E {
        if engine.isClosed { throw .closed }
        return Self.unbox(box)
    }

    /// The record under `key` in `snapshot`, not read yet. - Throws: ``StoreError/engine(_:)`` once closed.
    func recordHandle(_ key: [UInt8], in snapshot: Snapshot) throws(StoreError) -> RecordHandle? {
        do { return try snapshot.handle(forKey: key, in: keyspace) } catch { throw .wrap(error) }
    }

    /// The entity of the record `handle` names (found under `key` in `snapshot`, after `probe` of the cache did
    /// not find it current): the cached one when the cache holds that record, else the record read and decoded
    /// (and cached, when admitted).
    func entity(at handle: RecordHandle, key: [UInt8], cacheKey: EntityCacheKey, probe: EntityCacheTable.Probe,
                in snapshot: Snapshot) throws(StoreError) -> E {
        if let box = probe.box, probe.sequence == handle.sequence {
            cache.confirm(cacheKey, sequence: handle.sequence, at: snapshot.sequence)
            return Self.unbox(box)
        }
        let bytes: [UInt8]
        do { bytes = try snapshot.value(of: handle) } catch { throw .wrap(error) }
        let entity = try decode(bytes, key: key)
        if probe.admit {
            cache.insert(entity, forKey: cacheKey, sequence: handle.sequence, at: snapshot.sequence,
                         recordLength: bytes.count)
        }
        return entity
    }

    /// The entity `bytes` holds; `key` (its record's key, for the error) is only built when it does not decode.
    func decode(_ bytes: [UInt8], key: @autoclosure () -> [UInt8]) throws(StoreError) -> E {
        do { return try E.decodeRecord(bytes) } catch {
            throw .undecodableEntity(keyspace: keyspace, key: key(), detail: "\(error)")
        }
    }
}
