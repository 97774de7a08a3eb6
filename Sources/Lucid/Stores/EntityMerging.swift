/// How every local store combines a written entity with the stored one: `stored.merging(written)`, then the
/// result keeps every identifier half either side knew (through ``MutableEntity/merge(identifier:)`` when the
/// entity is mutable), so a lookup by the local id keeps working after the server's id arrives.
enum EntityMerging {
    static func merge<E: LocalEntity>(stored: E?, written: E) -> E {
        guard let stored else { return written }
        return merge(stored: stored, written: written)
    }

    /// ``merge(stored:written:)`` over an entity known to be stored (no `E?`: a run-time metadata lookup in the
    /// library's generic code).
    static func merge<E: LocalEntity>(stored: E, written: E) -> E {
        absorbIdentifier(of: stored, into: stored.merging(written))
    }

    static func absorbIdentifier<E: LocalEntity>(of other: E, into entity: E) -> E {
        guard let mutable = entity as? any MutableEntity else { return entity }
        return (absorb(mutable, other.identifier) as? E) ?? entity
    }

    private static func absorb<M: MutableEntity>(_ entity: M, _ identifier: Any) -> M {
        guard let identifier = identifier as? M.Identifier else { return entity }
        var copy = entity
        do { try copy.merge(identifier: identifier) } catch { return entity }
        return copy
    }
}
