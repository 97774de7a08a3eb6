/// Records the writer has written lately, kept to build the next segment's record dictionary
/// (``EngineOptions/PageCompression/lz4Records``): one record of each page, the newest
/// ``Format/maxDictionaryLength`` bytes of them.
///
/// A dictionary is raw bytes LZ4 matches against; the records a store writes repeat their keyspace, field names
/// and common values, so recent records make a good one. The newest samples go last, where the matches LZ4 finds
/// are cheapest to encode (the shortest distance from the record).
struct RecordSamples {
    private var samples: [[UInt8]] = []
    private var first = 0
    private(set) var byteCount = 0

    /// Adds `records` in order, dropping the oldest past ``Format/maxDictionaryLength`` bytes. O(records).
    mutating func add(_ records: [[UInt8]]) {
        for record in records where !record.isEmpty && record.count <= Format.maxDictionaryLength {
            samples.append(record)
            byteCount += record.count
            while byteCount - samples[first].count >= Format.maxDictionaryLength {
                byteCount -= samples[first].count
                first += 1
            }
        }
        if first > 1024 && first > samples.count / 2 {
            samples.removeFirst(first)
            first = 0
        }
    }

    /// The samples oldest first, the oldest cut at its front so that the whole is at most
    /// ``Format/maxDictionaryLength`` bytes: a dictionary's contents.
    var dictionary: [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(min(byteCount, Format.maxDictionaryLength))
        var skip = max(0, byteCount - Format.maxDictionaryLength)
        for sample in samples[first...] {
            if skip >= sample.count {
                skip -= sample.count
                continue
            }
            bytes.append(contentsOf: sample[skip...])
            skip = 0
        }
        return bytes
    }
}
