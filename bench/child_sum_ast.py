"""A child-sum TreeLSTM (Tai et al. 2015, section 3.1) over the Python ASTs of
the standard library: node-type embeddings of 300, hidden 150, 5 classes.

The data is made here from the running interpreter's own sources: the
functions of the standard library's modules (each an AST whose nodes are
typed by their AST class), in a fixed order. Every tree's root state goes
through a linear layer to 5 classes (the label is a fixed function of the
function's name, so training has a target).

Both sides hoist the input projection: a node's x W + b, x being the
embedding of its type, is a row of the table E W + b (vocab x 4 hidden),
gathered by type (`--no-table` multiplies every node's embedding instead).
Both give leaves their own step, with no child sum to multiply by U_iou
(`--one-op` runs one node op for every node, leaves included, on both sides).

Peers, each at batch 256, inference and training (SGD step):
- treadle, woven per node from Python (one `w.node(kind, [c...], [h...])` per
  AST node: ragged arguments, leaves included);
- treadle, woven in bulk (`Weaver.weave`, CSR arguments, one call per batch);
- PyTorch, batched by height (all nodes of one height in one step; the
  children's states gathered from their own height's tensors by index, their
  sums by index_add), when installed;
- the GEMMs alone of each (the same matrix multiplies, nothing else): the
  ceiling of a treadle whose every other cost were zero.

    python bench/child_sum_ast.py [--trees 598] [--batch 256] [--rounds 7] [--steps 2] [--threads 1] [--no-table] [--one-op]

Every figure is the median of interleaved rounds (each round runs every
implementation on the same batches, the order rotating), and the ratios to
PyTorch are medians of per-round ratios: same-time ratios on a shared machine.

Writes bench/results/child_sum_ast.json and .md; figures are trees per
second and the weaving's share of a step.
"""

import argparse
import ast
import os
import pathlib
import statistics
import sys
import sysconfig
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

EMBED, HIDDEN, CLASSES = 300, 150, 5
PER_NODE, BULK, TORCH = "treadle, per-node Python weaving", "treadle, bulk weaving", "PyTorch by height"
GEMM_TD, GEMM_TORCH = "treadle's GEMMs alone (td.matmul)", "PyTorch's GEMMs alone (torch.mm)"


# ---------------------------------------------------------------- data

def stdlib_functions(limit, max_nodes=400):
    """(node types, children lists, label) of the stdlib's functions, in a fixed order."""
    root = pathlib.Path(sysconfig.get_paths()["stdlib"])
    types = {}
    trees = []
    for path in sorted(root.glob("*.py")):
        try:
            module = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError, ValueError):
            continue
        for fn in ast.walk(module):
            if not isinstance(fn, ast.FunctionDef):
                continue
            kinds, kids = [], []
            _postorder(fn, types, kinds, kids)
            if len(kinds) > max_nodes:
                continue
            trees.append((kinds, kids, zlib.crc32(fn.name.encode()) % CLASSES))
            if len(trees) == limit:
                return trees, len(types)
    return trees, len(types)


def _postorder(node, types, kinds, kids):
    """Numbers the tree's nodes children first (by position: AST objects such
    as ast.Load() are shared between parents); returns node's number."""
    children = [_postorder(c, types, kinds, kids) for c in ast.iter_child_nodes(node)]
    kinds.append(types.setdefault(type(node).__name__, len(types)))
    kids.append(children)
    return len(kinds) - 1


def node_heights(kids):
    """Each node's height (a leaf's is 1) in a post-ordered tree, whose
    children come before their parent."""
    h = [0] * len(kids)
    for i, k in enumerate(kids):
        h[i] = 1 + max((h[j] for j in k), default=0)
    return h


def describe(trees):
    import numpy as np

    return {"trees": len(trees), "nodes": int(sum(len(t[0]) for t in trees)),
            "max_children": int(max(max(len(k) for k in t[1]) for t in trees)),
            "max_height": int(max(node_heights(t[1])[-1] for t in trees)),
            "mean_nodes": float(np.mean([len(t[0]) for t in trees]))}


