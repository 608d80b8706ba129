"""The binary TreeLSTM, treadle's bulk-woven Loom and
PyTorch batched by height, timed in ONE process in alternating rounds: on a
shared machine a busy spell slows both alike, so the per-round ratio is the
figure to trust (bench/treelstm_bench.py runs each implementation in its own
process, which measures peak memory but lets load fall on one side only).

    .venv/bin/python bench/treelstm_same_process.py --batches 256,1024
        # -> bench/results/treelstm-avx2/treelstm_same_process.{json,md}

Each round times `--steps` consecutive batches of each implementation
(treadle's weaving included), the order rotating from round to round. The
report gives, per mode and batch size, the median trees/s of each side, the
median of the per-round ratios and treadle's fraction of the sgemm-bound
limit (the forward pass's matrix products at this machine's measured sgemm
rate; a training step counts three times the forward FLOPs). With
--fusion-ab a second treadle model, planned with elementwise fusion off,
runs in the same rounds: the fused/unfused per-round ratio measures the
fusion pass (src/cpp/graph/elementwise_fusion.h). With --record-ab, the
same treadle model also runs inference eagerly, with and without a
GradientTape watching its weights: watched, the loom runs its ops' training
functions and saves what a backward pass reads (as every inference did
before LoomRun learned when nothing reads its record); the per-round ratio
of the two measures running the forward functions instead.
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


def _batches(trees, size):
    i = 0
    while True:
        if i + size > len(trees):
            i = 0
        yield trees[i:i + size]
        i += size


def _rate(step, batches, steps):
    done, t0 = 0, time.perf_counter()
    for _ in range(steps):
        batch = next(batches)
        step(batch)
        done += len(batch)
    return done / (time.perf_counter() - t0)


def measure(steps, trees, batch, rounds, steps_per_round):
    """{name: [trees/s per round]} for the step functions in `steps`."""
    names = list(steps)
    feeds = {name: _batches(trees, batch) for name in names}
    for name in names:  # warm-up: tracing, first allocations
        steps[name](next(feeds[name]))
    per_round = {name: [] for name in names}
    for r in range(rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            per_round[name].append(_rate(steps[name], feeds[name], steps_per_round))
    return per_round


def treadle_steps(name, weights, fused):
    """The step functions of a TreeLSTM whose functions are planned (on their
    first run, here) with elementwise fusion on or off."""
    from treadle import _core
    from bench.treelstm.treadle_impl import TreeLSTM
    from bench.treelstm import data
    before = _core.elementwise_fusion_enabled()
    _core.set_elementwise_fusion(fused)
    try:
        net = TreeLSTM(weights)
        warm = data.load_trees(limit=2)
        net.infer(net.weave(warm)).numpy()
        net.train(net.weave(warm), [t.label for t in warm])
    finally:
        _core.set_elementwise_fusion(before)
    return net, {
        (name, "inference"): lambda b: net.infer(net.weave(b)).numpy(),
        (name, "training"): lambda b: float(net.train(net.weave(b), [t.label for t in b])[0]),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", default="256,1024")
    parser.add_argument("--modes", default="inference,training")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--steps", type=int, default=4, help="batches per implementation per round")
    parser.add_argument("--limit", type=int, default=8192, help="use only the first N trees")
    parser.add_argument("--out-dir", default=os.path.join(common.RESULTS_DIR, "treelstm-avx2"))
    parser.add_argument("--fusion-ab", action="store_true",
                        help="also time a treadle model planned without elementwise fusion")
    parser.add_argument("--record-ab", action="store_true",
                        help="also time inference with the loom's record returned (its training forward)")
    args = parser.parse_args()
    if args.rounds < 1 or args.steps < 1:
        parser.error("--rounds and --steps must be at least 1")
    batches = [int(b) for b in args.batches.split(",")]
    modes = args.modes.split(",")

    from bench.treelstm import data, model
    from bench.treelstm_bench import sgemm_gflops
    trees = data.load_trees(limit=args.limit)
    weights = model.initial_weights()
    flops_per_tree = sum(model.flops_per_tree(t) for t in trees) / len(trees)
    steps = {}
    variants = [("treadle", True)] + ([("treadle unfused", False)] if args.fusion_ab else [])
    for name, fused in variants:
        net, net_steps = treadle_steps(name, weights, fused)
        steps.update(net_steps)
        if args.record_ab and name == "treadle":
            steps[("treadle eager", "inference")] = lambda b, net=net: net.infer_eagerly(net.weave(b)).numpy()
            steps[("treadle eager, taped", "inference")] = lambda b, net=net: net.infer_eagerly(
                net.weave(b), record=True).numpy()
    torch = common.optional_import("torch")
    if torch is None:
        print("PyTorch is not installed: only treadle's figures are reported.")
    else:
        from bench.treelstm import torch_peers
        peer_steps, _ = torch_peers.make_steps(weights)
        steps[("torch", "inference")] = peer_steps[("torch by height", "inference")]
        steps[("torch", "training")] = peer_steps[("torch by height", "training")]

    report = {"benchmark": "treelstm_same_process", "machine": common.machine_info(), "trees": len(trees),
              "rounds": args.rounds, "steps_per_round": args.steps, "load_average_start": os.getloadavg(),
              "flops_per_tree": flops_per_tree, "sgemm_gflops": sgemm_gflops(), "results": {}}
    for mode in modes:
        for b in batches:
            mine = {name: fn for (name, m), fn in steps.items() if m == mode}
            per_round = measure(mine, trees, b, args.rounds, args.steps)
            entry = {name: {"trees_per_s": statistics.median(v), "rounds": v} for name, v in per_round.items()}
            if "torch" in per_round:
                entry["ratio"] = statistics.median(x / y for x, y in zip(per_round["treadle"], per_round["torch"]))
            if "treadle eager, taped" in per_round:
                entry["record_ratio"] = statistics.median(
                    x / y for x, y in zip(per_round["treadle eager"], per_round["treadle eager, taped"]))
            if "treadle unfused" in per_round:
                entry["fusion_ratio"] = statistics.median(
                    x / y for x, y in zip(per_round["treadle"], per_round["treadle unfused"]))
            flops = flops_per_tree * (3 if mode == "training" else 1)
            entry["sgemm_fraction"] = entry["treadle"]["trees_per_s"] * flops / (report["sgemm_gflops"] * 1e9)
            report["results"][f"{mode}/{b}"] = entry
            print(f"{mode} b={b}: " + ", ".join(f"{k} {v['trees_per_s']:.0f}" for k, v in entry.items()
                                               if isinstance(v, dict))
                  + (f", ratio {entry['ratio']:.2f}x" if "ratio" in entry else "")
                  + (f", fused/unfused {entry['fusion_ratio']:.3f}" if "fusion_ratio" in entry else "")
                  + (f", forward/training-forward {entry['record_ratio']:.3f}" if "record_ratio" in entry else "")
                  + f", sgemm fraction {entry['sgemm_fraction'] * 100:.0f}%", flush=True)
    report["load_average_end"] = os.getloadavg()
    md = markdown(report)
    common.write_report("treelstm_same_process", report, md, args.out_dir)
    print(md)


def markdown(report):
    lines = [f"TreeLSTM, treadle (bulk-woven Loom, weaving included) and PyTorch by height in one process, "
             f"{report['rounds']} alternating rounds of {report['steps_per_round']} batches each; trees/s are "
             f"medians over rounds, the ratio the median of per-round ratios. Machine: "
             f"{report['machine']['cpu_model']}, {report['machine']['cores']} cores; sgemm "
             f"{report['sgemm_gflops']:.0f} GFLOP/s; load average {report['load_average_start'][0]:.1f} at the "
             f"start, {report['load_average_end'][0]:.1f} at the end. {common.kernels_sentence(report['machine'])}",
             "", "| mode | batch | treadle trees/s | PyTorch trees/s | ratio | fraction of sgemm-bound limit "
             "| treadle unfused trees/s | fused / unfused |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for key, e in report["results"].items():
        mode, b = key.split("/")
        torch_rate = f"{e['torch']['trees_per_s']:.0f}" if "torch" in e else "—"
        ratio = f"{e['ratio']:.2f}×" if "ratio" in e else "—"
        unfused = f"{e['treadle unfused']['trees_per_s']:.0f}" if "treadle unfused" in e else "—"
        fusion = f"{e['fusion_ratio']:.3f}" if "fusion_ratio" in e else "—"
        lines.append(f"| {mode} | {b} | {e['treadle']['trees_per_s']:.0f} | {torch_rate} | {ratio} | "
                     f"{e['sgemm_fraction'] * 100:.0f}% | {unfused} | {fusion} |")
    ab = [(k, e) for k, e in report["results"].items() if "record_ratio" in e]
    if ab:
        lines += ["", "Eager inference: the loom running its ops' forward functions (no tape) against their "
                  "training functions (a GradientTape watching the weights), same rounds:", "",
                  "| mode | batch | forward trees/s | training-forward trees/s | ratio |", "|---|---:|---:|---:|---:|"]
        for key, e in ab:
            mode, b = key.split("/")
            lines.append(f"| {mode} | {b} | {e['treadle eager']['trees_per_s']:.0f} | "
                         f"{e['treadle eager, taped']['trees_per_s']:.0f} | {e['record_ratio']:.3f} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
