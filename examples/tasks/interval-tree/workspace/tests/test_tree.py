import unittest

from ivtree import Interval, IntervalTree


class TreeTests(unittest.TestCase):
    def setUp(self):
        self.tree = IntervalTree.from_tuples([(1, 4, "a"), (3, 8, "b"), (6, 9, "c"), (10, 12, "d")])

    def test_len_and_order(self):
        self.assertEqual(len(self.tree), 4)
        self.assertEqual([iv.data for iv in self.tree], ["a", "b", "c", "d"])

    def test_duplicates_stored_once(self):
        self.tree.addi(1, 4, "a")
        self.assertEqual(len(self.tree), 4)

    def test_overlap(self):
        self.assertEqual([iv.data for iv in self.tree.overlap(3, 6)], ["a", "b"])
        self.assertEqual(self.tree.overlap(9, 10), [])

    def test_at(self):
        self.assertEqual([iv.data for iv in self.tree.at(3)], ["a", "b"])
        self.assertEqual(self.tree.at(9), [])

    def test_envelop(self):
        self.assertEqual([iv.data for iv in self.tree.envelop(2, 9)], ["b", "c"])

    def test_remove_and_discard(self):
        self.tree.removei(3, 8, "b")
        self.assertEqual([iv.data for iv in self.tree], ["a", "c", "d"])
        with self.assertRaises(KeyError):
            self.tree.removei(3, 8, "b")
        self.tree.discard(Interval(3, 8, "b"))
        self.assertEqual(len(self.tree), 3)

    def test_many_inserts_stay_searchable(self):
        tree = IntervalTree()
        for i in range(200):
            tree.addi(i, i + 5, i)
        self.assertEqual([iv.data for iv in tree.at(100)], [96, 97, 98, 99, 100])
        self.assertEqual(tree.begin(), 0)
        self.assertEqual(tree.end(), 204)


if __name__ == "__main__":
    unittest.main()