# ---------------------------------------------------------------- treadle

class TreadleModel:
    """`table=True` hoists the input projection: a node's `x W + b`, with x
    the embedding of its type, is row `type` of the table `E W + b` (vocab x
    4 hidden), so each depth gathers rows of that table instead of
    multiplying every node's embedding by W. Same function, same gradients;
    the peer does the same. The table is made inside the node op, once per
    depth (a loom's batch inputs are fixed tensors, so it cannot be made once
    per step).

    `leaf_op=True` gives leaves an op of their own (x only): the one node op
    would multiply their all-zero child sums by U_iou, 29% of a forward's
    GEMM work on these trees. The peer skips the same work."""

    def __init__(self, vocab, seed=0, table=True, leaf_op=True):
        import numpy as np
        import treadle as td
        self.td = td
        rng = np.random.default_rng(seed)
        f = np.float32
        self.embedding = td.Variable(rng.normal(0, 0.1, (vocab, EMBED)).astype(f))
        self.w = td.Variable(rng.normal(0, 0.05, (EMBED, 4 * HIDDEN)).astype(f))
        self.u_iou = td.Variable(rng.normal(0, 0.05, (HIDDEN, 3 * HIDDEN)).astype(f))
        self.u_f = td.Variable(rng.normal(0, 0.05, (HIDDEN, HIDDEN)).astype(f))
        self.b = td.Variable(np.zeros(4 * HIDDEN, f))
        self.w_out = td.Variable(rng.normal(0, 0.05, (HIDDEN, CLASSES)).astype(f))
        self.b_out = td.Variable(np.zeros(CLASSES, f))
        self.table = table
        self.leaf_op = leaf_op
        # With the table, a node's batch input is its type (row of the table).
        self.x_ts = td.loom.TypeShape("int32", (), "kind") if table else td.loom.TypeShape("float32", (EMBED,), "x")
        self.c_ts = td.loom.TypeShape("float32", (HIDDEN,), "c")
        self.h_ts = td.loom.TypeShape("float32", (HIDDEN,), "h")
        model = self

        class Node(td.loom.LoomOp):
            def __init__(self):
                super().__init__([model.x_ts, td.loom.Ragged(model.c_ts), td.loom.Ragged(model.h_ts)],
                                 [model.c_ts, model.h_ts])

            def instantiate_batch(self, inputs):
                return model.cell(*inputs)

        class Leaf(td.loom.LoomOp):
            def __init__(self):
                super().__init__([model.x_ts], [model.c_ts, model.h_ts])

            def instantiate_batch(self, inputs):
                return model.leaf_cell(*inputs)

        inputs = td.constant(np.arange(vocab, dtype=np.int32)) if table else self.embedding
        ops = {"node": Node(), "leaf": Leaf()} if leaf_op else {"node": Node()}
        self.op_names = list(ops)
        self.loom = td.loom.Loom(named_ops=ops, batch_inputs={self.x_ts: inputs})
        self.optimizer = td.optimizers.SGD(0.01)

    def variables(self):
        return [self.embedding, self.w, self.u_iou, self.u_f, self.b, self.w_out, self.b_out]

    def gates(self, x, count):
        """The first `count` of x W + b's four gates (i, o, u, f)."""
        td = self.td
        if self.table:
            # Split the small table, not the gathered rows: gathers of [n, H]
            # copy what one gather of [n, 4H] does, and no split copies [n, 4H]
            # again (PyTorch's chunk is a view; treadle's split copies).
            tables = td.split(td.matmul(self.embedding, self.w) + self.b, 4, axis=1)
            return [td.gather(t, x) for t in tables[:count]]
        return td.split(td.matmul(x, self.w) + self.b, 4, axis=1)[:count]

    def leaf_cell(self, x):
        td = self.td
        i, o, u = self.gates(x, 3)
        c = td.sigmoid(i) * td.tanh(u)
        return [c, td.sigmoid(o) * td.tanh(c)]

    def cell(self, x, c_kids, h_kids):
        td = self.td
        i, o, u, f_x = self.gates(x, 4)
        i_h, o_h, u_h = td.split(td.matmul(td.reduce_sum(h_kids, axis=1), self.u_iou), 3, axis=1)
        f = td.sigmoid(td.repeat(f_x, h_kids.row_lengths(), axis=0) + td.matmul(h_kids.values, self.u_f))
        kept = td.reduce_sum(h_kids.with_values(f * c_kids.values), axis=1)  # each node's sum of f * c
        c = td.sigmoid(i + i_h) * td.tanh(u + u_h) + kept
        return [c, td.sigmoid(o + o_h) * td.tanh(c)]

    # -- weaving
    def weave_per_node(self, batch):
        w = self.loom.make_weaver()
        node, batch_input, x_ts = w.node, w.batch_input, self.x_ts
        leaf = w.leaf if self.leaf_op else lambda x: node(x, [], [])
        for kinds, kids, _ in batch:
            cs, hs = [], []
            for k, children in zip(kinds, kids):
                if children:
                    c, h = node(batch_input(x_ts, k), [cs[j] for j in children], [hs[j] for j in children])
                else:
                    c, h = leaf(batch_input(x_ts, k))
                cs.append(c)
                hs.append(h)
            w.add_output(hs[-1])
        return w

    def weave_bulk(self, arrays):
        w = self.loom.make_weaver()
        w.weave(self.op_names, *arrays)
        return w

    def bulk_arrays(self, batch):
        """Weaver.weave's description of a batch (made with NumPy, outside the timed step)."""
        import numpy as np
        from treadle.loom import Weaver
        node_op, splits, arg_input, arg_source, arg_value, arg_output, roots = [], [0], [], [], [], [], []
        base = 0
        for kinds, kids, _ in batch:
            for k, children in zip(kinds, kids):
                node_op.append(1 if self.leaf_op and not children else 0)
                n = len(children)
                arg_input += [0] + [1] * n + [2] * n
                arg_source += [Weaver.BATCH_INPUT] + [Weaver.NODE] * (2 * n)
                arg_value += [k] + [base + j for j in children] * 2
                arg_output += [0] + [0] * n + [1] * n
                splits.append(len(arg_input))
            base += len(kinds)
            roots.append(base - 1)
        i32 = np.int32
        return (np.array(node_op, i32), np.array(splits, np.int64), np.array(arg_input, i32),
                np.array(arg_source, i32), np.array(arg_value, np.int64), np.array(arg_output, i32),
                np.array(roots, np.int64), np.ones(len(roots), i32))

    # -- steps
    def logits(self, weaver):
        td = self.td
        return td.matmul(self.loom.output_tensor(self.h_ts, weaver), self.w_out) + self.b_out

    def infer(self, weaver):
        return self.logits(weaver).numpy()

    def train(self, weaver, labels):
        td = self.td
        with td.GradientTape() as tape:
            loss = td.reduce_mean(td.nn.sparse_softmax_cross_entropy_with_logits(labels, self.logits(weaver)))
        grads = tape.gradient(loss, self.variables())
        self.optimizer.apply_gradients(zip(grads, self.variables()))
        return float(loss)


