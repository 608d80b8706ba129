"""Small per-example models for the td.loom.autobatch tests, each with a
NumPy reference computed one example at a time (float64 throughout)."""

import numpy as np

import treadle as td

F64 = np.float64


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def row(x, n):
    return td.reshape(x, [1, n])


# ------------------------------------------------------------------ binary TreeLSTM
class BinaryTreeLSTM:
    """Leaves are token ids, inner nodes (left, right) pairs."""

    def __init__(self, embed=4, hidden=3, vocab=7, seed=0):
        rng = np.random.default_rng(seed)
        self.E, self.H = embed, hidden
        self.vars = {
            "embedding": td.Variable(rng.normal(0, 0.5, (vocab, embed))),
            "W_leaf": td.Variable(rng.normal(0, 0.5, (embed, 3 * hidden))),
            "b_leaf": td.Variable(rng.normal(0, 0.1, (3 * hidden,))),
            "W_node": td.Variable(rng.normal(0, 0.5, (2 * hidden, 5 * hidden))),
            "b_node": td.Variable(rng.normal(0, 0.1, (5 * hidden,))),
        }
        v, E, H = self.vars, embed, hidden

        @td.function
        def leaf(x):
            iou = td.matmul(row(x, E), v["W_leaf"])[0] + v["b_leaf"]
            i, o, u = td.split(iou, 3)
            c = td.sigmoid(i) * td.tanh(u)
            return c, td.sigmoid(o) * td.tanh(c)

        @td.function
        def node(c_l, h_l, c_r, h_r):
            z = td.matmul(row(td.concat([h_l, h_r], 0), 2 * H), v["W_node"])[0] + v["b_node"]
            i, f_l, f_r, o, u = td.split(z, 5)
            c = td.sigmoid(i) * td.tanh(u) + td.sigmoid(f_l) * c_l + td.sigmoid(f_r) * c_r
            return c, td.sigmoid(o) * td.tanh(c)

        self.leaf, self.node = leaf, node

    def per_example(self, tree):
        """The user's recursion: (c, h) of the tree."""
        if isinstance(tree, int):
            return self.leaf(td.gather(self.vars["embedding"], tree))
        c_l, h_l = self.per_example(tree[0])
        c_r, h_r = self.per_example(tree[1])
        return self.node(c_l, h_l, c_r, h_r)

    def root_h(self, tree):
        return self.per_example(tree)[1]

    def numpy_root_h(self, tree):
        v = {k: x.numpy() for k, x in self.vars.items()}

        def visit(t):
            if isinstance(t, int):
                i, o, u = np.split(v["embedding"][t] @ v["W_leaf"] + v["b_leaf"], 3)
                c = sigmoid(i) * np.tanh(u)
                return c, sigmoid(o) * np.tanh(c)
            (c_l, h_l), (c_r, h_r) = visit(t[0]), visit(t[1])
            i, f_l, f_r, o, u = np.split(np.concatenate([h_l, h_r]) @ v["W_node"] + v["b_node"], 5)
            c = sigmoid(i) * np.tanh(u) + sigmoid(f_l) * c_l + sigmoid(f_r) * c_r
            return c, sigmoid(o) * np.tanh(c)
        return visit(tree)[1]

    def hand_woven_root_h(self, trees):
        """The same model as hand-written LoomOps, woven per node."""
        v, E, H = self.vars, self.E, self.H
        emb_ts, st = td.loom.TypeShape(F64, (E,), "emb"), td.loom.TypeShape(F64, (H,), "state")

        class Leaf(td.loom.LoomOp):
            def __init__(self):
                super().__init__([emb_ts], [st, st])

            def instantiate_batch(self, inputs):
                i, o, u = td.split(td.matmul(inputs[0], v["W_leaf"]) + v["b_leaf"], 3, axis=1)
                c = td.sigmoid(i) * td.tanh(u)
                return [c, td.sigmoid(o) * td.tanh(c)]

        class Node(td.loom.LoomOp):
            def __init__(self):
                super().__init__([st] * 4, [st, st])

            def instantiate_batch(self, inputs):
                c_l, h_l, c_r, h_r = inputs
                z = td.matmul(td.concat([h_l, h_r], 1), v["W_node"]) + v["b_node"]
                i, f_l, f_r, o, u = td.split(z, 5, axis=1)
                c = td.sigmoid(i) * td.tanh(u) + td.sigmoid(f_l) * c_l + td.sigmoid(f_r) * c_r
                return [c, td.sigmoid(o) * td.tanh(c)]

        loom = td.loom.Loom(named_ops={"leaf": Leaf(), "node": Node()}, batch_inputs={emb_ts: v["embedding"]})
        w = loom.make_weaver()

        def weave(t):
            if isinstance(t, int):
                return w.leaf(w.batch_input(emb_ts, t))
            (c_l, h_l), (c_r, h_r) = weave(t[0]), weave(t[1])
            return w.node(c_l, h_l, c_r, h_r)
        for t in trees:
            w.add_output(weave(t)[1])
        return loom.output_tensor(st, w)


