/// The results of a query as they change: the current result first, then a new one after each write, removal
/// or refresh that changes it (offset and limit re-applied each time). Observers of equal queries share one
/// observation in the manager; iteration ends when the task is cancelled, and stopping releases the observer.
///
/// Creating the sequence registers nothing; the observer is added on the first `next()`.
public struct ContinuousQuery<E: LocalEntity>: AsyncSequence, Sendable {
    public typealias Element = QueryResult<E>
    let manager: CoreManager<E>
    let query: Query<E>
    let context: ReadContext<E>

    public struct AsyncIterator: AsyncIteratorProtocol {
        let manager: CoreManager<E>
        let query: Query<E>
        let context: ReadContext<E>
        var inner: AsyncStream<QueryResult<E>>.AsyncIterator?

        /// The next result, or nil once the task is cancelled or the observation ends.
        public mutating func next() async -> QueryResult<E>? {
            if inner == nil {
                guard let stream = try? await manager.observe(query, in: context) else { return nil }
                inner = stream.makeAsyncIterator()
            }
            return await inner?.next()
        }
    }

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(manager: manager, query: query, context: context, inner: nil)
    }
}
