"""The binary TreeLSTM (Tai et al. 2015 sizes, on the SST-like trees) written as a plain per-example
recursion and batched by td.loom.autobatch, timed against treadle's
hand-woven bulk Loom in ONE process, in alternating rounds (the per-round
ratio is the figure to trust on a shared machine), inference and training,
with the recording cost per cell call.

    python bench/autobatch_treelstm.py --batch 256 --threads 1
    python bench/autobatch_treelstm.py --cells batched   # cells given their whole-batch function

Cells run through td.vectorized_map (`--cells vectorized_map`, the default:
what users get). While td.vectorized_map runs as map_fn, `--cells batched`
gives each cell its whole-batch function instead, which times everything
else autobatch does (recording, weaving, the loom, gradients).

Other benchmarks reuse `AutobatchedTreeLSTM(weights).infer(trees)` / `.train(trees, labels)`.
"""

import argparse
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

import common  # noqa: E402


class AutobatchedTreeLSTM:
    """The TreeLSTM as a user writes it: two td.function cells and a
    recursion over one tree (bench.treelstm.data.Tree), batched by
    td.loom.autobatch; the root classifier and loss outside."""

    def __init__(self, weights, learning_rate=0.05, batched_cells=False):
        import treadle as td
        from bench.treelstm.model import EMBED, HIDDEN
        self.td = td
        self.vars = v = {k: td.Variable(w, name=k) for k, w in weights.items()}
        self.trainable = [v[k] for k in ("embedding", "W_leaf", "b_leaf", "W_node", "b_node", "W_out", "b_out")]
        self.optimizer = td.optimizers.SGD(learning_rate)

        def leaf_batch(x):
            i, o, u = td.split(td.matmul(x, v["W_leaf"]) + v["b_leaf"], 3, axis=-1)
            c = td.sigmoid(i) * td.tanh(u)
            return c, td.sigmoid(o) * td.tanh(c)

        def node_batch(c_l, h_l, c_r, h_r):
            z = td.matmul(td.concat([h_l, h_r], -1), v["W_node"]) + v["b_node"]
            i, f_l, f_r, o, u = td.split(z, 5, axis=-1)
            c = td.sigmoid(i) * td.tanh(u) + td.sigmoid(f_l) * c_l + td.sigmoid(f_r) * c_r
            return c, td.sigmoid(o) * td.tanh(c)

        @td.function
        def leaf(x):  # x: one embedding row [EMBED]
            c, h = leaf_batch(td.reshape(x, [1, EMBED]))
            return td.reshape(c, [HIDDEN]), td.reshape(h, [HIDDEN])

        @td.function
        def node(c_l, h_l, c_r, h_r):  # one node's children's states, each [HIDDEN]
            c, h = node_batch(*[td.reshape(t, [1, HIDDEN]) for t in (c_l, h_l, c_r, h_r)])
            return td.reshape(c, [HIDDEN]), td.reshape(h, [HIDDEN])

        if batched_cells:
            leaf._autobatch_batched = leaf_batch
            node._autobatch_batched = node_batch
        embedding = v["embedding"]

        def root_state(tree):
            left, right, token = tree.left, tree.right, tree.token

            def visit(k):
                if left[k] < 0:
                    return leaf(td.gather(embedding, int(token[k])))
                c_l, h_l = visit(left[k])
                c_r, h_r = visit(right[k])
                return node(c_l, h_l, c_r, h_r)
            return visit(tree.size - 1)[1]

        self.root_state = td.loom.autobatch(root_state)

        out_w, out_b, trainable, optimizer = v["W_out"], v["b_out"], self.trainable, self.optimizer

        @td.function
        def train_step(recording, labels):
            # The recorded work arrives as an argument: one trace for every batch.
            with td.GradientTape() as tape:
                logits = td.matmul(recording.outputs(), out_w) + out_b
                loss = td.reduce_mean(td.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
            grads = tape.gradient(loss, trainable)
            optimizer.apply_gradients(zip(grads, trainable))
            return loss

        self.train_step = train_step

    def logits(self, trees):
        h = self.root_state(trees)
        return self.td.matmul(h, self.vars["W_out"]) + self.vars["b_out"]

    def infer(self, trees):
        return self.logits(trees).numpy()

    def train(self, trees, labels):
        """One SGD step: the per-example Python records, a td.function does the rest."""
        td = self.td
        return float(self.train_step(self.root_state.record(trees), td.constant(labels, dtype=td.int32)))

    def train_eagerly(self, trees, labels):
        """The same step run eagerly under a GradientTape (what a function reading values needs)."""
        td = self.td
        with td.GradientTape() as tape:
            logits = self.logits(trees)
            loss = td.reduce_mean(td.nn.sparse_softmax_cross_entropy_with_logits(
                labels=td.constant(labels, dtype=td.int32), logits=logits))
        grads = tape.gradient(loss, self.trainable)
        self.optimizer.apply_gradients(zip(grads, self.trainable))
        return float(loss)

    def launch_report(self, trees):
        """Batched launches of one step over `trees` under depth order,
        an agenda and treadle's default, against the lower bound (the
        longest chain of dependent cell calls): td.loom.autobatch.launch_counts."""
        self.root_state.count_launches = True
        try:
            self.root_state(trees)
        finally:
            self.root_state.count_launches = False
        stats = self.root_state.last_stats[0]
        return {k: stats[k] for k in ("nodes", "lower_bound", "depth", "agenda", "default")}

    def recording_us_per_cell_call(self):
        """Microseconds of recording (the examples' Python, cell calls
        recorded) per cell call in the last call."""
        calls = sum(s["nodes"] for s in self.root_state.last_stats)
        return 1e6 * self.root_state.last_recording_seconds / calls


def _feed(trees, size):
    i = 0
    while True:
        if i + size > len(trees):
            i = 0
        yield trees[i:i + size]
        i += size


def measure(steps, trees, batch, rounds, steps_per_round):
    """{name: [trees/s per round]}, implementations alternating each round."""
    names = list(steps)
    feeds = {name: _feed(trees, batch) for name in names}
    for name in names:
        steps[name](next(feeds[name]))  # warm-up: tracing, the looms
    per_round = {name: [] for name in names}
    for r in range(rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            t0, done = time.perf_counter(), 0
            for _ in range(steps_per_round):
                b = next(feeds[name])
                steps[name](b)
                done += len(b)
            per_round[name].append(done / (time.perf_counter() - t0))
    return per_round


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=2, help="batches per implementation per round")
    parser.add_argument("--limit", type=int, default=2048, help="use only the first N trees")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--modes", default="inference,training")
    parser.add_argument("--cells", choices=["vectorized_map", "batched"], default="vectorized_map")
    args = parser.parse_args()
    common.limit_threads(args.threads)
    from bench.treelstm import data, model
    from bench.treelstm.treadle_impl import TreeLSTM
    trees = data.load_trees(limit=args.limit)
    weights = model.initial_weights()
    woven = TreeLSTM(weights)
    auto = AutobatchedTreeLSTM(weights, batched_cells=args.cells == "batched")
    steps = {
        ("hand-woven", "inference"): lambda b: woven.infer(woven.weave(b)).numpy(),
        ("hand-woven", "training"): lambda b: float(woven.train(woven.weave(b), [t.label for t in b])[0]),
        ("autobatch", "inference"): auto.infer,
        ("autobatch", "training"): lambda b: auto.train(b, [t.label for t in b]),
    }
    print(f"binary TreeLSTM, batch {args.batch}, {args.threads} thread(s), cells: {args.cells}; "
          f"load average {os.getloadavg()[0]:.1f} (figures on a loaded machine are loaded)")
    for mode in args.modes.split(","):
        mine = {name: fn for (name, m), fn in steps.items() if m == mode}
        per_round = measure(mine, trees, args.batch, args.rounds, args.steps)
        ratios = [a / w for a, w in zip(per_round["autobatch"], per_round["hand-woven"])]
        print(f"{mode}: hand-woven {statistics.median(per_round['hand-woven']):.0f} trees/s, autobatch "
              f"{statistics.median(per_round['autobatch']):.0f} trees/s, autobatch / hand-woven (median of "
              f"per-round ratios) {statistics.median(ratios):.3f}")
    batch = trees[:args.batch]
    report_recording(auto, batch, args.batch)
    print("batched launches per step:", auto.launch_report(batch))


def report_recording(auto, batch, size, calls=7):
    """Prints what recording costs per cell call and its share of an
    inference step, medians over `calls` inference calls on `batch`: the
    examples' Python as recorded, the same recursion calling plain Python
    functions (the machine's yardstick: what the user's own code costs), and
    the difference (what recording adds per call)."""
    parts = []
    for _ in range(calls):
        auto.infer(batch)
        stats = auto.root_state.last_stats
        parts.append((auto.root_state.last_recording_seconds, sum(r["plan_seconds"] for r in stats),
                      sum(r["run_seconds"] for r in stats), auto.recording_us_per_cell_call()))
    record, plan, run, per_call = (statistics.median(p[k] for p in parts) for k in range(4))
    plain = statistics.median(python_baseline_us(batch) for _ in range(calls))
    total = record + plan + run
    print(f"recording: {per_call:.2f} µs per cell call ({record * 1e3:.1f} ms for {size} trees); the same "
          f"recursion calling plain Python functions: {plain:.2f} µs per call (the machine's yardstick); "
          f"recording adds {per_call - plain:.2f} µs per cell call (medians of {calls} calls)")
    print(f"an inference step's autobatch parts: recording {record * 1e3:.0f} ms ({100 * record / total:.0f}%), "
          f"planning and weaving {plan * 1e3:.0f} ms ({100 * plan / total:.0f}%), the loom run {run * 1e3:.0f} ms "
          f"({100 * run / total:.0f}%)")


def python_baseline_us(trees):
    """µs per call of the same recursion calling two plain Python functions."""
    def leaf(x):
        return x, x

    def node(c_l, h_l, c_r, h_r):
        return c_l, h_r

    def root(tree):
        left, right, token = tree.left, tree.right, tree.token

        def visit(k):
            if left[k] < 0:
                return leaf(int(token[k]))
            c_l, h_l = visit(left[k])
            c_r, h_r = visit(right[k])
            return node(c_l, h_l, c_r, h_r)
        return visit(tree.size - 1)

    t0 = time.perf_counter()
    for t in trees:
        root(t)
    return 1e6 * (time.perf_counter() - t0) / sum(t.size for t in trees)


if __name__ == "__main__":
    main()
