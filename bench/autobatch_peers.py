"""Automatic batching: the binary TreeLSTM, the child-sum
TreeLSTM over ASTs and the tree decoder, written per example and batched by
`td.loom.autobatch`, against their peers in the same process:

- treadle's hand-woven bulk Loom (the TreeLSTMs);
- PyTorch batched by hand: by height (the TreeLSTMs), as a masked frontier
  loop (the decoder);
- DyNet 2.1 per example: its autobatching (the strategy is fixed per
  process: --dynet-strategy agenda or depth) for the TreeLSTMs; for the
  decoder, which reads a value at every decision, autobatching off (its
  faster setting; --dynet-decoder-autobatch adds it on).

    python bench/autobatch_peers.py [--workloads treelstm,child_sum,decoder] [--rounds 5] [--short]

Every implementation first runs a few examples against a NumPy per-example
reference (the differences go into the report). Then each round times
--steps batches of every implementation, the order rotating from round to
round; trees/s are medians over rounds and ratios medians of per-round
ratios. Peers run at one thread; treadle at --treadle-threads (default 1).
A missing peer (or a treadle without autobatch) is reported as missing and
the others still run. For the decoder the report adds the fraction of a step
spent outside matrix products: the same matrix products, on operands made
beforehand, timed in the same rounds (treadle's with td.matmul, PyTorch's
with torch.mm).

Writes <out-dir>/autobatch_<workload>.json and .md.
"""

import argparse
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

import common  # noqa: E402

WORKLOADS = ("treelstm", "child_sum", "decoder")
AUTOBATCH, HAND_WOVEN, TORCH = "treadle autobatch", "treadle hand-woven bulk", "PyTorch batched by hand"
AUTOBATCH_BY_LEVEL = "treadle autobatch, level by level"


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workloads", default=",".join(WORKLOADS))
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=2, help="batches per implementation per round")
    parser.add_argument("--short", action="store_true", help="fewer data and 3 rounds of 1 batch: a quick look")
    parser.add_argument("--treadle-threads", type=int, default=1, help="treadle's threads (peers always use one)")
    parser.add_argument("--dynet-strategy", choices=("agenda", "depth"), default="agenda")
    parser.add_argument("--dynet-decoder-autobatch", action="store_true",
                        help="also time DyNet's decoder with autobatching on (it forwards at every decision)")
    parser.add_argument("--no-dynet", action="store_true", help="leave DyNet out")
    parser.add_argument("--no-torch", action="store_true", help="leave PyTorch out")
    parser.add_argument("--label", default="loaded",
                        help="how the machine was: 'loaded' or 'quiet' (goes into the report)")
    parser.add_argument("--out-dir", default=str(common.RESULTS_DIR))
    args = parser.parse_args(argv)
    args.workloads = args.workloads.split(",")
    unknown = sorted(set(args.workloads) - set(WORKLOADS))
    if unknown:
        parser.error(f"unknown workloads {unknown}; choose from {list(WORKLOADS)}")
    if min(args.batch, args.rounds, args.steps, args.treadle_threads) < 1:
        parser.error("--batch, --rounds, --steps and --treadle-threads must be at least 1")
    if args.short:
        args.rounds, args.steps = min(args.rounds, 3), 1
    return args


def start_libraries(args):
    """Sets thread counts before any library starts; imports the peers that
    are installed. Returns (torch or None, dynet or None)."""
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(args.treadle_threads)
    torch = None if args.no_torch else common.optional_import("torch")
    if torch is not None:
        torch.set_num_threads(1)
    dy = None
    if not args.no_dynet:
        from bench.autobatch import dynet_models
        dy = dynet_models.load(args.dynet_strategy)
    return torch, dy


def batches_of(items, size, count):
    return [items[i * size:(i + 1) * size] for i in range(count)]


def max_diff(a, b):
    import numpy as np
    return float(np.max(np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64))))


# ---------------------------------------------------------------- workloads
# Each returns (steps {mode: {name: fn(k)}}, checks {name: max |difference|
# from NumPy}, facts {...}, autobatch's launch counts on the first batch (or
# None), missing [names]) for batches k = 0, 1, ...

