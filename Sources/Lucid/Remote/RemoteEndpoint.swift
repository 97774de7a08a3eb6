import Foundation

/// How the JSON body of a response becomes entities: where they sit in the document (a base key path), whether
/// it holds one entity or a list, and the payload type the server's shape decodes into.
///
/// Decoding uses snake_case keys and ISO 8601 dates by default. In a list, an element that fails to decode is
/// dropped and reported in ``RemotePayload/droppedElements`` instead of failing the whole payload (as in the
/// original); a document that is not JSON, or lacks the base key, is an ``APIError/undecodableBody(_:)``.
public struct RemoteEndpoint<E: LocalEntity>: Sendable {
    let decode: @Sendable (Data) throws(APIError) -> RemotePayload<E>

    /// A custom decoder.
    public init(decode: @escaping @Sendable (Data) throws(APIError) -> RemotePayload<E>) { self.decode = decode }

    /// One `Payload` at `baseKey` (e.g. `["result"]`; empty: the document), turned into an entity; `related`
    /// lists the entities of other types nested in it (persisted through a ``PayloadPersisting``).
    public static func entity<Payload: Decodable & Sendable>(_ type: Payload.Type, at baseKey: [String] = [],
                                                  _ transform: @escaping @Sendable (Payload) -> E,
                                                  related: (@Sendable (Payload) -> [RelatedEntities])? = nil) -> RemoteEndpoint {
        RemoteEndpoint { (data: Data) throws(APIError) -> RemotePayload<E> in
            let node = try JSONNode.parse(data, at: baseKey)
            do {
                let payload = try node.decode(Payload.self)
                return RemotePayload(entities: [transform(payload)], metadata: node.metadata, related: related?(payload) ?? [])
            } catch {
                throw .undecodableBody("\(error)")
            }
        }
    }

    /// A list of `Payload` at `baseKey`, each turned into an entity; undecodable elements are dropped; `related`
    /// lists the entities of other types nested in each element.
    public static func list<Payload: Decodable & Sendable>(_ type: Payload.Type, at baseKey: [String] = [],
                                                _ transform: @escaping @Sendable (Payload) -> E,
                                                related: (@Sendable (Payload) -> [RelatedEntities])? = nil) -> RemoteEndpoint {
        RemoteEndpoint { (data: Data) throws(APIError) -> RemotePayload<E> in
            let node = try JSONNode.parse(data, at: baseKey)
            guard let elements = node.value as? [Any] else { throw .undecodableBody("\(baseKey) is not a list") }
            var entities: [E] = []
            var dropped: [String] = []
            var nested: [RelatedEntities] = []
            for (i, element) in elements.enumerated() {
                do {
                    let payload = try JSONNode(value: element, metadata: nil).decode(Payload.self)
                    entities.append(transform(payload))
                    if let related { nested += related(payload) }
                } catch {
                    dropped.append("element \(i): \(error)")
                }
            }
            return RemotePayload(entities: entities, metadata: node.metadata, droppedElements: dropped, related: nested)
        }
    }
}

/// Entities decoded from one response, with the document's other top-level members as metadata.
public struct RemotePayload<E: LocalEntity>: Sendable {
    public var entities: [E]
    /// The top-level members beside the base key (e.g. pagination), as JSON text, when the entities sit under one.
    public var metadata: [String: String]?
    /// Why list elements were dropped (one line each).
    public var droppedElements: [String] = []
    /// Entities of other types nested in the payload.
    public var related: [RelatedEntities] = []

    public init(entities: [E], metadata: [String: String]? = nil, droppedElements: [String] = [],
                related: [RelatedEntities] = []) {
        self.entities = entities
        self.metadata = metadata
        self.droppedElements = droppedElements
        self.related = related
    }
}

/// A parsed JSON document narrowed to a base key path.
struct JSONNode {
    let value: Any
    let metadata: [String: String]?

    static func parse(_ data: Data, at baseKey: [String]) throws(APIError) -> JSONNode {
        let root: Any
        do { root = try JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed]) } catch {
            throw .undecodableBody("not JSON: \(error.localizedDescription)")
        }
        var node = root
        for key in baseKey {
            guard let object = node as? [String: Any], let next = object[key] else {
                throw .undecodableBody("no \(baseKey.joined(separator: ".")) in the response")
            }
            node = next
        }
        var metadata: [String: String]?
        if let first = baseKey.first, let object = root as? [String: Any] {
            metadata = [:]
            for (key, value) in object where key != first {
                let text = (try? JSONSerialization.data(withJSONObject: value, options: [.fragmentsAllowed, .sortedKeys]))
                    .map { String(decoding: $0, as: UTF8.self) }
                metadata?[key] = text
            }
        }
        return JSONNode(value: node, metadata: metadata)
    }

    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        let data = try JSONSerialization.data(withJSONObject: value, options: [.fragmentsAllowed])
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        decoder.dateDecodingStrategy = .iso8601
        return try decoder.decode(T.self, from: data)
    }
}
