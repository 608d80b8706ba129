"""Weaver scheduling speed on the TreeLSTM workload: how
many tree nodes per second the Weaver schedules when Python makes one call
per node, and through the bulk path (`Weaver.weave_trees`, one call for a
whole batch of trees); plus merging per-tree messages into one batch.

    python bench/weaver_speed.py [--trees 256] [--repeat 15] [--out-dir bench/results]

Writes bench/results/weaver_speed.json and weaver_speed.md and prints the table.
A call from Python (op calls with dense or ragged arguments, batch_input)
costs about a microsecond.
"""

import argparse
import os
import pathlib
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

STAT = "median"


def find_trees(path):
    for candidate in [path, pathlib.Path(__file__).resolve().parent / "data" / "sstlike-8192.trees"]:
        if candidate and pathlib.Path(candidate).exists():
            return pathlib.Path(candidate)
    return None


def random_trees(n, seed=0):
    import numpy as np
    rng = np.random.default_rng(seed)

    def tree(leaves):
        if leaves == 1:
            return int(rng.integers(20000))
        k = int(rng.integers(1, leaves))
        return (tree(k), tree(leaves - k))

    return [tree(int(rng.integers(2, 40))) for _ in range(n)]


def make_loom():
    """The TreeLSTM's signature (sizes of Tai et al.), dry_run: the Weaver needs only the signature."""
    import numpy as np
    import treadle as td

    embed = td.loom.TypeShape("float32", (300,), "embedding")
    c_ts = td.loom.TypeShape("float32", (150,), "c")
    h_ts = td.loom.TypeShape("float32", (150,), "h")

    # A dry-run loom still traces its ops once (the schedule's fingerprint covers their bodies).
    class Leaf(td.loom.LoomOp):
        def __init__(self):
            super().__init__([embed], [c_ts, h_ts])

        def instantiate_batch(self, inputs):
            return [inputs[0][:, :150], inputs[0][:, 150:]]

    class Node(td.loom.LoomOp):
        def __init__(self):
            super().__init__([c_ts, h_ts, c_ts, h_ts], [c_ts, h_ts])

        def instantiate_batch(self, inputs):
            return [inputs[0] + inputs[2], inputs[1] + inputs[3]]

    loom = td.loom.Loom(named_ops={"leaf": Leaf(), "node": Node()},
                        batch_inputs={embed: np.zeros((1, 300), np.float32)}, dry_run=True)
    return loom, embed


def make_child_sum_loom():
    """A child-sum TreeLSTM's signature: x, then ragged lists of the children's c and h."""
    import numpy as np
    import treadle as td

    embed = td.loom.TypeShape("float32", (300,), "embedding")
    c_ts = td.loom.TypeShape("float32", (150,), "c")
    h_ts = td.loom.TypeShape("float32", (150,), "h")

    class Node(td.loom.LoomOp):
        def __init__(self):
            super().__init__([embed, td.loom.Ragged(c_ts), td.loom.Ragged(h_ts)], [c_ts, h_ts])

        def instantiate_batch(self, inputs):
            x, c, h = inputs
            return [td.reduce_sum(c, axis=1) + x[:, :150], td.reduce_sum(h, axis=1)]

    return td.loom.Loom(named_ops={"node": Node()}, batch_inputs={embed: np.zeros((1, 300), np.float32)},
                        dry_run=True), embed