def treelstm(args, torch, dy, count):
    import numpy as np
    from bench.autobatch import treadle_models
    from bench.treelstm import data, model
    from bench.treelstm.treadle_impl import TreeLSTM
    trees = data.load_trees(limit=args.batch * count)
    batches = batches_of(trees, args.batch, count)
    weights = model.initial_weights()
    few = trees[:6]
    reference = np.stack([model_logits(weights, t) for t in few])
    steps, checks, missing = {"inference": {}, "training": {}}, {}, []
    launches = None
    net = TreeLSTM(weights)
    labels_np = [np.array([t.label for t in b], np.int32) for b in batches]
    checks[HAND_WOVEN] = max_diff(net.infer(net.weave(few)), reference)
    steps["inference"][HAND_WOVEN] = lambda k: net.infer(net.weave(batches[k])).numpy()
    steps["training"][HAND_WOVEN] = lambda k: float(net.train(net.weave(batches[k]), labels_np[k])[0])
    if treadle_models.available():
        from autobatch_treelstm import AutobatchedTreeLSTM  # the model of bench/autobatch_treelstm.py
        auto = AutobatchedTreeLSTM(weights)
        checks[AUTOBATCH] = max_diff(auto.infer(few), reference)
        launches = treadle_models.launch_counts(auto.root_state, batches[0])
        steps["inference"][AUTOBATCH] = lambda k: auto.infer(batches[k])
        steps["training"][AUTOBATCH] = lambda k: auto.train(batches[k], labels_np[k])
    else:
        missing.append(AUTOBATCH)
    if torch is not None:
        from bench.treelstm import torch_peers
        peer, _ = torch_peers.make_steps(weights)
        checks[TORCH] = max_diff(peer[("torch by height", "inference")](few), reference)
        steps["inference"][TORCH] = lambda k: peer[("torch by height", "inference")](batches[k])
        steps["training"][TORCH] = lambda k: peer[("torch by height", "training")](batches[k])
    else:
        missing.append(TORCH)
    add_dynet(steps, checks, missing, dy, args, lambda: dynet_class("BinaryTreeLSTM")(dy, weights),
              few, reference, batches)
    facts = {"trees": len(trees), "mean_nodes": float(np.mean([t.size for t in trees]))}
    return steps, checks, facts, launches, missing


def model_logits(w, tree):
    """The binary TreeLSTM's logits of one tree, by a NumPy recursion."""
    import numpy as np

    def sig(x):
        return 1 / (1 + np.exp(-x))

    def visit(k):
        if tree.left[k] < 0:
            i, o, u = np.split(w["embedding"][tree.token[k]] @ w["W_leaf"] + w["b_leaf"], 3)
            c = sig(i) * np.tanh(u)
            return c, sig(o) * np.tanh(c)
        c_l, h_l = visit(tree.left[k])
        c_r, h_r = visit(tree.right[k])
        i, f_l, f_r, o, u = np.split(np.concatenate([h_l, h_r]) @ w["W_node"] + w["b_node"], 5)
        c = sig(i) * np.tanh(u) + sig(f_l) * c_l + sig(f_r) * c_r
        return c, sig(o) * np.tanh(c)

    return visit(tree.size - 1)[1] @ w["W_out"] + w["b_out"]


def dynet_class(name):
    from bench.autobatch import dynet_models
    return getattr(dynet_models, name)


def dynet_name(args, autobatch=True):
    return f"DyNet autobatch {args.dynet_strategy}" if autobatch else "DyNet autobatch off"


def add_dynet(steps, checks, missing, dy, args, make, few, reference, batches, autobatch=True):
    name = dynet_name(args, autobatch)
    if dy is None:
        missing.append("DyNet")
        return
    m = make()
    checks[name] = max_diff(m.infer(few, autobatch=autobatch), reference)
    steps["inference"][name] = lambda k: m.infer(batches[k], autobatch=autobatch)
    steps["training"][name] = lambda k: m.train(batches[k], autobatch=autobatch)


