import random
import unittest

from ivtree import Interval, IntervalTree


def spans(tree):
    return [(iv.begin, iv.end, iv.data) for iv in tree]


class ChopTests(unittest.TestCase):
    def test_cuts_contained_trims_and_splits(self):
        tree = IntervalTree.from_tuples([(1, 5, "a"), (3, 7, "b"), (6, 8, "c"), (8, 12, "d"), (2, 14, "e"), (10, 13, "f")])
        tree.chop(5, 10)
        self.assertEqual(spans(tree), [
            (1, 5, "a"), (2, 5, "e"), (3, 5, "b"), (10, 12, "d"), (10, 13, "f"), (10, 14, "e"),
        ])

    def test_empty_range_changes_nothing(self):
        tree = IntervalTree.from_tuples([(1, 5), (4, 9)])
        tree.chop(4, 4)
        tree.chop(6, 2)
        self.assertEqual(spans(tree), [(1, 5, None), (4, 9, None)])


class RemovalTests(unittest.TestCase):
    def test_issue_example(self):
        tree = IntervalTree()
        tree.addi(11, 13, "standup")
        tree.addi(17, 22, "evening")
        tree.addi(16, 19, "review")
        tree.addi(7, 12, "breakfast")
        tree.removei(17, 22, "evening")
        self.assertEqual(tree.overlap(13, 17), [Interval(16, 19, "review")])
        self.assertEqual(tree.at(16), [Interval(16, 19, "review")])

    def test_queries_match_a_plain_list_after_many_removals(self):
        rng = random.Random(5)
        tree, kept = IntervalTree(), []
        for step in range(600):
            if kept and rng.random() < 0.45:
                tree.remove(kept.pop(rng.randrange(len(kept))))
            else:
                begin = rng.randrange(100)
                interval = Interval(begin, begin + rng.randint(1, 15), step)
                tree.add(interval)
                kept.append(interval)
            begin = rng.randrange(110)
            end = begin + rng.randint(1, 10)
            self.assertEqual(tree.overlap(begin, end), sorted(iv for iv in kept if iv.overlaps(begin, end)))


if __name__ == "__main__":
    unittest.main()
