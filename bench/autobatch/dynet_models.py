"""DyNet peers of the automatic-batching benchmarks: the binary TreeLSTM,
the child-sum TreeLSTM over ASTs and the tree decoder,
each written per example as DyNet's users write them, and batched (or not)
by DyNet's own autobatching.

DyNet picks its batching strategy once per process, when it is imported:
`load(strategy)` configures and imports it ("agenda" is DyNet's default
autobatching, "depth" its depth-ordered one). Each step can still turn
autobatching off (`autobatch=False`: the graph runs node by node).

Three things give silently wrong DyNet figures, and are avoided here: the
ParameterCollection is kept alive by the model object; parameters enter a
graph as `Parameters.expr(True)` (updatable) once per graph; and the
TreeLSTMs read no value before the batch's final forward (the decoder must
read one at every decision: that is its point)."""

import numpy as np

STRATEGIES = {"agenda": 1, "depth": 2}
_loaded = {}


def load(strategy="agenda"):
    """The dynet module, configured for `strategy` (one per process), or None
    when DyNet is not installed."""
    if strategy not in STRATEGIES:
        raise ValueError(f"DyNet autobatch strategy must be one of {sorted(STRATEGIES)}, not {strategy!r}")
    if _loaded:
        if _loaded["strategy"] != strategy:
            raise RuntimeError(f"DyNet was already loaded with the {_loaded['strategy']} strategy in this process")
        return _loaded["dy"]
    try:
        import dynet_config
    except ImportError:
        return None
    # DyNet cannot grow its memory pools while it autobatches: reserve enough for a batch of 256.
    dynet_config.set(mem="2048", random_seed=1, autobatch=STRATEGIES[strategy])
    import dynet as dy
    _loaded.update(strategy=strategy, dy=dy)
    return dy


class _Model:
    """A ParameterCollection with parameters copied from NumPy arrays, an SGD
    trainer without DyNet's default gradient clipping, and the two steps."""

    def __init__(self, dy, learning_rate):
        self.dy = dy
        self.pc = dy.ParameterCollection()
        self.trainer = dy.SimpleSGDTrainer(self.pc, learning_rate=learning_rate)
        self.trainer.set_clip_threshold(0.0)  # 0 turns clipping off: plain SGD, like the peers

    def param(self, array):
        p = self.pc.add_parameters(array.shape)
        p.set_value(np.ascontiguousarray(array, np.float32))
        return p

    def lookup(self, array):
        p = self.pc.add_lookup_parameters(array.shape)
        p.init_from_array(np.ascontiguousarray(array, np.float32))
        return p

    def new_graph(self, autobatch):
        self.dy.renew_cg(autobatching=autobatch)

    def infer(self, batch, autobatch=True):
        self.new_graph(autobatch)
        out = self.dy.concatenate_to_batch(self.outputs(batch)).npvalue()
        return out.T  # DyNet's batch axis is the last

    def train(self, batch, autobatch=True):
        self.new_graph(autobatch)
        loss = self.loss(batch)
        value = loss.value()  # the final forward
        loss.backward()
        self.trainer.update()
        return value


class BinaryTreeLSTM(_Model):
    """The binary TreeLSTM with the weights of bench/treelstm/model.py (DyNet multiplies
    column vectors: its matrices are the transposes). A tree is the
    bench.treelstm.data.Tree of post-ordered arrays."""

    def __init__(self, dy, weights, learning_rate=0.05):
        super().__init__(dy, learning_rate)
        w = weights
        self.hidden = w["W_out"].shape[0]
        self.E = self.lookup(w["embedding"])
        self.p = {k: self.param(w[k].T if k.startswith("W") else w[k]) for k in
                  ("W_leaf", "b_leaf", "W_node", "b_node", "W_out", "b_out")}

    def _exprs(self):
        return {k: p.expr(True) for k, p in self.p.items()}

    def root_h(self, tree, e):
        dy, H = self.dy, self.hidden
        states = []
        for k in range(tree.size):
            if tree.left[k] < 0:
                z = dy.affine_transform([e["b_leaf"], e["W_leaf"], dy.lookup(self.E, int(tree.token[k]))])
                i, o, u = (dy.pick_range(z, j * H, (j + 1) * H) for j in range(3))
                c = dy.cmult(dy.logistic(i), dy.tanh(u))
            else:
                c_l, h_l = states[tree.left[k]]
                c_r, h_r = states[tree.right[k]]
                z = dy.affine_transform([e["b_node"], e["W_node"], dy.concatenate([h_l, h_r])])
                i, f_l, f_r, o, u = (dy.pick_range(z, j * H, (j + 1) * H) for j in range(5))
                c = (dy.cmult(dy.logistic(i), dy.tanh(u)) + dy.cmult(dy.logistic(f_l), c_l)
                     + dy.cmult(dy.logistic(f_r), c_r))
            states.append((c, dy.cmult(dy.logistic(o), dy.tanh(c))))
        return states[-1][1]

    def outputs(self, trees):
        e = self._exprs()
        return [self.dy.affine_transform([e["b_out"], e["W_out"], self.root_h(t, e)]) for t in trees]

    def loss(self, trees):
        dy = self.dy
        losses = [dy.pickneglogsoftmax(y, int(t.label)) for y, t in zip(self.outputs(trees), trees)]
        return dy.esum(losses) / len(trees)

    def weights(self):
        out = {k: (p.as_array().T if k.startswith("W") else p.as_array()) for k, p in self.p.items()}
        out["embedding"] = self.E.as_array()
        return out