def copy_bytes(loom, weaver):
    """The bytes the loom runtime (its loop mode) copies in one forward run of
    the schedule, read off its WeaverMessage: the gathers of each op's
    arguments (every wired argument row of an op that is not a pass-through)
    and the copies of the outputs. Two kinds of rows are not copied, and are
    reported for comparison with a runtime that copies them: depth-0 rows
    (read where they lie, in the batch inputs, named tensors and constants)
    and the pass-throughs' (skipped: a call reads the row they would lift).
    A backward run scatter-adds as many bytes as the argument gathers."""
    import numpy as np
    from treadle import loom_pb2
    msg = loom_pb2.WeaverMessage.FromString(weaver.serialize())
    spec = loom._metadata
    row_bytes = [int(np.prod(ts.shape, dtype=np.int64)) * np.dtype(t.dtype.as_numpy_dtype).itemsize
                 for ts, t in zip(spec.type_shapes, loom.type_shapes)]
    ts_of = np.array(msg.result_type_shape)
    depth = np.array(msg.result_depth)
    sizes = np.array(row_bytes)
    copied = {"op arguments": 0}
    not_copied = {"depth-0 rows": int(sizes[ts_of[depth == 0]].sum()), "pass-throughs": 0}
    for wiring in msg.wiring:
        ts = spec.ops[wiring.op].input_type_shapes[wiring.arg]
        n = len(wiring.results) * row_bytes[ts]
        if spec.ops[wiring.op].pass_through:
            not_copied["pass-throughs"] += n
        else:
            copied["op arguments"] += n
    copied["outputs"] = int(sizes[ts_of[np.array(msg.outputs, dtype=np.int64)]].sum()) if len(msg.outputs) else 0
    return copied, not_copied


