"""AVL nodes augmented with the largest interval end of their subtree.

Every function here takes a subtree root and returns the (possibly new) subtree root, so
callers always write ``root = insert(root, ...)``. ``max_end`` lets queries skip subtrees
whose intervals all end at or before the query's begin.
"""


class Node:
    __slots__ = ("interval", "key", "left", "right", "height", "max_end")

    def __init__(self, interval):
        self.interval = interval
        self.key = interval.sort_key()
        self.left = None
        self.right = None
        self.height = 1
        self.max_end = interval.end


def height(node):
    return node.height if node is not None else 0


def _update_height(node):
    node.height = 1 + max(height(node.left), height(node.right))


def _refresh_max_end(node):
    best = node.interval.end
    if node.left is not None and node.left.max_end > best:
        best = node.left.max_end
    if node.right is not None and node.right.max_end > best:
        best = node.right.max_end
    node.max_end = best


def _balance_factor(node):
    return height(node.left) - height(node.right)


def _rotate_left(node):
    pivot = node.right
    node.right = pivot.left
    pivot.left = node
    _update_height(node)
    _update_height(pivot)
    return pivot


def _rotate_right(node):
    pivot = node.left
    node.left = pivot.right
    pivot.right = node
    _update_height(node)
    _update_height(pivot)
    return pivot


def _rebalance(node):
    _update_height(node)
    balance = _balance_factor(node)
    if balance > 1:
        if _balance_factor(node.left) < 0:
            node.left = _rotate_left(node.left)
        return _rotate_right(node)
    if balance < -1:
        if _balance_factor(node.right) > 0:
            node.right = _rotate_right(node.right)
        return _rotate_left(node)
    return node


def _refresh_top(node):
    # Rotations move at most the two levels below the returned root, so refreshing them
    # bottom-up restores max_end for the whole subtree.
    for child in (node.left, node.right):
        if child is not None:
            for grandchild in (child.left, child.right):
                if grandchild is not None:
                    _refresh_max_end(grandchild)
            _refresh_max_end(child)
    _refresh_max_end(node)


def insert(node, interval):
    """Inserts ``interval``; returns ``(root, added)``. Equal intervals are stored once."""
    if node is None:
        return Node(interval), True
    key = interval.sort_key()
    if key == node.key:
        return node, False
    if key < node.key:
        node.left, added = insert(node.left, interval)
    else:
        node.right, added = insert(node.right, interval)
    if not added:
        return node, False
    node = _rebalance(node)
    _refresh_top(node)
    return node, True


def _leftmost(node):
    while node.left is not None:
        node = node.left
    return node


def delete(node, key):
    """Removes the interval whose sort key is ``key``; returns ``(root, removed)`` where
    ``removed`` is the Interval taken out, or None when no interval has that key."""
    if node is None:
        return None, None
    if key < node.key:
        node.left, removed = delete(node.left, key)
    elif node.key < key:
        node.right, removed = delete(node.right, key)
    else:
        removed = node.interval
        if node.left is None:
            return node.right, removed
        if node.right is None:
            return node.left, removed
        successor = _leftmost(node.right)
        node.right, _ = delete(node.right, successor.key)
        node.interval = successor.interval
        node.key = successor.key
    if removed is None:
        return node, None
    _refresh_max_end(node)
    return _rebalance(node), removed


def search_overlap(node, begin, end, found):
    """Appends to ``found`` every interval of the subtree that overlaps ``[begin, end)``."""
    if node is None or node.max_end <= begin:
        return
    search_overlap(node.left, begin, end, found)
    if node.interval.overlaps(begin, end):
        found.append(node.interval)
    if node.interval.begin < end:
        search_overlap(node.right, begin, end, found)


def search_point(node, point, found):
    """Appends to ``found`` every interval of the subtree that contains ``point``."""
    if node is None or node.max_end <= point:
        return
    search_point(node.left, point, found)
    if node.interval.contains_point(point):
        found.append(node.interval)
    if node.interval.begin <= point:
        search_point(node.right, point, found)


def walk(node):
    """Yields the subtree's intervals in sort order."""
    stack = []
    while stack or node is not None:
        while node is not None:
            stack.append(node)
            node = node.left
        node = stack.pop()
        yield node.interval
        node = node.right
