extension EngineCore {
    func compact(_ options: CompactionOptions) throws -> CompactionSummary {
        throw LucidError.invalidArgument("compaction is not implemented yet")
    }

    func storeStatistics() throws -> StoreStatistics {
        throw LucidError.invalidArgument("store statistics are not implemented yet")
    }
}