def run(trees, repeat):
    import numpy as np
    from treadle.loom.trees import tree_arrays

    loom, embed = make_loom()
    arrays = tree_arrays(trees)
    num_nodes = len(arrays[0])

    def weave_python():
        w = loom.make_weaver()
        leaf, node, batch_input, add_output = w.leaf, w.node, w.batch_input, w.add_output

        def visit(t):
            if isinstance(t, tuple):
                c_l, h_l = visit(t[0])
                c_r, h_r = visit(t[1])
                return node(c_l, h_l, c_r, h_r)
            return leaf(batch_input(embed, t))

        for t in trees:
            add_output(visit(t)[1])
        return w

    def weave_bulk():
        w = loom.make_weaver()
        w.weave_trees(*arrays, "leaf", "node", embed, root_outputs=[1])
        return w

    assert weave_python().serialize() == weave_bulk().serialize()  # the same schedule both ways
    w = loom.make_weaver()
    x = w.batch_input(embed, 0)
    c, h = w.leaf(x)
    per_tree = []
    for t in trees:
        pw = loom.make_weaver()
        pw.weave_trees(*tree_arrays([t]), "leaf", "node", embed, root_outputs=[1])
        per_tree.append(pw.serialize())
    fns = {
        "python, one call per node": weave_python,
        "bulk weave_trees": weave_bulk,
        "merge per-tree messages": lambda: loom._spec.merge(per_tree),
        "serialize the batch": weave_bulk().serialize,
    }
    figures, _ = common.compare(fns, repeat=repeat, min_seconds=0.05)
    cs_loom, cs_embed = make_child_sum_loom()
    cw = cs_loom.make_weaver()
    cx = cw.batch_input(cs_embed, 0)
    cc, ch = cw.node(cx, [], [])
    single, _ = common.compare({"w.node(c, h, c, h)": lambda: w.node(c, h, c, h),
                                "w.leaf(x)": lambda: w.leaf(x),
                                "w.batch_input(ts, 0)": lambda: w.batch_input(embed, 0),
                                "child-sum w.node(x, [], [])": lambda: cw.node(cx, [], []),
                                "child-sum w.node(x, [c, c, c], [h, h, h])":
                                    lambda: cw.node(cx, [cc, cc, cc], [ch, ch, ch])}, repeat=repeat)
    results = []
    for name, f in figures.items():
        us = f[STAT]
        results.append({"name": name, "us_per_batch": us, "nodes_per_second": num_nodes / us * 1e6, "figures": f})
    for name, f in single.items():
        results.append({"name": name, "us_per_call": f[STAT], "figures": f})
    return num_nodes, results


def markdown(results, machine, n_trees, num_nodes, source):
    lines = [
        f"Weaver speed: scheduling {n_trees} TreeLSTM trees ({num_nodes} nodes, {source}); {STAT} of "
        f"{results[0]['figures']['runs']} interleaved runs.",
        f"Machine: {machine['cpu_model']}, {machine['cores']} cores; Python {machine['python']}, "
        f"treadle {machine['versions']['treadle']}.",
        common.kernels_sentence(machine),
        "",
        "| path | µs per batch | nodes per second | µs per node |",
        "| --- | ---: | ---: | ---: |",
    ]
    for r in results:
        if "us_per_batch" in r:
            lines.append(f"| {r['name']} | {r['us_per_batch']:.0f} | {r['nodes_per_second']:,.0f} | "
                         f"{r['us_per_batch'] / num_nodes:.3f} |")
    lines += ["", "| one call from Python | µs per call |", "| --- | ---: |"]
    for r in results:
        if "us_per_call" in r:
            lines.append(f"| `{r['name']}` | {r['us_per_call']:.2f} |")
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trees", type=int, default=256, help="trees per batch (default 256)")
    parser.add_argument("--data", type=pathlib.Path, default=None, help="the sstlike trees file")
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--out-dir", type=pathlib.Path, default=common.RESULTS_DIR)
    args = parser.parse_args(argv)
    if args.trees < 1 or args.repeat < 1:
        parser.error("--trees and --repeat must be at least 1")
    from treadle.loom.trees import read_labeled_trees
    path = find_trees(args.data)
    if path is not None:
        trees = read_labeled_trees(path)[1][:args.trees]
        source = path.name
    else:
        trees = random_trees(args.trees)
        source = "random trees (sstlike-8192.trees not found)"
    machine = common.machine_info()
    num_nodes, results = run(trees, args.repeat)
    table = markdown(results, machine, len(trees), num_nodes, source)
    payload = {"benchmark": "weaver_speed", "statistic": STAT, "machine": machine, "trees": len(trees),
               "nodes": num_nodes, "source": source, "results": results}
    json_path, md_path = common.write_report("weaver_speed", payload, table, args.out_dir)
    print(table)
    print(f"wrote {json_path} and {md_path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