class ChildSumTreeLSTM(_Model):
    """The child-sum TreeLSTM: a node's x W + b from its type's embedding, the child sum through
    U_iou and a forget gate per child (gates i, o, u, f as in
    bench/child_sum_ast.py). A tree is a nested (kind, [subtrees])."""

    def __init__(self, dy, weights, learning_rate=0.01):
        super().__init__(dy, learning_rate)
        w = weights
        self.hidden = w["u_f"].shape[0]
        self.E = self.lookup(w["embedding"])
        self.p = {k: self.param(w[k].T if k in ("w", "u_iou", "u_f", "w_out") else w[k])
                  for k in ("w", "b", "u_iou", "u_f", "w_out", "b_out")}

    def root_h(self, tree, e):
        dy, H = self.dy, self.hidden

        def visit(node):
            kind, kids = node
            states = [visit(k) for k in kids]
            z = dy.affine_transform([e["b"], e["w"], dy.lookup(self.E, kind)])
            i, o, u, f_x = (dy.pick_range(z, j * H, (j + 1) * H) for j in range(4))
            if states:
                iou = e["u_iou"] * dy.esum([h for _, h in states])
                i, o, u = (a + dy.pick_range(iou, j * H, (j + 1) * H) for j, a in enumerate((i, o, u)))
            c = dy.cmult(dy.logistic(i), dy.tanh(u))
            if states:
                c = c + dy.esum([dy.cmult(dy.logistic(f_x + e["u_f"] * h_k), c_k) for c_k, h_k in states])
            return c, dy.cmult(dy.logistic(o), dy.tanh(c))

        return visit(tree)[1]

    def outputs(self, trees):
        e = {k: p.expr(True) for k, p in self.p.items()}
        return [self.dy.affine_transform([e["b_out"], e["w_out"], self.root_h(t, e)]) for t, _ in trees]

    def loss(self, trees):
        dy = self.dy
        losses = [dy.pickneglogsoftmax(y, label) for y, (_, label) in zip(self.outputs(trees), trees)]
        return dy.esum(losses) / len(trees)


class TreeDecoder(_Model):
    """The tree decoder, per example as DyNet must run it: every decision reads the
    probability's value, which forwards the graph built so far. An example
    is a root state (NumPy, [STATE])."""

    def __init__(self, dy, weights, max_depth, learning_rate):
        super().__init__(dy, learning_rate)
        self.state = weights["W_c"].shape[0]
        self.max_depth = max_depth
        self.p = {k: self.param(w.T if k.startswith(("W", "w")) else w) for k, w in weights.items()}

    def outputs(self, states):
        dy, S = self.dy, self.state
        e = {k: p.expr(True) for k, p in self.p.items()}

        def decode(s, depth):
            if depth < self.max_depth and dy.logistic(e["w_p"] * s + e["b_p"]).value() > 0.5:
                z = dy.tanh(dy.affine_transform([e["b_c"], e["W_c"], s]))
                return decode(dy.pick_range(z, 0, S), depth + 1) + decode(dy.pick_range(z, S, 2 * S), depth + 1)
            return s

        return [decode(dy.inputVector(s.tolist()), 0) for s in states]

    def loss(self, states):
        dy = self.dy
        squares = [dy.squared_norm(y) for y in self.outputs(states)]
        return dy.esum(squares) * (0.5 / (len(states) * self.state))

    def weights(self):
        return {k: (p.as_array().T if k.startswith(("W", "w")) else p.as_array()) for k, p in self.p.items()}