# ---------------------------------------------------------------- PyTorch, batched by height

class TorchByHeight:
    """Batched by height: all nodes of one height in one step. The children's
    states are gathered from their own height's tensors (one index_select per
    source height; the edges are grouped by the child's height when planning)
    and summed with index_add, so a step copies each state once more, not the
    whole state so far at every height. `table=True` hoists the input
    projection as TreadleModel does, once per step; `leaf_op=True` skips the
    GEMMs of leaves' empty child sums, as TreadleModel's leaf op does."""

    def __init__(self, torch, vocab, seed=0, table=True, leaf_op=True):
        self.torch = torch
        self.table = table
        self.leaf_op = leaf_op
        self.leaf_op = leaf_op
        torch.manual_seed(seed)
        nn = torch.nn
        self.embedding = nn.Embedding(vocab, EMBED)
        self.w = nn.Linear(EMBED, 4 * HIDDEN)
        self.u_iou = nn.Linear(HIDDEN, 3 * HIDDEN, bias=False)
        self.u_f = nn.Linear(HIDDEN, HIDDEN, bias=False)
        self.out = nn.Linear(HIDDEN, CLASSES)
        self.params = [p for m in (self.embedding, self.w, self.u_iou, self.u_f, self.out) for p in m.parameters()]
        self.optimizer = torch.optim.SGD(self.params, lr=0.01)

    def plan(self, batch):
        """Per height (from 1): the nodes' types; the children's rows, grouped
        by the children's height, as [(height index, rows in that height)];
        the parent (row in this height) of each of those children, in the same
        order; the number of nodes. And the roots as (height index, row).
        Made outside the timed step."""
        import numpy as np
        torch = self.torch
        heights, kinds_all, kids_all, roots = [], [], [], []
        base = 0
        for kinds, kids, _ in batch:
            heights += node_heights(kids)
            kinds_all += kinds
            kids_all += [[base + j for j in k] for k in kids]
            base += len(kinds)
            roots.append(base - 1)
        heights = np.array(heights)
        kinds_all = np.array(kinds_all)
        row = np.empty(len(heights), np.int64)  # a node's row within its height
        by_height = [np.flatnonzero(heights == hgt) for hgt in range(1, heights.max() + 1)]
        for nodes in by_height:
            row[nodes] = np.arange(len(nodes))
        levels = []
        for nodes in by_height:
            edges = [(heights[c], row[c], p) for p, n in enumerate(nodes) for c in kids_all[n]]
            edges.sort(key=lambda e: e[0])  # stable: grouped by the child's height
            sources = []
            for src in sorted({e[0] for e in edges}):
                rows = [r for hh, r, _ in edges if hh == src]
                sources.append((int(src) - 1, torch.tensor(rows, dtype=torch.long)))
            parent = torch.tensor([p for _, _, p in edges], dtype=torch.long)
            levels.append((torch.tensor(kinds_all[nodes]), sources, parent, len(nodes)))
        root_groups = {}
        for k, r in enumerate(roots):
            root_groups.setdefault(int(heights[r]) - 1, []).append((k, int(row[r])))
        order = [k for g in root_groups.values() for k, _ in g]
        inverse = torch.tensor(np.argsort(order), dtype=torch.long)
        root_sources = [(src, torch.tensor([r for _, r in g], dtype=torch.long)) for src, g in root_groups.items()]
        return levels, root_sources, inverse

    def forward(self, plan):
        torch = self.torch
        levels, root_sources, inverse = plan
        table = self.w(self.embedding.weight) if self.table else None
        cs, hs = [], []
        for kinds, sources, parent, n in levels:
            projected = table.index_select(0, kinds) if self.table else self.w(self.embedding(kinds))
            i, o, u, f_x = projected.chunk(4, dim=1)
            if sources:
                h_kids = torch.cat([hs[src].index_select(0, rows) for src, rows in sources])
                c_kids = torch.cat([cs[src].index_select(0, rows) for src, rows in sources])
            elif self.leaf_op:  # all leaves (height 1): no children, no U_iou or U_f
                c = torch.sigmoid(i) * torch.tanh(u)
                cs.append(c)
                hs.append(torch.sigmoid(o) * torch.tanh(c))
                continue
            else:  # all leaves, run as treadle's one op runs them
                h_kids = c_kids = torch.zeros(0, HIDDEN)
            h_sum = torch.zeros(n, HIDDEN).index_add(0, parent, h_kids)
            i_h, o_h, u_h = self.u_iou(h_sum).chunk(3, dim=1)
            f = torch.sigmoid(f_x.index_select(0, parent) + self.u_f(h_kids))
            kept = torch.zeros(n, HIDDEN).index_add(0, parent, f * c_kids)
            c = torch.sigmoid(i + i_h) * torch.tanh(u + u_h) + kept
            cs.append(c)
            hs.append(torch.sigmoid(o + o_h) * torch.tanh(c))
        roots = torch.cat([hs[src].index_select(0, rows) for src, rows in root_sources]).index_select(0, inverse)
        return self.out(roots)

    def infer(self, plan):
        with self.torch.no_grad():
            return self.forward(plan).numpy()

    def train(self, plan, labels):
        self.optimizer.zero_grad()
        loss = self.torch.nn.functional.cross_entropy(self.forward(plan), labels)
        loss.backward()
        self.optimizer.step()
        return float(loss.detach())


