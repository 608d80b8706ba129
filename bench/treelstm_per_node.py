"""The binary TreeLSTM woven the Fold way, one
Python Weaver call per node, against PyTorch batched by height, measured in
one process in interleaved rounds (every round times each implementation on
the same batches, rotating the order), so a busy spell on this shared machine
slows them alike. treadle woven in bulk (`weave_trees`) runs alongside.

Weaving is part of a treadle step: the schedule is woven (and serialized)
from the batch's trees inside the timed step, as a Fold user would.

    python bench/treelstm_per_node.py [--batch 256] [--rounds 7] [--steps 3] [--threads 1]

Writes bench/results/treelstm_per_node.json and .md: trees per second (the
median over rounds), the per-node weaving's share of a step, and the ratios
to PyTorch (the median of per-round ratios).
"""

import argparse
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

import common  # noqa: E402

PER_NODE, BULK, TORCH = "treadle, per-node Python weaving", "treadle, bulk weaving (weave_trees)", "PyTorch by height"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--steps", type=int, default=3, help="batches per implementation per round")
    parser.add_argument("--trees", type=int, default=4096, help="trees read from the SST-like file")
    # One thread by default, as in child_sum_ast.py: on a shared machine
    # PyTorch's OpenMP threads spin, which would flatter treadle.
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out-dir", default=str(common.RESULTS_DIR))
    args = parser.parse_args(argv)
    common.limit_threads(args.threads)
    import numpy as np
    import treadle as td
    from bench.treelstm import data, model
    from bench.treelstm.treadle_impl import TreeLSTM
    torch = common.optional_import("torch")

    trees = data.load_trees(limit=args.trees)
    batches = [trees[i:i + args.batch] for i in range(0, len(trees) - args.batch + 1, args.batch)]
    weights = model.initial_weights()
    net = TreeLSTM(weights)
    assert net.weave_per_node(batches[0]) == net.weave(batches[0]), "per-node and bulk schedules differ"

    infer, train = {}, {}
    infer[PER_NODE] = lambda b: net.infer(net.weave_per_node(b)).numpy()
    infer[BULK] = lambda b: net.infer(net.weave(b)).numpy()
    train[PER_NODE] = lambda b: float(net.train(net.weave_per_node(b), [t.label for t in b])[0])
    train[BULK] = lambda b: float(net.train(net.weave(b), [t.label for t in b])[0])
    if torch is not None:
        from bench.treelstm import torch_peers
        torch_steps, _ = torch_peers.make_steps(weights)
        infer[TORCH] = torch_steps[("torch by height", "inference")]
        train[TORCH] = lambda b: torch_steps[("torch by height", "training")](b).item()
    weave_only = {"per-node weaving": net.weave_per_node, "bulk weaving": net.weave}

    results = {}
    for mode, steps in (("inference", infer), ("training", train)):
        rates = common.interleaved_rates(steps, batches, args.rounds, args.steps)
        for name, r in rates.items():
            entry = results.setdefault(name, {})[mode] = {"trees_per_second": statistics.median(r), "rounds": r}
            if torch is not None and name != TORCH:
                entry["vs_torch"] = statistics.median(a / b for a, b in zip(r, rates[TORCH]))
    weave_rates = common.interleaved_rates(weave_only, batches, args.rounds, args.steps)
    for name, key in ((PER_NODE, "per-node weaving"), (BULK, "bulk weaving")):
        w = statistics.median(weave_rates[key])
        for mode in ("inference", "training"):
            results[name][mode]["weave_share"] = results[name][mode]["trees_per_second"] / w

    machine = common.machine_info()
    payload = {"benchmark": "treelstm_per_node", "batch": args.batch, "threads": args.threads,
               "rounds": args.rounds, "steps_per_round": args.steps, "trees": len(trees),
               "load_average": os.getloadavg(), "machine": machine, "results": results,
               "weaving_trees_per_second": {k: statistics.median(v) for k, v in weave_rates.items()}}
    lines = [f"Binary TreeLSTM on SST-like trees, batch {args.batch}, {args.threads} thread(s), "
             f"{args.rounds} interleaved rounds of {args.steps} batches; load average at the end "
             f"{os.getloadavg()[0]:.1f}.",
             f"Machine: {machine['cpu_model']}; {common.kernels_sentence(machine)} "
             f"treadle {machine['versions']['treadle']}, torch {machine['versions']['torch']}.", "",
             "| implementation | mode | trees/s (median) | vs PyTorch (median of per-round ratios) | weaving share |",
             "| --- | --- | ---: | ---: | ---: |"]
    for name, modes in results.items():
        for mode, r in modes.items():
            share = f"{100 * r['weave_share']:.0f}%" if "weave_share" in r else "—"
            lines.append(f"| {name} | {mode} | {r['trees_per_second']:.0f} | "
                         f"{common.fmt_ratio(r.get('vs_torch'))} | {share} |")
    markdown = "\n".join(lines) + "\n"
    common.write_report("treelstm_per_node", payload, markdown, args.out_dir)
    print(markdown)


if __name__ == "__main__":
    main()
