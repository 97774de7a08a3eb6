/// A store whose level is remote, with the per-call options reads and writes through a backend need.
public protocol RemoteStoring<E>: Store {
    /// The entity `identifier` names on the server (nil on a 404) and the other entities nested in the answer;
    /// `request` overrides the entity type's.
    func fetch(byID identifier: E.Identifier, request: APIRequestConfig?, endpoint: RemoteEndpoint<E>?) async throws(StoreError)
        -> (entity: E?, related: [RelatedEntities])
    /// The server's result for `query` and the other entities nested in it; unless `trustRemoteFiltering`, the
    /// filter, order and window are applied again locally to what it returned.
    func fetch(_ query: Query<E>, request: APIRequestConfig?, endpoint: RemoteEndpoint<E>?, trustRemoteFiltering: Bool)
        async throws(StoreError)
        -> (result: QueryResult<E>, related: [RelatedEntities])
    /// Writes with an explicit request builder (nil: the entity type's).
    func set(_ entities: [E], request: (@Sendable (RemotePath<E>) -> APIRequestConfig?)?) async throws(StoreError) -> [E]
    /// The queue writes go through, if any.
    var queue: APIRequestQueue? { get }
    /// The local id a queued create of this entity type was sent for, from the request's tag (nil otherwise).
    func createdLocalID(_ request: APIRequestConfig) -> String?
    /// `entity` with the server's answer to its create folded in (its remote id), or nil when it does not decode.
    func adoptCreateAnswer(_ response: APIResponse, for entity: E) -> E?
}

/// The backend as a store: reads and writes through an ``APIClient`` with the requests ``RemoteEntity`` builds.
///
/// - `get`: a 404 is "no such entity" (nil), never an error, and never deletes anything locally (the original
///   deleted the local entity on a 404, bug 1.15.6). A 304 with no body is ``StoreError/emptyResponse``.
/// - `search`: by default the server's list is filtered, ordered and windowed again with the query (it may not
///   filter as asked); `.natural` keeps the server's order.
/// - `set`: one request per entity, `create` for an entity without a remote id and `update` otherwise; the
///   server's answer (e.g. the remote id it assigned) is returned, folded into the written entity. Every failure
///   is thrown (the original reported none, bug 1.15.3).
/// - `removeAll`: always sent when the entity type has a request for it (the original never contacted the server
///   when nothing matched locally, bug 1.15.5).
public final class RemoteStore<E: RemoteEntity>: RemoteStoring {
    /// The client requests go through.
    public let client: any APIClient
    /// The persistent queue writes go through, if any (reads never do).
    public let queue: APIRequestQueue?
    /// Where dropped payload elements are reported.
    public let logger: Logger
    public var level: StoreLevel { .remote }

    /// A remote store over `client`; with a `queue`, writes are persisted and retried while the server is down,
    /// and each write call returns once its request is delivered.
    public init(client: any APIClient, queue: APIRequestQueue? = nil, logger: Logger = Logger(label: "lucid.remote")) {
        self.client = client
        self.queue = queue
        self.logger = logger
    }

    /// Sends a write through the queue when there is one.
    private func sendWrite(_ config: APIRequestConfig,
                           beforeNext: (@Sendable (Result<APIResponse, APIError>) async -> Void)? = nil) async throws(APIError)
        -> APIResponse {
        if let queue { return try await queue.send(config, beforeNext: beforeNext) }
        return try await client.send(config)
    }

    public func get(byID identifier: E.Identifier) async throws(StoreError) -> E? {
        try await fetch(byID: identifier, request: nil, endpoint: nil).entity
    }

    public func fetch(byID identifier: E.Identifier, request: APIRequestConfig?, endpoint override: RemoteEndpoint<E>?)
        async throws(StoreError)
        -> (entity: E?, related: [RelatedEntities]) {
        let path = RemotePath<E>.get(identifier)
        guard let config = request ?? E.requestConfig(for: path) else { throw .notSupported("no request for get of \(E.self)") }
        guard let endpoint = override ?? E.endpoint(for: path) else { throw .notSupported("no endpoint decodes get of \(E.self)") }
        let response: APIResponse
        do { response = try await client.send(config) } catch {
            if case .httpStatus(404, _) = error { return (nil, []) }
            throw .api(error)
        }
        if response.isNotModified && response.body.isEmpty { throw .emptyResponse }
        let payload = try decode(response, endpoint)
        return (payload.entities.first { $0.identifier == identifier } ?? payload.entities.first, payload.related)
    }

    public func search(_ query: Query<E>) async throws(StoreError) -> QueryResult<E> {
        try await fetch(query, request: nil, endpoint: nil, trustRemoteFiltering: false).result
    }

