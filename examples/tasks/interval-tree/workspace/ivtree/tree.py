"""IntervalTree: a set of half-open intervals with fast overlap and point queries."""

from ivtree import node as _node
from ivtree.interval import Interval


class IntervalTree:
    """A set of :class:`Interval` objects kept in a balanced, augmented search tree.

    Queries return lists sorted by (begin, end, data). Adding an interval that is already
    present (same begin, end and data) does nothing.
    """

    def __init__(self, intervals=()):
        self._root = None
        self._size = 0
        for interval in intervals:
            self.add(interval)

    @classmethod
    def from_tuples(cls, tuples):
        """Builds a tree from ``(begin, end)`` or ``(begin, end, data)`` tuples."""
        return cls(Interval(*t) for t in tuples)

    # -- changing the set -------------------------------------------------------------

    def add(self, interval):
        """Adds ``interval`` (an :class:`Interval`)."""
        if not isinstance(interval, Interval):
            raise TypeError("expected an Interval, got %r" % (interval,))
        self._root, added = _node.insert(self._root, interval)
        if added:
            self._size += 1

    def addi(self, begin, end, data=None):
        """Adds ``Interval(begin, end, data)``."""
        self.add(Interval(begin, end, data))

    def remove(self, interval):
        """Removes ``interval``; raises KeyError when it is not in the tree."""
        self._root, removed = _node.delete(self._root, interval.sort_key())
        if removed is None:
            raise KeyError(interval)
        self._size -= 1

    def removei(self, begin, end, data=None):
        """Removes ``Interval(begin, end, data)``; raises KeyError when absent."""
        self.remove(Interval(begin, end, data))

    def discard(self, interval):
        """Removes ``interval`` if present."""
        self._root, removed = _node.delete(self._root, interval.sort_key())
        if removed is not None:
            self._size -= 1

    def clear(self):
        self._root = None
        self._size = 0

    # -- queries ------------------------------------------------------------------------

    def overlap(self, begin, end):
        """Intervals sharing at least one point with ``[begin, end)``."""
        found = []
        if begin < end:
            _node.search_overlap(self._root, begin, end, found)
        return sorted(found)

    def at(self, point):
        """Intervals containing ``point``."""
        found = []
        _node.search_point(self._root, point, found)
        return sorted(found)

    def envelop(self, begin, end):
        """Intervals lying entirely inside ``[begin, end)``."""
        return [iv for iv in self.overlap(begin, end) if begin <= iv.begin and iv.end <= end]

    def begin(self):
        """Smallest begin in the tree; raises ValueError when empty."""
        if self._root is None:
            raise ValueError("empty tree")
        return next(_node.walk(self._root)).begin

    def end(self):
        """Largest end in the tree; raises ValueError when empty."""
        if self._root is None:
            raise ValueError("empty tree")
        return max(iv.end for iv in self)

    def items(self):
        """All intervals, sorted."""
        return list(self)

    def is_empty(self):
        return self._size == 0

    def __len__(self):
        return self._size

    def __iter__(self):
        return _node.walk(self._root)

    def __contains__(self, interval):
        if not isinstance(interval, Interval):
            return False
        return interval in self.overlap(interval.begin, interval.end)

    def __repr__(self):
        return "IntervalTree([%s])" % ", ".join(repr(iv) for iv in self)
