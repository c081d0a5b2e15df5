"""The Interval value type."""


class Interval:
    """A half-open interval ``[begin, end)`` carrying an optional ``data`` payload.

    Intervals are immutable and hashable. Two intervals are equal when begin, end and data
    are equal. ``begin`` must be strictly smaller than ``end``.
    """

    __slots__ = ("begin", "end", "data")

    def __init__(self, begin, end, data=None):
        if not begin < end:
            raise ValueError("empty or inverted interval [%r, %r)" % (begin, end))
        object.__setattr__(self, "begin", begin)
        object.__setattr__(self, "end", end)
        object.__setattr__(self, "data", data)

    def __setattr__(self, name, value):
        raise AttributeError("Interval is immutable")

    def overlaps(self, begin, end):
        """Whether this interval shares at least one point with ``[begin, end)``."""
        return self.begin < end and begin < self.end

    def contains_point(self, point):
        """Whether ``begin <= point < end``."""
        return self.begin <= point < self.end

    def contains_interval(self, other):
        """Whether ``other`` lies entirely inside this interval."""
        return self.begin <= other.begin and other.end <= self.end

    def length(self):
        return self.end - self.begin

    def sort_key(self):
        """Total order used by the tree: by begin, then end, then a stable form of data."""
        return (self.begin, self.end, repr(self.data))

    def __eq__(self, other):
        if not isinstance(other, Interval):
            return NotImplemented
        return (self.begin, self.end, self.data) == (other.begin, other.end, other.data)

    def __hash__(self):
        return hash((self.begin, self.end, self.data))

    def __lt__(self, other):
        return self.sort_key() < other.sort_key()

    def __repr__(self):
        if self.data is None:
            return "Interval(%r, %r)" % (self.begin, self.end)
        return "Interval(%r, %r, %r)" % (self.begin, self.end, self.data)

    def __iter__(self):
        return iter((self.begin, self.end, self.data))