def child_sum(args, torch, dy, count):
    import numpy as np
    import child_sum_ast
    from bench.autobatch import child_sum as cs, treadle_models
    functions, vocab = child_sum_ast.stdlib_functions(args.batch * count)
    if len(functions) < args.batch * count:
        raise SystemExit(f"the standard library has only {len(functions)} functions for {count} batches")
    batches = batches_of(functions, args.batch, count)
    examples = [cs.examples(b) for b in batches]
    weights = cs.initial_weights(vocab)
    few = cs.examples(functions[:6])
    reference = np.stack([cs.logits(weights, t) for t, _ in few])
    steps, checks, missing = {"inference": {}, "training": {}}, {}, []
    launches = None
    # Every side multiplies each node's embedding by W (no vocabulary table):
    # what the per-example code does.
    hand = child_sum_ast.TreadleModel(vocab, table=False)
    td = hand.td
    arrays = [hand.bulk_arrays(b) for b in batches]
    labels = [td.constant(np.array([f[2] for f in b], np.int32)) for b in batches]
    checks[HAND_WOVEN] = max_diff(hand.infer(hand.weave_bulk(hand.bulk_arrays(functions[:6]))), reference)
    steps["inference"][HAND_WOVEN] = lambda k: hand.infer(hand.weave_bulk(arrays[k]))
    steps["training"][HAND_WOVEN] = lambda k: hand.train(hand.weave_bulk(arrays[k]), labels[k])
    if treadle_models.available():
        auto = treadle_models.ChildSumTreeLSTM(weights)
        checks[AUTOBATCH] = max_diff(auto.infer(few), reference)
        launches = treadle_models.launch_counts(auto.batched, examples[0])
        steps["inference"][AUTOBATCH] = lambda k: auto.infer(examples[k])
        steps["training"][AUTOBATCH] = lambda k: auto.train(examples[k], labels[k])
    else:
        missing.append(AUTOBATCH)
    if torch is not None:  # its own weights (PyTorch's initialisation): timed, not checked
        peer = child_sum_ast.TorchByHeight(torch, vocab, table=False)
        plans = [peer.plan(b) for b in batches]
        tlabels = [torch.tensor([f[2] for f in b]) for b in batches]
        steps["inference"][TORCH] = lambda k: peer.infer(plans[k])
        steps["training"][TORCH] = lambda k: peer.train(plans[k], tlabels[k])
    else:
        missing.append(TORCH)
    add_dynet(steps, checks, missing, dy, args, lambda: dynet_class("ChildSumTreeLSTM")(dy, weights),
              few, reference, examples)
    facts = child_sum_ast.describe(functions)
    facts["vocab"] = vocab
    return steps, checks, facts, launches, missing


def decoder(args, torch, dy, count):
    import numpy as np
    from bench.autobatch import decoder as dec, treadle_models
    weights = dec.initial_weights()
    states = dec.initial_states(args.batch * count)
    batches = batches_of(states, args.batch, count)
    few = states[:8]
    reference = np.stack([dec.decode(weights, s)[0] for s in few])
    sizes = dec.tree_sizes(weights, states)
    steps, checks, missing = {"inference": {}, "training": {}}, {}, []
    launches = None
    facts = {"examples": len(states), "mean_nodes": float(sizes.mean()), "min_nodes": int(sizes.min()),
             "max_nodes": int(sizes.max()), "state": dec.STATE, "max_depth": dec.MAX_DEPTH}
    if treadle_models.available():
        auto = treadle_models.TreeDecoder(weights, dec.MAX_DEPTH, dec.LEARNING_RATE)
        checks[AUTOBATCH] = max_diff(auto.infer(few), reference)
        launches = treadle_models.launch_counts(auto.batched, list(batches[0]))
        steps["inference"][AUTOBATCH] = lambda k: auto.infer(batches[k])
        steps["training"][AUTOBATCH] = lambda k: auto.train(batches[k])
        by_level = treadle_models.TreeDecoder(weights, dec.MAX_DEPTH, dec.LEARNING_RATE, order="by_level")
        checks[AUTOBATCH_BY_LEVEL] = max_diff(by_level.infer(few), reference)
        facts["launches_by_level"] = treadle_models.launch_counts(by_level.batched, list(batches[0]))
        steps["inference"][AUTOBATCH_BY_LEVEL] = lambda k: by_level.infer(batches[k])
        steps["training"][AUTOBATCH_BY_LEVEL] = lambda k: by_level.train(batches[k])
    else:
        missing.append(AUTOBATCH)
    if torch is not None:
        from bench.autobatch.torch_decoder import FrontierDecoder
        peer = FrontierDecoder(weights)
        tstates = [torch.from_numpy(b) for b in batches]
        checks[TORCH] = max_diff(peer.infer(torch.from_numpy(few)), reference)
        steps["inference"][TORCH] = lambda k: peer.infer(tstates[k])
        steps["training"][TORCH] = lambda k: peer.train(tstates[k])
    else:
        missing.append(TORCH)
    make = lambda: dynet_class("TreeDecoder")(dy, weights, dec.MAX_DEPTH, dec.LEARNING_RATE)  # noqa: E731
    add_dynet(steps, checks, missing, dy, args, make, list(few), reference, [list(b) for b in batches],
              autobatch=False)
    if args.dynet_decoder_autobatch:
        add_dynet(steps, checks, missing, dy, args, make, list(few), reference, [list(b) for b in batches])
    for mode, gemms in decoder_gemm_steps(torch, weights, batches).items():
        steps[mode].update(gemms)
    return steps, checks, facts, launches, missing


