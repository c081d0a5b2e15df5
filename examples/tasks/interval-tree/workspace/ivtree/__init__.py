"""ivtree: a small augmented interval tree for half-open intervals [begin, end)."""

from ivtree.interval import Interval
from ivtree.tree import IntervalTree

__all__ = ["Interval", "IntervalTree"]
__version__ = "0.4.1"
