"""Looms shared by the Loom tests: Fold's vector example and a small TreeLSTM
(the model of BENCHMARKS.md §2) with a per-tree reference."""

import numpy as np

import treadle as td


class BinaryLoomOp(td.loom.LoomOp):
    def __init__(self, type_shape, op):
        self._op = op
        super().__init__([type_shape, type_shape], [type_shape])

    def instantiate_batch(self, inputs):
        return [self._op(inputs[0], inputs[1])]


VEC3 = td.loom.TypeShape("float64", (3,))


def vector_loom(max_depth=None, **kwargs):
    x = td.Variable(np.array([1.0, 2.0, 3.0]), name="x")
    y = td.Variable(np.array([-1.0, 0.5, 2.0]), name="y")
    loom = td.loom.Loom(max_depth=max_depth, named_tensors={"x": x, "y": y},
                        named_ops={"add": BinaryLoomOp(VEC3, td.add), "mul": BinaryLoomOp(VEC3, td.multiply)},
                        **kwargs)
    return loom, x, y


# ------------------------------------------------------------------ TreeLSTM

def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


class TreeLSTMWeights:
    def __init__(self, vocab=50, embed=6, hidden=4, classes=3, seed=0, dtype=np.float64):
        rng = np.random.default_rng(seed)
        self.hidden = hidden
        self.embedding = td.Variable(rng.normal(0, 0.5, (vocab, embed)).astype(dtype), name="embedding")
        self.w_leaf = td.Variable(rng.normal(0, 0.5, (embed, 3 * hidden)).astype(dtype), name="w_leaf")
        self.b_leaf = td.Variable(rng.normal(0, 0.1, (3 * hidden,)).astype(dtype), name="b_leaf")
        self.w_node = td.Variable(rng.normal(0, 0.5, (2 * hidden, 5 * hidden)).astype(dtype), name="w_node")
        self.b_node = td.Variable(rng.normal(0, 0.1, (5 * hidden,)).astype(dtype), name="b_node")
        self.w_out = td.Variable(rng.normal(0, 0.5, (hidden, classes)).astype(dtype), name="w_out")
        self.b_out = td.Variable(np.zeros(classes, dtype), name="b_out")
        self.dtype = dtype
        self.embed_ts = td.loom.TypeShape(dtype, (embed,), "embedding")
        self.c_ts = td.loom.TypeShape(dtype, (hidden,), "c")
        self.h_ts = td.loom.TypeShape(dtype, (hidden,), "h")

    def variables(self):
        return [self.embedding, self.w_leaf, self.b_leaf, self.w_node, self.b_node, self.w_out, self.b_out]

    # The cell, on batches (the loom's ops) and on single rows (the per-tree reference) alike.
    def leaf(self, x):
        i, o, u = td.split(td.matmul(x, self.w_leaf) + self.b_leaf, 3, axis=1)
        c = td.sigmoid(i) * td.tanh(u)
        return c, td.sigmoid(o) * td.tanh(c)

    def node(self, c_l, h_l, c_r, h_r):
        z = td.matmul(td.concat([h_l, h_r], axis=1), self.w_node) + self.b_node
        i, f_l, f_r, o, u = td.split(z, 5, axis=1)
        c = td.sigmoid(i) * td.tanh(u) + td.sigmoid(f_l) * c_l + td.sigmoid(f_r) * c_r
        return c, td.sigmoid(o) * td.tanh(c)


class LeafOp(td.loom.LoomOp):
    def __init__(self, w):
        self.w = w
        super().__init__([w.embed_ts], [w.c_ts, w.h_ts])

    def instantiate_batch(self, inputs):
        return list(self.w.leaf(inputs[0]))


class NodeOp(td.loom.LoomOp):
    def __init__(self, w):
        self.w = w
        super().__init__([w.c_ts, w.h_ts, w.c_ts, w.h_ts], [w.c_ts, w.h_ts])

    def instantiate_batch(self, inputs):
        return list(self.w.node(*inputs))


def tree_lstm_loom(w, max_depth=None):
    return td.loom.Loom(max_depth=max_depth, named_ops={"leaf": LeafOp(w), "node": NodeOp(w)},
                        batch_inputs={w.embed_ts: w.embedding})


def weave_tree(weaver, w, tree):
    """Weaves one tree one call per node (the Python path); returns (c, h) of its root."""
    if isinstance(tree, tuple):
        c_l, h_l = weave_tree(weaver, w, tree[0])
        c_r, h_r = weave_tree(weaver, w, tree[1])
        return weaver.node(c_l, h_l, c_r, h_r)
    return weaver.leaf(weaver.batch_input(w.embed_ts, tree))


def dense(x):
    """The value of a tensor or td.IndexedSlices (a batch input's gradient), as NumPy."""
    return td.convert_to_tensor(x).numpy()


def tree_lstm_reference(w, tree):
    """(c, h) of a tree's root, computed recursively, one tree at a time."""
    if isinstance(tree, tuple):
        c_l, h_l = tree_lstm_reference(w, tree[0])
        c_r, h_r = tree_lstm_reference(w, tree[1])
        return w.node(c_l, h_l, c_r, h_r)
    x = td.gather(w.embedding, [tree])
    return w.leaf(x)


def random_tree(rng, leaves, vocab):
    if leaves == 1:
        return int(rng.integers(vocab))
    k = int(rng.integers(1, leaves))
    return (random_tree(rng, k, vocab), random_tree(rng, leaves - k, vocab))


def tree_depth(tree):
    return 1 + max(tree_depth(tree[0]), tree_depth(tree[1])) if isinstance(tree, tuple) else 1