GEMM_TD, GEMM_TORCH = "treadle's matrix products alone", "PyTorch's matrix products alone"


def decoder_gemm_steps(torch, weights, batches):
    """{mode: {name: fn(k)}}: the decoder's matrix products alone on batch k,
    with the shapes of its frontier at each depth (the initial weights'
    trees): forward s W_c and s w_p; backward, for each s W_c, dz W_c^T and
    s^T dz. Operands are made beforehand."""
    import numpy as np
    import treadle as td
    from bench.autobatch import decoder as dec
    rng = np.random.default_rng(0)
    S = dec.STATE

    def shapes(batch):
        counts = frontier_counts(weights, batch)
        fwd = [(n, S, 1) for n in counts["all"]] + [(n, S, 2 * S) for n in counts["expanded"]]
        bwd = [(n, 2 * S, S, False, True) for n in counts["expanded"]] + \
              [(S, n, 2 * S, True, False) for n in counts["expanded"]]
        return [(m, k, n, False, False) for m, k, n in fwd], bwd

    def operands(m, k, n, ta, tb):
        a = rng.standard_normal((k, m) if ta else (m, k)).astype(np.float32)
        b = rng.standard_normal((n, k) if tb else (k, n)).astype(np.float32)
        return a, b, ta, tb

    made = [shapes(b) for b in batches]
    out = {}
    for mode in ("inference", "training"):
        lists = [[operands(*s) for s in fwd + (bwd if mode == "training" else [])] for fwd, bwd in made]
        td_lists = [[(td.constant(a), td.constant(b), ta, tb) for a, b, ta, tb in ops] for ops in lists]
        out[mode] = {GEMM_TD: lambda k, L=td_lists: [td.matmul(a, b, transpose_a=ta, transpose_b=tb)
                                                      for a, b, ta, tb in L[k]]}
        if torch is not None:
            t_lists = [[(torch.from_numpy(a), torch.from_numpy(b), ta, tb) for a, b, ta, tb in ops] for ops in lists]
            out[mode][GEMM_TORCH] = lambda k, L=t_lists: [torch.mm(a.t() if ta else a, b.t() if tb else b)
                                                          for a, b, ta, tb in L[k]]
    return out


def frontier_counts(weights, batch):
    """Per depth: the number of nodes, and of those expanded, in a batch's trees."""
    from bench.autobatch import decoder as dec
    counts = {"all": [], "expanded": []}
    frontier = [(s, 0) for s in batch]
    while frontier:
        grown = [(s, d) for s, d in frontier if dec.expands(weights, s, d)]
        counts["all"].append(len(frontier))
        if grown:
            counts["expanded"].append(len(grown))
        frontier = [(c, d + 1) for s, d in grown for c in dec.children(weights, s)]
    return counts


# ---------------------------------------------------------------- measuring and reporting

def measure(steps, count, args):
    """{mode: {name: {"per_second", "rounds"}}} in interleaved rounds."""
    results = {}
    for mode, fns in steps.items():
        rates = common.interleaved_rates(fns, list(range(count)), args.rounds, args.steps, lambda k: args.batch)
        results[mode] = {name: {"per_second": statistics.median(r), "rounds": r} for name, r in rates.items()}
    return results


def ratios(results):
    """{mode: {"A / B": median of per-round ratios}} of treadle autobatch and
    treadle hand-woven against every other implementation."""
    out = {}
    for mode, entries in results.items():
        pairs = {}
        for mine in (AUTOBATCH, AUTOBATCH_BY_LEVEL, HAND_WOVEN):
            if mine not in entries:
                continue
            for other, e in entries.items():
                if other not in (mine, GEMM_TD, GEMM_TORCH, AUTOBATCH, AUTOBATCH_BY_LEVEL):
                    pairs[f"{mine} / {other}"] = statistics.median(
                        a / b for a, b in zip(entries[mine]["rounds"], e["rounds"]))
        out[mode] = pairs
    return out