    public func fetch(_ query: Query<E>, request: APIRequestConfig?, endpoint override: RemoteEndpoint<E>?,
                      trustRemoteFiltering: Bool) async throws(StoreError)
        -> (result: QueryResult<E>, related: [RelatedEntities]) {
        let evaluator: QueryEvaluator<E>
        do { evaluator = try QueryEvaluator(query) } catch { throw .invalidQuery(error) }
        let path = RemotePath<E>.search(query)
        guard let config = request ?? E.requestConfig(for: path) else { throw .notSupported("no request for a search of \(E.self)") }
        guard let endpoint = override ?? E.endpoint(for: path) else {
            throw .notSupported("no endpoint decodes a search of \(E.self)")
        }
        let response: APIResponse
        do { response = try await client.send(config) } catch { throw .api(error) }
        if response.isNotModified && response.body.isEmpty { throw .emptyResponse }
        let payload = try decode(response, endpoint)
        let natural = query.order.first == .natural
        if trustRemoteFiltering {
            return (evaluator.result(fromMatching: payload.entities, alreadyOrdered: natural, alreadyPaginated: true), payload.related)
        }
        let matching = payload.entities.filter(evaluator.predicate())
        return (evaluator.result(fromMatching: matching, alreadyOrdered: natural), payload.related)
    }

    public func set(_ entities: [E]) async throws(StoreError) -> [E] { try await set(entities, request: nil) }

    public func set(_ entities: [E], request: (@Sendable (RemotePath<E>) -> APIRequestConfig?)?) async throws(StoreError) -> [E] {
        var stored: [E] = []
        for entity in entities {
            let path = RemotePath<E>.set(entity)
            guard var config = request?(path) ?? E.requestConfig(for: path) else {
                throw .notSupported("no request to write \(E.self)")
            }
            if case .create = path, config.tag == nil, let local = entity.identifier.localValue {
                config.tag = Self.createTag(local)   // lets a later run adopt the answer (see CoreManager)
            }
            // A create's answer names the server's id: queued requests still naming the local id are rewritten
            // before the queue sends the next one. The queue keeps this closure until then (or for good, if it is
            // closed first), so it holds the queue weakly: it runs only while the queue's worker holds it.
            let endpoint = E.endpoint(for: path)
            var rewrite: (@Sendable (Result<APIResponse, APIError>) async -> Void)?
            if case .create = path, let queue, let endpoint, let local = entity.identifier.localValue {
                rewrite = { [weak queue] result in
                    guard let queue, case .success(let response) = result,
                          let answer = try? endpoint.decode(Data(response.body)).entities.first,
                          let remote = answer.identifier.remoteValueDescription else { return }
                    try? await queue.rewriteIdentifier(typeID: E.identifierTypeID, local: local, remote: remote)
                }
            }
            let response: APIResponse
            do { response = try await sendWrite(config, beforeNext: rewrite) } catch { throw .api(error) }
            if let endpoint, !response.body.isEmpty,
               let answer = try decode(response, endpoint).entities.first {
                stored.append(EntityMerging.absorbIdentifier(of: entity, into: answer))
            } else {
                stored.append(entity)
            }
        }
        return stored
    }

    public func remove(_ identifiers: [E.Identifier]) async throws(StoreError) {
        for identifier in identifiers {
            guard let config = E.requestConfig(for: .remove(identifier)) else {
                throw .notSupported("no request to remove \(E.self)")
            }
            do { _ = try await sendWrite(config) } catch {
                if case .httpStatus(404, _) = error { continue }   // already gone
                throw .api(error)
            }
        }
    }

    public func removeAll(_ query: Query<E>) async throws(StoreError) -> [E.Identifier] {
        guard let config = E.requestConfig(for: .removeAll(query)) else {
            throw .notSupported("no request to remove all \(E.self) matching a query")
        }
        do { _ = try await sendWrite(config) } catch { throw .api(error) }
        return []
    }

    /// The tag that marks a queued create of `E` for the local id `local`.
    static func createTag(_ local: String) -> String { "lucid.create:\(E.identifierTypeID):\(local)" }

    public func createdLocalID(_ request: APIRequestConfig) -> String? {
        let prefix = Self.createTag("")
        guard let tag = request.tag, tag.hasPrefix(prefix) else { return nil }
        return String(tag.dropFirst(prefix.count))
    }

    public func adoptCreateAnswer(_ response: APIResponse, for entity: E) -> E? {
        guard let endpoint = E.endpoint(for: .create(entity)),
              let answer = try? endpoint.decode(Data(response.body)).entities.first else { return nil }
        return EntityMerging.absorbIdentifier(of: entity, into: answer)
    }

    private func decode(_ response: APIResponse, _ endpoint: RemoteEndpoint<E>) throws(StoreError) -> RemotePayload<E> {
        let payload: RemotePayload<E>
        do { payload = try endpoint.decode(Data(response.body)) } catch { throw .api(error) }
        for dropped in payload.droppedElements {
            logger.warning("dropped an undecodable \(E.self) from a payload: \(dropped)")
        }
        return payload
    }
}

import Foundation
import Logging
