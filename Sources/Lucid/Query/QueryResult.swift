/// The result of a query: its entities in order, and the groups when the query was grouped.
public struct QueryResult<E: Entity>: Sendable, Equatable, Sequence {
    /// The entities, ordered and windowed.
    public let entities: [E]
    /// The group keys in order of first appearance (empty when the query was not grouped).
    public let groupKeys: [EntityIndexValue]
    /// The groups; nil when ungrouped (no dictionary to make, nor its metadata to look up, per result).
    private let groupMap: [EntityIndexValue: [E]]?
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
        guard let groupName, let groupedBy = E.IndexName(rawValue: groupName) else {
            groupKeys = []
            groupMap = nil
            return
        }
        var keys: [EntityIndexValue] = []
        var map: [EntityIndexValue: [E]] = [:]
        for entity in entities {
            let key = entity.entityIndexValue(for: groupedBy)
            if map[key] == nil { keys.append(key) }
            map[key, default: []].append(entity)
        }
        groupKeys = keys
        groupMap = map
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