def outside_gemm(results):
    """For the decoder: each implementation's fraction of a step spent
    outside its library's matrix products (1 - GEMM time / step time)."""
    out = {}
    for mode, entries in results.items():
        for name, gemm in ((AUTOBATCH, GEMM_TD), (AUTOBATCH_BY_LEVEL, GEMM_TD), (TORCH, GEMM_TORCH)):
            if name in entries and gemm in entries:
                # rates per round: a step's time over the products' time is gemm rate / step rate
                out.setdefault(mode, {})[name] = statistics.median(
                    1 - s / g for s, g in zip(entries[name]["rounds"], entries[gemm]["rounds"]))
    return out


def markdown(report):
    m = report["machine"]
    lines = [f"# Automatic batching: {report['workload']} ({report['label']})", "",
             f"Batch {report['batch']}; {report['rounds']} interleaved rounds of {report['steps_per_round']} "
             f"batches; peers at one thread, treadle at {report['treadle_threads']}; DyNet strategy "
             f"{report['dynet_strategy']}. Load average {report['load_average_start'][0]:.1f} at the start, "
             f"{report['load_average_end'][0]:.1f} at the end. Machine: {m['cpu_model']}, {m['cores']} cores; "
             f"{common.kernels_sentence(m)} Versions: "
             + ", ".join(f"{k} {v}" for k, v in m["versions"].items() if v) + ".", "",
             "Data: " + ", ".join(f"{k} {v:.1f}" if isinstance(v, float) else f"{k} {v}"
                                  for k, v in report["data"].items() if not isinstance(v, dict)) + ".", "",
             "| implementation | mode | examples/s (median) |", "|---|---|---:|"]
    for mode, entries in report["results"].items():
        for name, e in entries.items():
            lines.append(f"| {name} | {mode} | {e['per_second']:.0f} |")
    lines += ["", "| ratio (median of per-round ratios) | mode | value |", "|---|---|---:|"]
    for mode, pairs in report["ratios"].items():
        lines += [f"| {pair} | {mode} | {value:.2f}× |" for pair, value in pairs.items()]
    if report.get("outside_matrix_products"):
        lines += ["", "Fraction of a step outside the matrix products (the same products alone, same rounds):", "",
                  "| implementation | mode | fraction |", "|---|---|---:|"]
        for mode, fr in report["outside_matrix_products"].items():
            lines += [f"| {name} | {mode} | {100 * v:.0f}% |" for name, v in fr.items()]
    for name, n in ((AUTOBATCH, report.get("launches_first_batch")),
                    (AUTOBATCH_BY_LEVEL, report["data"].get("launches_by_level"))):
        if n:
            lines += ["", f"{name} on the first batch: {n['nodes']} recorded calls in {n['rounds']} rounds; "
                      f"batched launches: depth order {n['depth']}, agenda {n['agenda']}, treadle's default "
                      f"{n['default']}, against a lower bound of {n['lower_bound']} (the longest chain of "
                      f"dependent calls, summed over rounds)."]
    lines += ["", "Largest difference from the NumPy per-example reference on a few examples: "
              + ", ".join(f"{k} {v:.1e}" for k, v in report["checks"].items()) + "."]
    if report["missing"]:
        lines += ["", "Not measured (not installed, not available, or left out by an option): "
                  + ", ".join(report["missing"]) + "."]
    return "\n".join(lines) + "\n"


def dynet_version():
    from importlib import metadata
    try:
        return metadata.version("dyNET38")
    except metadata.PackageNotFoundError:
        return "unknown"


def main(argv=None):
    args = parse_args(argv)
    torch, dy = start_libraries(args)
    count = 2 if args.short else 4
    machine = common.machine_info()
    machine["versions"]["dynet"] = dynet_version() if dy is not None else None
    for workload in args.workloads:
        steps, checks, facts, launches, missing = globals()[workload](args, torch, dy, count)
        report = {"benchmark": f"autobatch_{workload}", "workload": workload, "label": args.label,
                  "batch": args.batch, "rounds": args.rounds, "steps_per_round": args.steps,
                  "treadle_threads": args.treadle_threads, "peer_threads": 1,
                  "dynet_strategy": args.dynet_strategy if dy is not None else None,
                  "machine": machine, "data": facts, "checks": checks, "launches_first_batch": launches,
                  "missing": sorted(set(missing)),
                  "load_average_start": os.getloadavg()}
        report["results"] = measure(steps, count, args)
        report["load_average_end"] = os.getloadavg()
        report["ratios"] = ratios(report["results"])
        report["outside_matrix_products"] = outside_gemm(report["results"])
        md = markdown(report)
        common.write_report(f"autobatch_{workload}", report, md, args.out_dir)
        print(md, flush=True)


if __name__ == "__main__":
    main()