# ------------------------------------------------------------------ child-sum TreeLSTM
class ChildSumTreeLSTM:
    """A node is (token id, [children]); children are a Python list (any length)."""

    def __init__(self, embed=3, hidden=2, vocab=6, seed=1):
        rng = np.random.default_rng(seed)
        self.E, self.H = embed, hidden
        self.vars = {
            "embedding": td.Variable(rng.normal(0, 0.5, (vocab, embed))),
            "W": td.Variable(rng.normal(0, 0.5, (embed, 4 * hidden))),
            "U_iou": td.Variable(rng.normal(0, 0.5, (hidden, 3 * hidden))),
            "U_f": td.Variable(rng.normal(0, 0.5, (hidden, hidden))),
            "b": td.Variable(rng.normal(0, 0.1, (4 * hidden,))),
        }
        v, E, H = self.vars, embed, hidden

        @td.function
        def cell(x, child_c, child_h):
            wx = td.matmul(row(x, E), v["W"])[0] + v["b"]
            wx_iou, wx_f = wx[:3 * H], wx[3 * H:]
            h_sum = td.add_n(child_h) if child_h else td.zeros([H], F64)
            i, o, u = td.split(wx_iou + td.matmul(row(h_sum, H), v["U_iou"])[0], 3)
            c = td.sigmoid(i) * td.tanh(u)
            for c_k, h_k in zip(child_c, child_h):
                c = c + td.sigmoid(wx_f + td.matmul(row(h_k, H), v["U_f"])[0]) * c_k
            return c, td.sigmoid(o) * td.tanh(c)

        self.cell = cell

    def per_example(self, tree):
        token, children = tree
        states = [self.per_example(child) for child in children]
        return self.cell(td.gather(self.vars["embedding"], token), [c for c, _ in states], [h for _, h in states])

    def root_h(self, tree):
        return self.per_example(tree)[1]

    def numpy_root_h(self, tree):
        v, H = {k: x.numpy() for k, x in self.vars.items()}, self.H

        def visit(t):
            token, children = t
            states = [visit(ch) for ch in children]
            wx = v["embedding"][token] @ v["W"] + v["b"]
            h_sum = sum((h for _, h in states), np.zeros(H))
            i, o, u = np.split(wx[:3 * H] + h_sum @ v["U_iou"], 3)
            c = sigmoid(i) * np.tanh(u)
            for c_k, h_k in states:
                c = c + sigmoid(wx[3 * H:] + h_k @ v["U_f"]) * c_k
            return c, sigmoid(o) * np.tanh(c)
        return visit(tree)[1]


# ------------------------------------------------------------------ value-reading workloads
class TreeDecoder:
    """Expands a node while its computed probability exceeds 0.5, up to max_depth."""

    def __init__(self, hidden=4, max_depth=3, seed=2):
        rng = np.random.default_rng(seed)
        self.H, self.max_depth = hidden, max_depth
        self.vars = {"W_l": td.Variable(rng.normal(0, 0.8, (hidden, hidden))),
                     "W_r": td.Variable(rng.normal(0, 0.8, (hidden, hidden))),
                     "w_p": td.Variable(rng.normal(0, 1.0, (hidden,)))}
        v, H = self.vars, hidden

        @td.function
        def expand_prob(h):
            return td.sigmoid(td.reduce_sum(h * v["w_p"]))

        @td.function
        def children(h):
            return td.tanh(td.matmul(row(h, H), v["W_l"])[0]), td.tanh(td.matmul(row(h, H), v["W_r"])[0])

        self.expand_prob, self.children = expand_prob, children

    def per_example(self, z):
        """(sum of the generated nodes' states, number of nodes)."""
        def decode(h, depth):
            if depth < self.max_depth and float(self.expand_prob(h)) > 0.5:
                left, right = self.children(h)
                (s_l, n_l), (s_r, n_r) = decode(left, depth + 1), decode(right, depth + 1)
                return h + s_l + s_r, 1 + n_l + n_r
            return h, 1
        total, count = decode(td.constant(np.asarray(z, F64)), 0)
        return total, td.constant(float(count), F64)

    def numpy(self, z):
        v = {k: x.numpy() for k, x in self.vars.items()}

        def decode(h, depth):
            if depth < self.max_depth and sigmoid((h * v["w_p"]).sum()) > 0.5:
                (s_l, n_l), (s_r, n_r) = decode(np.tanh(h @ v["W_l"]), depth + 1), decode(np.tanh(h @ v["W_r"]), depth + 1)
                return h + s_l + s_r, 1 + n_l + n_r
            return h, 1
        total, count = decode(np.asarray(z, F64), 0)
        return total, float(count)


