"""The ragged-argument ops of the child-sum TreeLSTM, at the sizes of one of
its loom depths: segment sums of the children's rows into their parents
(row ids sorted, many parents with no children), td.repeat of the parents'
rows to their children, a ragged row sum, and a gather of rows.

    python bench/ragged_ops.py [--repeat 15] [--threads 1] [--parents 2000] [--children 4000]

Peers measured in the same run: NumPy (np.add.reduceat / np.repeat /
np.take), and PyTorch (index_add / repeat_interleave / index_select) when
installed. Microseconds per call, medians of interleaved runs.
Writes bench/results/ragged_ops.json and .md.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

HIDDEN = 150


def lengths_like_asts(rng, parents, children):
    """Children per parent: about half the parents have none (AST leaves), the
    rest share the `children` rows at random."""
    import numpy as np
    has = rng.random(parents) < 0.5
    lengths = np.zeros(parents, np.int64)
    picks = rng.choice(np.flatnonzero(has), children)
    np.add.at(lengths, picks, 1)
    return lengths


def main(argv=None):
    import argparse
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--parents", type=int, default=2000)
    parser.add_argument("--children", type=int, default=4000)
    parser.add_argument("--out-dir", default=str(common.RESULTS_DIR))
    args = parser.parse_args(argv)
    common.limit_threads(args.threads)
    import numpy as np
    import treadle as td
    torch = common.optional_import("torch")

    rng = np.random.default_rng(0)
    lengths = lengths_like_asts(rng, args.parents, args.children)
    nvalues = int(lengths.sum())
    rowids = np.repeat(np.arange(args.parents), lengths).astype(np.int32)
    splits = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    values = rng.standard_normal((nvalues, HIDDEN)).astype(np.float32)
    parents = rng.standard_normal((args.parents, HIDDEN)).astype(np.float32)
    table = rng.standard_normal((79, 4 * HIDDEN)).astype(np.float32)
    kinds = rng.integers(0, 79, args.parents).astype(np.int32)

    t_values, t_ids, t_num = td.constant(values), td.constant(rowids), td.constant(np.int32(args.parents))
    t_parents, t_lengths = td.constant(parents), td.constant(lengths.astype(np.int32))
    t_table, t_kinds = td.constant(table), td.constant(kinds)
    rt = td.RaggedTensor.from_row_splits(t_values, td.constant(splits))
    starts = splits[:-1][lengths > 0]

    def np_segment_sum():
        out = np.zeros((args.parents, HIDDEN), np.float32)
        out[lengths > 0] = np.add.reduceat(values, starts, axis=0)
        return out

    cases = {
        "unsorted_segment_sum (sorted ids)": {
            "treadle": lambda: td.math.unsorted_segment_sum(t_values, t_ids, t_num),
            "NumPy": np_segment_sum},
        "repeat rows": {
            "treadle": lambda: td.repeat(t_parents, t_lengths, axis=0),
            "NumPy": lambda: np.repeat(parents, lengths, axis=0)},
        "ragged reduce_sum(axis=1)": {
            "treadle": lambda: td.reduce_sum(rt, axis=1),
            "NumPy": np_segment_sum},
        "gather rows of a table": {
            "treadle": lambda: td.gather(t_table, t_kinds),
            "NumPy": lambda: np.take(table, kinds, axis=0)},
    }
    if torch is not None:
        tv, tids = torch.from_numpy(values), torch.from_numpy(rowids.astype(np.int64))
        tp, tl = torch.from_numpy(parents), torch.from_numpy(lengths)
        tt, tk = torch.from_numpy(table), torch.from_numpy(kinds.astype(np.int64))
        cases["unsorted_segment_sum (sorted ids)"]["PyTorch"] = \
            lambda: torch.zeros(args.parents, HIDDEN).index_add_(0, tids, tv)
        cases["repeat rows"]["PyTorch"] = lambda: tp.repeat_interleave(tl, dim=0)
        cases["ragged reduce_sum(axis=1)"]["PyTorch"] = cases["unsorted_segment_sum (sorted ids)"]["PyTorch"]
        cases["gather rows of a table"]["PyTorch"] = lambda: tt.index_select(0, tk)

    results = {}
    for case, fns in cases.items():
        figures, _ = common.compare(fns, repeat=args.repeat)
        results[case] = {name: f["median"] for name, f in figures.items()}
    machine = common.machine_info()
    peers = [p for p in ("NumPy", "PyTorch") if any(p in r for r in results.values())]
    lines = [f"Ragged ops at one child-sum depth: {args.parents} parents, {nvalues} children rows of {HIDDEN} "
             f"float32, {int((lengths == 0).sum())} parents with none; {args.threads} thread(s); medians of "
             f"{args.repeat} interleaved runs, µs per call; load average {os.getloadavg()[0]:.1f}.",
             f"Machine: {machine['cpu_model']}; {common.kernels_sentence(machine)}", "",
             "| op | treadle | " + " | ".join(peers) + " |", "| --- | ---: |" + " ---: |" * len(peers)]
    for case, r in results.items():
        lines.append(f"| {case} | {r['treadle']:.1f} | " + " | ".join(f"{r[p]:.1f}" if p in r else "—" for p in peers)
                     + " |")
    markdown = "\n".join(lines) + "\n"
    payload = {"benchmark": "ragged_ops", "parents": args.parents, "children": nvalues, "hidden": HIDDEN,
               "threads": args.threads, "repeat": args.repeat, "load_average": os.getloadavg(),
               "machine": machine, "microseconds_median": results}
    common.write_report("ragged_ops", payload, markdown, args.out_dir)
    print(markdown)


if __name__ == "__main__":
    main()