# ---------------------------------------------------------------- the GEMM-only floor

def gemm_shapes(batch, vocab, table, per_depth_table, leaf_op):
    """The matrix multiplies (m, k, n, transpose_a, transpose_b) of one step on
    `batch`, forward and (for training) backward, as both implementations do
    them: per height, U_iou on the nodes' child sums and U_f on their
    children's rows; the input projection (per node, or the vocab table: once
    per step for PyTorch, once per depth for treadle's loom); the output layer.
    The backward of y = a b is a' = y' b^T and b' = a^T y'."""
    heights, kids_all = [], []
    for _, kids, _ in batch:
        heights += node_heights(kids)
        kids_all += kids
    levels = max(heights)
    nodes = [0] * levels
    children = [0] * levels
    for h, k in zip(heights, kids_all):
        nodes[h - 1] += 1
        children[h - 1] += len(k)
    forward = []
    for n, m in zip(nodes, children):
        if m or not leaf_op:  # a leaf op has no child sum to multiply
            forward.append((n, HIDDEN, 3 * HIDDEN))
        if m:
            forward.append((m, HIDDEN, HIDDEN))
        if not table:
            forward.append((n, EMBED, 4 * HIDDEN))
    if table:
        forward += [(vocab, EMBED, 4 * HIDDEN)] * (levels if per_depth_table else 1)
    forward.append((len(batch), HIDDEN, CLASSES))
    fwd = [(m, k, n, False, False) for m, k, n in forward]
    bwd = []
    for m, k, n in forward:
        bwd.append((m, n, k, False, True))   # a' = y' b^T: [m, n] x [n, k]
        bwd.append((k, m, n, True, False))   # b' = a^T y': [k, m] x [m, n]
    return fwd, bwd


