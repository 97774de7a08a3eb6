import Lucid
import Testing

/// A query's filter is checked when it is set (``Query/filter``): validating is then O(1), and the errors are
/// those of a walk of the filter at validation time, whichever way the query was built or changed.
@Suite("Query validation")
struct QueryValidationTests {
    static func error(_ query: Query<Book>) -> QueryError? {
        do { try query.validate() } catch { return error }
        return nil
    }

    @Test("a filter changed after the query was built is checked again")
    func changedFilter() {
        var query = Query<Book>.filter(.genre == .string("scifi")).with(limit: 3)
        #expect(Self.error(query) == nil)
        query.filter = .pages ~= .int(4)
        #expect(Self.error(query) == .invalidComparison("~= on pages needs a .string pattern"))
        query.filter = .title ~= .string("^D")
        #expect(Self.error(query) == nil)
        query = query.filter(.identifier ~= .identifier(.remote(1)))
        #expect(Self.error(query) == .invalidComparison("~= cannot apply to the identifier"))
        query.filter = nil
        #expect(Self.error(query) == nil)
        #expect(Self.error(Query(filter: .containedIn(.index(.tags), [.index(.array([.string("a")]))]))) == .invalidComparison(">> takes scalar values"))
        #expect(Self.error(.all.with(offset: -1)) == .negativeOffset(-1))
    }

    @Test("of two errors, the one the walk meets first is thrown, a bad regex included")
    func firstErrorInWalkOrder() {
        let badRegex: Query<Book>.Filter = .title ~= .string("[z-a]")
        let badComparison: Query<Book>.Filter = .pages ~= .int(4)
        guard case .invalidRegex(let pattern, _)? = Self.error(.filter(badRegex && badComparison)) else {
            Issue.record("expected the regex error first")
            return
        }
        #expect(pattern == "[z-a]")
        #expect(Self.error(.filter(badComparison || badRegex)) == .invalidComparison("~= on pages needs a .string pattern"))
        #expect(Self.error(.filter(!(.genre == .string("x")) && badComparison)) != nil)
    }

    @Test("queries equal exactly when their parts are")
    func equality() {
        let a = Query<Book>.filter(.genre == .string("scifi"))
        var b = Query<Book>.all
        b.filter = .genre == .string("scifi")
        #expect(a == b)
        b.filter = .genre == .string("poetry")
        #expect(a != b)
    }
}
