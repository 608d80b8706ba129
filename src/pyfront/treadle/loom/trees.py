"""Binary trees for Weaver.weave_trees: parsing `(a b)` s-expressions of
integer leaves (the SST-like format of the TreeLSTM benchmark) and laying many
trees out as flat child-index arrays, children before parents."""

import numpy as np


def parse_tree(text):
    """`(1 (2 3))` -> (1, (2, 3)); a bare integer is a one-leaf tree."""
    stack = [[]]
    token = ""
    for ch in text:
        if ch == "(" or ch == ")" or ch.isspace():
            if token:
                stack[-1].append(int(token))
                token = ""
            if ch == "(":
                stack.append([])
            elif ch == ")":
                if len(stack) < 2:
                    raise ValueError(f"unbalanced ')' in tree {text!r}")
                node = stack.pop()
                if len(node) != 2:
                    raise ValueError(f"a tree node must have exactly two children, got {len(node)} in {text!r}")
                stack[-1].append(tuple(node))
        else:
            token += ch
    if token:
        stack[-1].append(int(token))
    if len(stack) != 1 or len(stack[0]) != 1:
        raise ValueError(f"not one well-formed tree: {text!r}")
    return stack[0][0]


def read_labeled_trees(path):
    """Lines `<label>\\t<tree>` -> (labels as an int array, list of trees)."""
    labels, trees = [], []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            label, tree = line.split("\t", 1)
            labels.append(int(label))
            trees.append(parse_tree(tree))
    return np.array(labels, dtype=np.int64), trees


def tree_arrays(trees):
    """Flat arrays for `Weaver.weave_trees`: (left, right, leaf_values, roots),
    nodes of all trees numbered children first."""
    left, right, values, roots = [], [], [], []
    for tree in trees:
        # Iterative post-order: (node, children done?) on a stack.
        stack = [(tree, False)]
        ids = []
        while stack:
            node, done = stack.pop()
            if isinstance(node, tuple):
                if done:
                    r, l_ = ids.pop(), ids.pop()
                    left.append(l_)
                    right.append(r)
                    values.append(0)
                    ids.append(len(left) - 1)
                else:
                    stack.append((node, True))
                    stack.append((node[1], False))
                    stack.append((node[0], False))
            else:
                left.append(-1)
                right.append(-1)
                values.append(int(node))
                ids.append(len(left) - 1)
        roots.append(ids.pop())
    as_array = lambda v: np.array(v, dtype=np.int64)  # noqa: E731
    return as_array(left), as_array(right), as_array(values), as_array(roots)
