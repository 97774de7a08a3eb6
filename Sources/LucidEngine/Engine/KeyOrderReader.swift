/// Reads the values of records visited in key order (``Snapshot/forEach(in:range:reverse:limit:_:)``), choosing
/// per record between two ways of reading a page:
/// - **in a run** (records next to each other in key order that lie on one page: data written in key order, or
///   compacted), it holds the page, read whole through the cache, across the records it serves, so each page is
///   looked up, checked and decoded once per run instead of once per record;
/// - **out of a run** (consecutive keys on scattered pages: data written in random key order), it reads each
///   value as a point read does (``PageFetch/value(at:file:cache:storePath:)``), which decodes a missed page only
///   as far as the value ends.
///
/// A run starts when a record lies on the same page as the one before it, goes on to the next page while the
/// held page served more than one record, and ends at a page that served one. Cost: O(1) besides the reads; holds
/// one page.
struct KeyOrderReader {
    let core: EngineCore
    private var held: (key: PageCache.Key, page: PageBuffer, uses: Int)?
    private var previous: PageCache.Key?

    init(core: EngineCore) { self.core = core }

    /// The value of the record at `location` in `file`, copied out.
    /// - Throws: as ``PageFetch/value(at:file:cache:storePath:)``.
    mutating func value(at location: RecordLocation, file: SegmentFile?) throws -> [UInt8] {
        let key = PageCache.Key(location)
        defer { previous = key }
        if let run = held, run.key == key {
            held?.uses += 1
            return try PageFetch.value(at: location, in: run.page, file: file, storePath: core.path)
        }
        let sharesPage = previous == key
        if sharesPage || (held?.uses ?? 0) > 1 {
            let page = try PageFetch.page(at: location, file: file, cache: core.cache, storePath: core.path)
            held = (key, page, sharesPage ? 2 : 1)
            return try PageFetch.value(at: location, in: page, file: file, storePath: core.path)
        }
        held = nil
        return try PageFetch.value(at: location, file: file, cache: core.cache, storePath: core.path)
    }
}