class HaltingLoop:
    """Steps a state until the accumulated halting value crosses a threshold (at most max_steps)."""

    def __init__(self, hidden=3, threshold=1.5, max_steps=6, seed=3):
        rng = np.random.default_rng(seed)
        self.H, self.threshold, self.max_steps = hidden, threshold, max_steps
        self.vars = {"A": td.Variable(rng.normal(0, 0.6, (hidden, hidden))),
                     "w": td.Variable(rng.normal(0, 1.0, (hidden,)))}
        v, H = self.vars, hidden

        @td.function
        def step(h):
            h2 = td.tanh(td.matmul(row(h, H), v["A"])[0])
            return h2, td.sigmoid(td.reduce_sum(h2 * v["w"]))

        self.step = step

    def per_example(self, x):
        h, halting, n = td.constant(np.asarray(x, F64)), 0.0, 0
        while True:
            h, p = self.step(h)
            halting = halting + p
            n += 1
            if float(halting) > self.threshold or n >= self.max_steps:
                return h * 2.0, halting

    def numpy(self, x):
        v = {k: t.numpy() for k, t in self.vars.items()}
        h, halting, n = np.asarray(x, F64), 0.0, 0
        while True:
            h = np.tanh(h @ v["A"])
            halting += sigmoid((h * v["w"]).sum())
            n += 1
            if halting > self.threshold or n >= self.max_steps:
                return h * 2.0, halting


class ShiftReduceParser:
    """Tokens are shifted or the top two stack entries reduced, by the argmax of a computed score."""

    def __init__(self, hidden=3, vocab=8, seed=4):
        rng = np.random.default_rng(seed)
        self.H = hidden
        self.vars = {"embedding": td.Variable(rng.normal(0, 0.8, (vocab, hidden))),
                     "W_s": td.Variable(rng.normal(0, 1.0, (2 * hidden, 2))),
                     "W_c": td.Variable(rng.normal(0, 0.6, (2 * hidden, hidden)))}
        v, H = self.vars, hidden

        @td.function
        def score(top, front):
            return td.matmul(row(td.concat([top, front], 0), 2 * H), v["W_s"])[0]

        @td.function
        def compose(left, right):
            return td.tanh(td.matmul(row(td.concat([left, right], 0), 2 * H), v["W_c"])[0])

        self.score, self.compose = score, compose

    def per_example(self, tokens):
        emb = self.vars["embedding"]
        buffer = [td.gather(emb, t) for t in tokens]
        stack, reduces = [], 0
        while buffer or len(stack) > 1:
            if len(stack) < 2:
                action = 0
            elif not buffer:
                action = 1
            else:
                action = int(td.argmax(self.score(stack[-1], buffer[0])))
            if action == 0:
                stack.append(buffer.pop(0))
            else:
                right, left = stack.pop(), stack.pop()
                stack.append(self.compose(left, right))
                reduces += 1
        return stack[0], td.constant(float(reduces), F64)

    def numpy(self, tokens):
        v = {k: t.numpy() for k, t in self.vars.items()}
        buffer = [v["embedding"][t] for t in tokens]
        stack, reduces = [], 0
        while buffer or len(stack) > 1:
            if len(stack) < 2:
                action = 0
            elif not buffer:
                action = 1
            else:
                action = int(np.argmax(np.concatenate([stack[-1], buffer[0]]) @ v["W_s"]))
            if action == 0:
                stack.append(buffer.pop(0))
            else:
                right, left = stack.pop(), stack.pop()
                stack.append(np.tanh(np.concatenate([left, right]) @ v["W_c"]))
                reduces += 1
        return stack[0], float(reduces)


def finite_difference_gradient(loss_of, var, eps=1e-6, entries=None):
    """Central differences of loss_of() (a float) with respect to entries of `var`."""
    base = var.numpy().copy()
    grad = np.zeros_like(base)
    flat = grad.reshape(-1)
    for k in (range(base.size) if entries is None else entries):
        for sign in (1, -1):
            x = base.copy().reshape(-1)
            x[k] += sign * eps
            var.assign(x.reshape(base.shape))
            flat[k] += sign * loss_of() / (2 * eps)
    var.assign(base)
    return grad