def gemm_steps(td, torch, batches, vocab, table, leaf_op):
    """{mode: {name: step(k)}}: the GEMMs alone of a step on batch k, on
    operands made beforehand, timed in the same interleaved rounds as the
    steps: treadle's list with td.matmul (OpenBLAS), PyTorch's with torch.mm
    (its BLAS). A step's time over treadle's GEMM time is the speed-up that a
    treadle doing nothing but its GEMMs would reach: the ceiling."""
    import numpy as np
    rng = np.random.default_rng(0)

    def arrays(m, k, n, ta, tb):
        a = rng.standard_normal((k, m) if ta else (m, k)).astype(np.float32)
        b = rng.standard_normal((n, k) if tb else (k, n)).astype(np.float32)
        return a, b, ta, tb

    def runner(operands, per_depth_table, training, matmul):
        lists = []
        for batch in batches:
            fwd, bwd = gemm_shapes(batch, vocab, table, per_depth_table, leaf_op)
            lists.append([operands(*arrays(*shape)) for shape in fwd + (bwd if training else [])])
        return lambda k: [matmul(a, b, ta, tb) for a, b, ta, tb in lists[k]]

    out = {}
    for mode in ("inference", "training"):
        training = mode == "training"
        out[mode] = {GEMM_TD: runner(lambda a, b, ta, tb: (td.constant(a), td.constant(b), ta, tb), True, training,
                                     lambda a, b, ta, tb: td.matmul(a, b, transpose_a=ta, transpose_b=tb))}
        if torch is not None:
            out[mode][GEMM_TORCH] = runner(
                lambda a, b, ta, tb: (torch.from_numpy(a), torch.from_numpy(b), ta, tb), False, training,
                lambda a, b, ta, tb: torch.mm(a.t() if ta else a, b.t() if tb else b))
    return out


# ---------------------------------------------------------------- measuring

