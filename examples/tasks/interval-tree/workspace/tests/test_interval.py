import unittest

from ivtree import Interval


class IntervalTests(unittest.TestCase):
    def test_rejects_empty_and_inverted(self):
        with self.assertRaises(ValueError):
            Interval(3, 3)
        with self.assertRaises(ValueError):
            Interval(5, 2)

    def test_half_open_overlap(self):
        iv = Interval(2, 5)
        self.assertTrue(iv.overlaps(4, 9))
        self.assertFalse(iv.overlaps(5, 9))
        self.assertFalse(iv.overlaps(0, 2))

    def test_contains_point(self):
        iv = Interval(2, 5)
        self.assertTrue(iv.contains_point(2))
        self.assertFalse(iv.contains_point(5))

    def test_equality_includes_data(self):
        self.assertEqual(Interval(1, 2, "a"), Interval(1, 2, "a"))
        self.assertNotEqual(Interval(1, 2, "a"), Interval(1, 2, "b"))

    def test_immutable(self):
        with self.assertRaises(AttributeError):
            Interval(1, 2).begin = 0


if __name__ == "__main__":
    unittest.main()
