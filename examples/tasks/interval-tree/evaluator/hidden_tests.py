# Hidden verifier of examples/interval-tree. Never shown to agents.
#
# evaluate.py sends this file, with NONCE replaced, to `python3 -` inside the candidate
# sandbox (cwd = a copy of the submitted workspace) and reads one line per test from stdout:
# "<nonce> <test id> <pass|fail|error>". Tests that print nothing count as errors.
import os
import random
import signal
import sys
import traceback

NONCE = "@@NONCE@@"
PER_TEST_SECONDS = 10
TESTS = []


def test(fn):
    TESTS.append((fn.__name__, fn))
    return fn


class TestTimeout(Exception):
    pass


def spans(tree):
    return [(iv.begin, iv.end, iv.data) for iv in tree]


def check(condition, message):
    if not condition:
        raise AssertionError(message)


def model_overlap(model, begin, end):
    return sorted((b, e, d) for (b, e, d) in model if b < end and begin < e)


def model_at(model, point):
    return sorted((b, e, d) for (b, e, d) in model if b <= point < e)


def model_chop(model, begin, end):
    out = set()
    for b, e, d in model:
        if e <= begin or end <= b:
            out.add((b, e, d))
            continue
        if b < begin:
            out.add((b, begin, d))
        if end < e:
            out.add((end, e, d))
    return out


def as_triples(intervals):
    return [(iv.begin, iv.end, iv.data) for iv in intervals]


# -- chop ----------------------------------------------------------------------------------

@test
def chop_removes_contained(ivtree):
    tree = ivtree.IntervalTree.from_tuples([(20, 30, "x"), (22, 25, "y"), (26, 29, "z"), (40, 45, "w")])
    tree.chop(21, 30)
    check(spans(tree) == [(20, 21, "x"), (40, 45, "w")], "contained intervals survive: %r" % spans(tree))


@test
def chop_trims_left_overhang(ivtree):
    tree = ivtree.IntervalTree.from_tuples([(3, 7, "a"), (50, 60, "far")])
    tree.chop(5, 10)
    check(spans(tree) == [(3, 5, "a"), (50, 60, "far")], "left overhang not trimmed: %r" % spans(tree))


@test
def chop_trims_right_overhang(ivtree):
    tree = ivtree.IntervalTree.from_tuples([(8, 12, "a"), (0, 2, "far")])
    tree.chop(5, 10)
    check(spans(tree) == [(0, 2, "far"), (10, 12, "a")], "right overhang not trimmed: %r" % spans(tree))


@test
def chop_splits_straddling(ivtree):
    tree = ivtree.IntervalTree.from_tuples([(2, 14, "long"), (30, 31, "other")])
    tree.chop(5, 10)
    check(spans(tree) == [(2, 5, "long"), (10, 14, "long"), (30, 31, "other")],
          "straddling interval not split in two: %r" % spans(tree))


@test
def chop_leaves_touching(ivtree):
    tree = ivtree.IntervalTree.from_tuples([(1, 5, "before"), (10, 13, "after")])
    tree.chop(5, 10)
    check(spans(tree) == [(1, 5, "before"), (10, 13, "after")], "touching intervals changed: %r" % spans(tree))


@test
def chop_empty_range_noop(ivtree):
    tree = ivtree.IntervalTree.from_tuples([(1, 9, "a"), (4, 6, "b")])
    tree.chop(5, 5)
    tree.chop(8, 3)
    check(spans(tree) == [(1, 9, "a"), (4, 6, "b")], "empty range changed the tree: %r" % spans(tree))


@test
def chop_pieces_keep_data(ivtree):
    payload = {"room": "B2", "owner": "kim"}
    tree = ivtree.IntervalTree()
    tree.addi(9.0, 11.5, payload)
    tree.addi(10.5, 13.0, ("tuple", 1))
    tree.chop(10.0, 12.0)
    got = spans(tree)
    check(len(got) == 2, "expected two pieces, got %r" % got)
    check(got[0][:2] == (9.0, 10.0) and got[0][2] == payload, "left piece lost its data: %r" % got)
    check(got[1] == (12.0, 13.0, ("tuple", 1)), "right piece lost its data: %r" % got)


