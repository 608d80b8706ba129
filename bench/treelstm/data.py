"""SST-like tree files: one tree a line, `<label 0..4>\\t<tree>` where a tree
is a token id or `(<tree> <tree>)`.

A tree is held as arrays in post-order (children before parents, root last):
`left[k]`, `right[k]` the child node indices of internal node k (-1 for a
leaf), `token[k]` the token id of leaf k (-1 for an internal node)."""

import dataclasses
import pathlib

import numpy as np

DEFAULT_PATH = pathlib.Path(__file__).resolve().parent.parent / "data" / "sstlike-8192.trees"
VOCAB = 20000
CLASSES = 5


@dataclasses.dataclass
class Tree:
    label: int
    left: np.ndarray
    right: np.ndarray
    token: np.ndarray

    @property
    def size(self):
        return len(self.token)

    @property
    def num_leaves(self):
        return int((self.token >= 0).sum())

    def heights(self):
        """Height of every node (leaves 0), in post-order."""
        h = np.zeros(self.size, np.int32)
        for k in range(self.size):
            if self.left[k] >= 0:
                h[k] = 1 + max(h[self.left[k]], h[self.right[k]])
        return h


def parse_tree(text, label=0, where="<tree>"):
    """Parses `(a (b c))` into a Tree; ValueError naming `where` on bad input."""
    left, right, token = [], [], []
    stack = []  # node indices of finished subtrees awaiting their parent
    opens = 0
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "(":
            opens += 1
            stack.append(None)  # marker
            i += 1
        elif c == ")":
            if len(stack) < 3 or stack[-3] is not None or stack[-1] is None or stack[-2] is None:
                raise ValueError(f"{where}: a node must have exactly two children (at column {i})")
            r, l_ = stack.pop(), stack.pop()
            stack.pop()
            left.append(l_)
            right.append(r)
            token.append(-1)
            stack.append(len(token) - 1)
            opens -= 1
            i += 1
        elif c.isspace():
            i += 1
        elif c.isdigit():
            j = i
            while j < n and text[j].isdigit():
                j += 1
            tok = int(text[i:j])
            if tok >= VOCAB:
                raise ValueError(f"{where}: token id {tok} is outside the vocabulary of {VOCAB}")
            left.append(-1)
            right.append(-1)
            token.append(tok)
            stack.append(len(token) - 1)
            i = j
        else:
            raise ValueError(f"{where}: unexpected character {c!r} at column {i}")
    if opens != 0 or len(stack) != 1 or stack[0] is None:
        raise ValueError(f"{where}: unbalanced tree")
    return Tree(label, np.array(left, np.int32), np.array(right, np.int32), np.array(token, np.int32))


def load_trees(path=DEFAULT_PATH, limit=None):
    trees = []
    with open(path) as f:
        for lineno, line in enumerate(f, 1):
            if limit is not None and len(trees) >= limit:
                break
            line = line.strip()
            if not line:
                continue
            label_text, _, tree_text = line.partition("\t")
            label = int(label_text)
            if not 0 <= label < CLASSES:
                raise ValueError(f"{path}:{lineno}: label {label} is not in 0..{CLASSES - 1}")
            trees.append(parse_tree(tree_text, label, f"{path}:{lineno}"))
    return trees


def same_shape_batch(trees, batch_size, rng):
    """`batch_size` copies of the shape of one tree of median size, with
    random tokens: the reference batch of Fold's cost ratio (identically shaped
    trees of the same total size as a random batch)."""
    sizes = sorted(trees, key=lambda t: t.size)
    template = sizes[len(sizes) // 2]
    out = []
    for _ in range(batch_size):
        tokens = np.where(template.token >= 0, rng.integers(0, VOCAB, template.size), -1).astype(np.int32)
        out.append(Tree(template.label, template.left, template.right, tokens))
    return out
