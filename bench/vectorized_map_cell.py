"""td.vectorized_map of the TreeLSTM's node cell (written for one node)
against the same cell batched by hand and against td.map_fn, batch 256.

    python bench/vectorized_map_cell.py [--repeat 15] [--threads N] [--out-dir bench/results]

Each variant is a td.function over the four [256, 150] child states (h_l,
c_l, h_r, c_r) with the cell's weight [300, 750] and bias as variables
(bench/treelstm/model.py sizes): the per-node cell is concat -> matmul ->
split -> sigmoid/tanh -> multiply/add. vectorized_map should cost what the
hand-batched cell costs (one matmul of the whole batch, no loop over nodes);
map_fn runs 256 small matmuls in a loop. Reports µs per call and the ratios
vectorized / hand-batched and map_fn / vectorized (medians of per-round
ratios), and the op counts of the vectorized graph. Writes
vectorized_map_cell.json / .md.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

BATCH = 256


def build(td, np):
    from treelstm.model import HIDDEN, initial_weights
    weights = initial_weights()
    w = td.Variable(weights["W_node"])
    b = td.Variable(weights["b_node"])

    def node(args):  # one node: vectors of HIDDEN
        h_l, c_l, h_r, c_r = args
        z = td.matmul(td.concat([h_l, h_r], 0)[None], w)[0] + b
        i, f_l, f_r, o, g = td.split(z, 5, axis=0)
        c = td.sigmoid(i) * td.tanh(g) + td.sigmoid(f_l) * c_l + td.sigmoid(f_r) * c_r
        return td.sigmoid(o) * td.tanh(c), c

    def hand(h_l, c_l, h_r, c_r):  # the batch: [BATCH, HIDDEN]
        z = td.matmul(td.concat([h_l, h_r], 1), w) + b
        i, f_l, f_r, o, g = td.split(z, 5, axis=1)
        c = td.sigmoid(i) * td.tanh(g) + td.sigmoid(f_l) * c_l + td.sigmoid(f_r) * c_r
        return td.sigmoid(o) * td.tanh(c), c

    spec = (td.float32, td.float32)
    fns = {
        "vectorized_map": td.function(lambda *xs: td.vectorized_map(node, xs)),
        "hand_batched": td.function(hand),
        "map_fn": td.function(lambda *xs: td.map_fn(node, xs, fn_output_signature=spec)),
    }
    rng = np.random.default_rng(1)
    inputs = [td.constant(rng.uniform(-1, 1, (BATCH, HIDDEN)).astype(np.float32)) for _ in range(4)]
    return fns, inputs


def main(argv=None):
    args = common.parse_benchmark_args(__doc__.splitlines()[0], "vectorized_map_cell", argv)
    import numpy as np

    import treadle as td
    fns, inputs = build(td, np)
    want = fns["hand_batched"](*inputs)
    for name, fn in fns.items():  # same results before timing
        for got, ref in zip(fn(*inputs), want):
            np.testing.assert_allclose(got.numpy(), ref.numpy(), rtol=1e-4, atol=1e-5, err_msg=name)
    graph = fns["vectorized_map"].get_concrete_function(*inputs).graph
    op_counts = {}
    for op in graph.operations:
        op_counts[op.type] = op_counts.get(op.type, 0) + 1
    figures, rounds = common.compare({name: (lambda fn=fn: fn(*inputs)) for name, fn in fns.items()},
                                     repeat=args.repeat)
    ratios = {"vectorized_map / hand_batched": common.round_ratio(rounds, "vectorized_map", "hand_batched"),
              "map_fn / vectorized_map": common.round_ratio(rounds, "map_fn", "vectorized_map")}
    machine = common.machine_info()
    payload = {"batch": BATCH, "figures": figures, "ratios": ratios, "vectorized_graph_ops": op_counts,
               "machine": machine, "threads": args.threads}
    lines = ["# vectorized_map of the TreeLSTM node cell (batch 256)", "",
             f"{common.kernels_sentence(machine)}", "",
             "| variant | median µs | min µs |", "| --- | --- | --- |"]
    for name, f in figures.items():
        lines.append(f"| {name} | {common.fmt_us(f['median'])} | {common.fmt_us(f['min'])} |")
    lines += ["", "| ratio | median of rounds |", "| --- | --- |"]
    lines += [f"| {k} | {common.fmt_ratio(v)} |" for k, v in ratios.items()]
    lines += ["", "Ops of the vectorized graph: " + ", ".join(f"{k} {v}" for k, v in sorted(op_counts.items())), ""]
    markdown = "\n".join(lines)
    common.write_report("vectorized_map_cell", payload, markdown, args.out_dir)
    print(markdown)


if __name__ == "__main__":
    main()