def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trees", type=int, default=598)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--steps", type=int, default=2, help="batches per implementation per round")
    # One thread by default: on a shared (oversubscribed) machine PyTorch's
    # OpenMP threads spin and slow it tenfold, which would flatter treadle.
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--no-table", action="store_true",
                        help="multiply each node's embedding by W (do not hoist the input projection into a table)")
    parser.add_argument("--one-op", action="store_true",
                        help="one node op for every node, leaves included (no leaf op; the peer runs leaves alike)")
    parser.add_argument("--out-dir", default=str(common.RESULTS_DIR))
    args = parser.parse_args(argv)
    common.limit_threads(args.threads)
    import numpy as np
    torch = common.optional_import("torch")

    trees, vocab = stdlib_functions(args.trees)
    data = describe(trees)
    batches = [trees[i:i + args.batch] for i in range(0, len(trees) - args.batch + 1, args.batch)]
    model = TreadleModel(vocab, table=not args.no_table, leaf_op=not args.one_op)
    td = model.td
    labels = [td.constant(np.array([t[2] for t in b], np.int32)) for b in batches]
    arrays = [model.bulk_arrays(b) for b in batches]
    assert model.weave_per_node(batches[0]).serialize() == model.weave_bulk(arrays[0]).serialize()

    copies, not_copied = copy_bytes(model.loom, model.weave_bulk(arrays[0]))

    # Every figure is measured in interleaved rounds (each round runs every
    # implementation on the same batches), so the ratios are same-time ratios.
    idx = list(range(len(batches)))
    infer = {PER_NODE: lambda k: model.infer(model.weave_per_node(batches[k])),
             BULK: lambda k: model.infer(model.weave_bulk(arrays[k]))}
    train = {PER_NODE: lambda k: model.train(model.weave_per_node(batches[k]), labels[k]),
             BULK: lambda k: model.train(model.weave_bulk(arrays[k]), labels[k])}
    if torch is not None:
        peer = TorchByHeight(torch, vocab, table=not args.no_table, leaf_op=not args.one_op)
        plans = [peer.plan(b) for b in batches]
        tlabels = [torch.tensor([t[2] for t in b]) for b in batches]
        infer[TORCH] = lambda k: peer.infer(plans[k])
        train[TORCH] = lambda k: peer.train(plans[k], tlabels[k])
    gemms = gemm_steps(td, torch, batches, vocab, not args.no_table, not args.one_op)
    infer.update(gemms["inference"])
    train.update(gemms["training"])
    weave_only = {PER_NODE: lambda k: model.weave_per_node(batches[k]), BULK: lambda k: model.weave_bulk(arrays[k])}
    size = lambda k: len(batches[k])  # noqa: E731
    weave_rates = common.interleaved_rates(weave_only, idx, args.rounds, args.steps, size)
    results = {}
    for mode, steps in (("inference", infer), ("training", train)):
        rates = common.interleaved_rates(steps, idx, args.rounds, args.steps, size)
        for name, r in rates.items():
            entry = results.setdefault(name, {})[mode] = {"trees_per_second": statistics.median(r), "rounds": r,
                                                          "weave_share": None}
            if name in weave_rates:
                entry["weave_share"] = entry["trees_per_second"] / statistics.median(weave_rates[name])
            if torch is not None and name != TORCH:
                entry["vs_torch"] = statistics.median(a / b for a, b in zip(r, rates[TORCH]))

    machine = common.machine_info()
    payload = {"benchmark": "child_sum_ast", "table": not args.no_table, "leaf_op": not args.one_op,
               "data": data, "vocab": vocab, "batch": args.batch,
               "threads": args.threads, "rounds": args.rounds, "steps_per_round": args.steps,
               "load_average": os.getloadavg(), "machine": machine, "results": results,
               "forward_copy_bytes_first_batch": copies, "forward_bytes_not_copied_first_batch": not_copied}
    lines = [f"Child-sum TreeLSTM over stdlib ASTs: {data['trees']} functions, {data['nodes']} nodes, "
             f"{vocab} node types, up to {data['max_children']} children, height up to {data['max_height']}; "
             f"embeddings {EMBED}, hidden {HIDDEN}, {CLASSES} classes; batch {args.batch}, {args.threads} threads; "
             f"input projection {'per node' if args.no_table else 'as a vocab table'}; leaves "
             f"{'run by the node op' if args.one_op else 'by a leaf op (PyTorch: no U_iou at height 1)'}; "
             f"{args.rounds} interleaved rounds of {args.steps} batches; load average at the end "
             f"{os.getloadavg()[0]:.1f}.",
             f"Machine: {machine['cpu_model']}; ISA flags {' '.join(machine['cpu_flags'])}; "
             f"{common.kernels_sentence(machine)} "
             f"treadle {machine['versions']['treadle']}, torch {machine['versions']['torch']}.", "",
             "| implementation | mode | trees/s (median) | vs PyTorch (median of per-round ratios) "
             "| weaving share of a step |",
             "| --- | --- | ---: | ---: | ---: |"]
    for name, modes in results.items():
        for mode, r in modes.items():
            share = "—" if r["weave_share"] is None else f"{100 * r['weave_share']:.0f}%"
            lines.append(f"| {name} | {mode} | {r['trees_per_second']:.0f} | {common.fmt_ratio(r.get('vs_torch'))} "
                         f"| {share} |")
    lines += ["", f"The GEMMs alone are a step's matrix multiplies (the same shapes, on operands made beforehand; "
              f"treadle's list makes the table once per depth, PyTorch's once per step). Their 'vs PyTorch' is the "
              f"ceiling: the speed-up over PyTorch's step of a treadle that did nothing but its GEMMs."]
    lines += ["", f"Bytes the loom runtime copies in one forward run of the first batch "
              f"({sum(copies.values()) / 2**20:.1f} MiB in all; the backward run scatter-adds as many as the "
              f"argument gathers):", ""]
    lines += [f"- {kind}: {n / 2**20:.1f} MiB" for kind, n in copies.items()]
    lines += [f"- not copied: {kind} ({n / 2**20:.1f} MiB), read where they lie" for kind, n in not_copied.items()]
    markdown = "\n".join(lines) + "\n"
    common.write_report("child_sum_ast", payload, markdown, args.out_dir)
    print(markdown)


if __name__ == "__main__":
    main()
