/// The result of a query: its entities in order, and the groups when the query was grouped.
public struct QueryResult<E: Entity>: Sendable, Equatable, Sequence {
    /// The entities, ordered and windowed.
    public let entities: [E]
    /// The group keys in order of first appearance (empty when the query was not grouped).
    public let groupKeys: [EntityIndexValue]
    /// The groups (a ``QueryResultGroups``); nil when ungrouped (no dictionary to make, nor its metadata to look
    /// up, per result). Boxed, so that the result's layout does not depend on `E`: copying and destroying a result
    /// in the library's unspecialized generic code then retains and releases its fields without looking the
    /// metadata of `[EntityIndexValue: [E]]?` up at run time (three lookups, about 1,000 instructions, where a
    /// search's result passes between functions; with the manager's sole store read from a property, the micro
    /// workload manager-search-rating-range-limit20 went from 47,300 instructions to 45,800, callgrind).
    private let groupBox: (any AnyObject & Sendable)?
    /// The groups; nil when ungrouped.
    private var groupMap: [EntityIndexValue: [E]]? {
        groupBox.map { unsafeDowncast($0, to: QueryResultGroups<E>.self).map }
    }
    /// The index the entities are grouped by, if any.
    public var groupedBy: E.IndexName? { groupName.flatMap(E.IndexName.init(rawValue:)) }
    /// `groupedBy`'s raw value, stored so that the result's layout does not depend on `E` (see ``Query``).
    private let groupName: String?

    /// A result of `entities` (in the given order), grouped by `groupedBy` when set.
    public init(entities: [E], groupedBy: E.IndexName? = nil) {
        self.init(entities: entities, groupName: groupedBy?.rawValue)
    }

    /// A result of `entities` grouped by the index whose raw value is `groupName`, as a query holds it (no
    /// `E.IndexName?` made and taken apart again: in generic code each looks metadata up at run time).
    init(entities: [E], groupName: String?) {
        self.entities = entities
        self.groupName = groupName
        // Ungrouped, no `E.IndexName?` is made (its metadata looked up at run time, about 330 instructions).
        guard let groupName else {
            groupKeys = []
            groupBox = nil
            return
        }
        (groupKeys, groupBox) = Self.groups(of: entities, by: groupName)
    }

    /// The group keys in order of first appearance and the groups of `entities` by the index whose raw value is
    /// `groupName` (none for a name that is not one of `E`'s indexes).
    private static func groups(of entities: [E], by groupName: String)
        -> (keys: [EntityIndexValue], box: (any AnyObject & Sendable)?) {
        guard let groupedBy = E.IndexName(rawValue: groupName) else { return ([], nil) }
        var keys: [EntityIndexValue] = []
        var map: [EntityIndexValue: [E]] = [:]
        for entity in entities {
            let key = entity.entityIndexValue(for: groupedBy)
            if map[key] == nil { keys.append(key) }
            map[key, default: []].append(entity)
        }
        return (keys, QueryResultGroups(map))
    }

    /// An empty result.
    public static var empty: QueryResult { QueryResult(entities: []) }

    /// The entities as an array.
    public var array: [E] { entities }
    /// The first entity.
    public var first: E? { entities.first }
    /// The single entity of a one-entity result (the first when there are several).
    public var entity: E? { entities.first }
    /// Number of entities. (Inlined: a call from the library's generic code would look the result type's
    /// metadata up at run time to pass it.)
    @inline(__always) public var count: Int { entities.count }
    /// Whether there are no entities.
    @inline(__always) public var isEmpty: Bool { entities.isEmpty }

    /// The groups: key → entities in order. An ungrouped result has no groups.
    public var groups: [EntityIndexValue: [E]] { groupMap ?? [:] }

    /// The entities of one group.
    public func group(_ key: EntityIndexValue) -> [E] { groupMap?[key] ?? [] }

    public func makeIterator() -> IndexingIterator<[E]> { entities.makeIterator() }

    public static func == (lhs: QueryResult, rhs: QueryResult) -> Bool {
        lhs.entities == rhs.entities && lhs.groupName == rhs.groupName
    }
}

/// A grouped ``QueryResult``'s groups, in a box (see `QueryResult.groupBox`).
final class QueryResultGroups<E: Entity>: Sendable {
    let map: [EntityIndexValue: [E]]
    init(_ map: [EntityIndexValue: [E]]) { self.map = map }
}
