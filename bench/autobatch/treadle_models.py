"""The three models of the automatic-batching benchmark written as a treadle user writes
them: plain recursive Python over one example, cells as `td.function`s,
batched across examples by `td.loom.autobatch`. Per-example states are rows
([1, n]), so a cell's matrix products are ordinary `td.matmul`s; an embedding
is `td.gather(E, token)` with a Python int (autobatch makes all of them one
gather), made a row inside the cell that reads it.

Training is a `td.GradientTape` around the autobatched call, then an SGD
step, as for any treadle model."""

import treadle as td


def available():
    """Whether this treadle has automatic batching."""
    return hasattr(td.loom, "autobatch")


def launch_counts(batched, examples):
    """Batched launches of one call on `examples`, summed over its rounds,
    under depth order, an agenda and treadle's default, with the lower bound
    (the longest chain of dependent calls in each round) and the number of
    rounds (one per wave of values read mid-computation)."""
    batched.count_launches = True
    try:
        batched(examples)
    finally:
        batched.count_launches = False
    keys = ("nodes", "lower_bound", "depth", "agenda", "default")
    total = {k: sum(r.get(k, 0) for r in batched.last_stats) for k in keys}
    total["rounds"] = len(batched.last_stats)
    return total


def _variables(weights):
    return {k: td.Variable(v, name=k) for k, v in weights.items()}


class _Classifier:
    """A tree classifier: `root_logits(example)` per example, batched by
    autobatch; inference returns [batch, classes] logits. A training step
    records the examples' work (their Python runs) and hands it to one
    td.function (traced once) that runs it under a tape and takes the SGD
    step."""

    def __init__(self, learning_rate):
        self.batched = td.loom.autobatch(self.root_logits)
        self.optimizer = td.optimizers.SGD(learning_rate)
        trainable, optimizer = list(self.vars.values()), self.optimizer

        @td.function
        def train_step(recording, labels):
            with td.GradientTape() as tape:
                logits = td.reshape(recording.outputs(), [td.size(labels), -1])
                loss = td.reduce_mean(td.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
            grads = tape.gradient(loss, trainable)
            optimizer.apply_gradients(zip(grads, trainable))
            return loss

        self.train_step = train_step

    def logits(self, examples):
        out = self.batched(examples)  # [batch, 1, classes]: one row per example
        return td.reshape(out, [len(examples), -1])

    def infer(self, examples):
        return self.logits(examples).numpy()

    def train(self, examples, labels):
        return float(self.train_step(self.batched.record(examples), labels))


class ChildSumTreeLSTM(_Classifier):
    """The child-sum TreeLSTM; examples are bench.autobatch.child_sum nested (kind, [subtrees]).
    One cell per node takes its children's states as Python lists: it is
    traced once per number of children, and each of those traces is a
    batched op of its own."""

    def __init__(self, weights, learning_rate=0.01):
        v = self.vars = _variables(weights)

        @td.function
        def cell(x, child_c, child_h):
            i, o, u, f_x = td.split(td.matmul(td.reshape(x, [1, -1]), v["w"]) + v["b"], 4, axis=1)
            if child_h:
                i_h, o_h, u_h = td.split(td.matmul(td.add_n(child_h), v["u_iou"]), 3, axis=1)
                i, o, u = i + i_h, o + o_h, u + u_h
            c = td.sigmoid(i) * td.tanh(u)
            for c_k, h_k in zip(child_c, child_h):
                c = c + td.sigmoid(f_x + td.matmul(h_k, v["u_f"])) * c_k
            return c, td.sigmoid(o) * td.tanh(c)

        def visit(tree):
            kind, kids = tree
            states = [visit(k) for k in kids]
            return cell(td.gather(v["embedding"], kind), [c for c, _ in states], [h for _, h in states])

        self.visit = visit
        super().__init__(learning_rate)

    def root_logits(self, example):
        tree, _ = example
        _, h = self.visit(tree)
        return td.matmul(h, self.vars["w_out"]) + self.vars["b_out"]


class TreeDecoder:
    """The tree decoder. Each node reads its expansion probability (`float(p)`): autobatch
    suspends that example until the batched work it waits for has run. An
    example is a root state [STATE] (NumPy); the output is [batch, STATE].

    `order="depth_first"` is the plain recursion: an example reads one
    probability at a time, so it needs a round per node of its tree (the
    right subtree waits for the left one). `order="by_level"` is the same
    decoder written level by level within the example: it asks for the
    probabilities of all its nodes at one depth before reading any, so an
    example needs a round per depth."""

    def __init__(self, weights, max_depth, learning_rate, order="depth_first"):
        v = self.vars = _variables(weights)

        @td.function
        def probability(s):
            return td.reshape(td.sigmoid(td.matmul(s, v["w_p"]) + v["b_p"]), [])

        @td.function
        def expand(s):
            return td.split(td.tanh(td.matmul(s, v["W_c"]) + v["b_c"]), 2, axis=1)

        def depth_first(s, depth=0):
            if depth < max_depth and float(probability(s)) > 0.5:
                left, right = expand(s)
                return depth_first(left, depth + 1) + depth_first(right, depth + 1)
            return s

        def by_level(root):
            frontier, leaves = [root], []
            for depth in range(max_depth + 1):
                if depth == max_depth:
                    leaves += frontier
                    break
                probabilities = [probability(s) for s in frontier]  # all asked for, then read
                grown = []
                for s, p in zip(frontier, probabilities):
                    (grown if float(p) > 0.5 else leaves).append(s)
                frontier = [child for s in grown for child in expand(s)]
            return td.add_n(leaves)

        if order not in ("depth_first", "by_level"):
            raise ValueError(f"order must be 'depth_first' or 'by_level', not {order!r}")
        decode = depth_first if order == "depth_first" else by_level
        self.batched = td.loom.autobatch(lambda root: decode(td.constant(root[None])))
        self.optimizer = td.optimizers.SGD(learning_rate)

    def outputs(self, states):
        return td.reshape(self.batched(list(states)), [len(states), -1])

    def infer(self, states):
        return self.outputs(states).numpy()

    def train(self, states):
        trainable = [self.vars[k] for k in ("W_c", "b_c")]  # the decisions carry no gradient
        with td.GradientTape() as tape:
            loss = 0.5 * td.reduce_mean(td.square(self.outputs(states)))
        grads = tape.gradient(loss, trainable)
        self.optimizer.apply_gradients(zip(grads, trainable))
        return float(loss)

    def weights(self):
        return {k: var.numpy() for k, var in self.vars.items()}