@test
def chop_updates_len(ivtree):
    tree = ivtree.IntervalTree.from_tuples([(0, 4, 1), (5, 6, 2), (5, 9, 3), (7, 8, 4), (12, 20, 5)])
    tree.chop(5, 8)
    check(len(tree) == 3, "len after chop is %d, expected 3" % len(tree))
    check(len(list(tree)) == 3, "iteration after chop yields %d intervals" % len(list(tree)))
    check(tree.at(8) == [ivtree.Interval(8, 9, 3)], "at(8) after chop: %r" % tree.at(8))


# -- removal --------------------------------------------------------------------------------

@test
def overlap_after_remove_repro(ivtree):
    tree = ivtree.IntervalTree()
    tree.addi(11, 13, "standup")
    tree.addi(17, 22, "evening")
    tree.addi(16, 19, "review")
    tree.addi(7, 12, "breakfast")
    tree.removei(17, 22, "evening")
    check(tree.overlap(13, 17) == [ivtree.Interval(16, 19, "review")], "overlap(13, 17) = %r" % tree.overlap(13, 17))
    check(tree.at(16) == [ivtree.Interval(16, 19, "review")], "at(16) = %r" % tree.at(16))


@test
def random_remove_matches_model(ivtree):
    rng = random.Random(20240611)
    tree = ivtree.IntervalTree()
    model = []
    for step in range(1500):
        if model and rng.random() < 0.48:
            b, e, d = model.pop(rng.randrange(len(model)))
            if rng.random() < 0.5:
                tree.remove(ivtree.Interval(b, e, d))
            else:
                tree.discard(ivtree.Interval(b, e, d))
        else:
            b = rng.randrange(500)
            triple = (b, b + rng.randint(1, 40), step)
            tree.add(ivtree.Interval(*triple))
            model.append(triple)
        if step % 5 == 0:
            qb = rng.randrange(-10, 540)
            qe = qb + rng.randint(1, 30)
            got = as_triples(tree.overlap(qb, qe))
            want = model_overlap(model, qb, qe)
            check(got == want, "step %d overlap(%d, %d): %d found, %d expected" % (step, qb, qe, len(got), len(want)))
            point = rng.randrange(540)
            check(as_triples(tree.at(point)) == model_at(model, point), "step %d at(%d) differs" % (step, point))
    check(len(tree) == len(model), "len %d, expected %d" % (len(tree), len(model)))


@test
def random_chop_matches_model(ivtree):
    rng = random.Random(77031)
    for round_ in range(12):
        tree = ivtree.IntervalTree()
        model = set()
        for k in range(120):
            b = rng.randrange(300)
            triple = (b, b + rng.randint(1, 60), "r%d-%d" % (round_, k))
            tree.add(ivtree.Interval(*triple))
            model.add(triple)
        for _ in range(6):
            cb = rng.randrange(300)
            ce = cb + rng.randint(1, 25)
            tree.chop(cb, ce)
            model = model_chop(model, cb, ce)
            check(sorted(spans(tree)) == sorted(model), "round %d chop(%d, %d): tree and model differ" % (round_, cb, ce))
            for _ in range(20):
                qb = rng.randrange(330)
                qe = qb + rng.randint(1, 20)
                check(as_triples(tree.overlap(qb, qe)) == model_overlap(model, qb, qe),
                      "round %d overlap(%d, %d) after chop differs" % (round_, qb, qe))


def _alarm(signum, frame):
    raise TestTimeout()


def main():
    sys.path.insert(0, os.getcwd())
    sys.setrecursionlimit(10000)
    try:
        import ivtree
        import ivtree.tree  # noqa: F401
    except BaseException:
        traceback.print_exc()
        for name, _ in TESTS:
            print("%s %s error" % (NONCE, name), flush=True)
        return
    signal.signal(signal.SIGALRM, _alarm)
    for name, fn in TESTS:
        status = "pass"
        signal.alarm(PER_TEST_SECONDS)
        try:
            fn(ivtree)
        except AssertionError as failure:
            status = "fail"
            print("%s: %s" % (name, failure), file=sys.stderr)
        except BaseException:
            status = "error"
            print("%s raised:" % name, file=sys.stderr)
            traceback.print_exc()
        finally:
            signal.alarm(0)
        print("%s %s %s" % (NONCE, name, status), flush=True)


main()
