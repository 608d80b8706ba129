"""The dynamic-tree batching benchmark: a binary
TreeLSTM on the bundled SST-like trees, inference and training, for treadle's
Loom (schedules woven in the same process, and read from a schedule file),
treadle one tree at a time, and PyTorch (recursion per tree, and batching by
height) when it is installed.

    python bench/treelstm_bench.py --short          # a minute or two
    python bench/treelstm_bench.py                  # the full grid, JSON + Markdown + PNG
    python bench/treelstm_bench.py --train-epochs 5 # also the training run that must learn
    python bench/treelstm_bench.py --repeats 5      # each figure the median of 5 runs (the plot shows their range)
    python bench/treelstm_bench.py --plot-only bench/results/treelstm.json   # redraw a report's figure

Each implementation runs in its own process (so its peak memory is its own);
figures are trees per second, the Weaver's share of a step, peak memory, the
cost ratio against a batch of identically shaped trees, and the fraction of
this machine's measured sgemm peak.
"""

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

import common  # noqa: E402
from bench.treelstm.plot import plot, plot_same_process  # noqa: E402

BATCHES_FULL = [1, 32, 256, 1024]
BATCHES_SHORT = [1, 32, 256]
IMPLEMENTATIONS = ["treadle loom", "treadle loom (schedule file)", "treadle one tree at a time",
                   "torch recursive", "torch by height"]
TARGETS = {("inference", 1): 1000, ("inference", 256): 9000, ("training", 1): 250, ("training", 256): 4000}


# ---------------------------------------------------------------- workers

def _batches(trees, batch_size, start=0):
    i = start
    while True:
        if i + batch_size > len(trees):
            i = 0
        yield trees[i:i + batch_size]
        i += batch_size


def _measure(step, batches, seconds, min_steps=2):
    """Trees per second of `step(batch)` over consecutive batches (after a warm-up step)."""
    step(next(batches))
    done, steps, t0 = 0, 0, time.perf_counter()
    while steps < min_steps or time.perf_counter() - t0 < seconds:
        batch = next(batches)
        step(batch)
        done += len(batch)
        steps += 1
    return done / (time.perf_counter() - t0)


def worker(impl, batches, modes, seconds, limit):
    import numpy as np
    from bench.treelstm import data, model
    trees = data.load_trees(limit=limit)
    weights = model.initial_weights()
    results = {}
    extra = {}
    if impl.startswith("treadle"):
        import treadle as td
        from bench.treelstm.treadle_impl import TreeLSTM
        net = TreeLSTM(weights)
        schedule_file = None
        if impl == "treadle loom (schedule file)":
            schedule_file = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"treelstm-{os.getpid()}.tfrecord")
            t0 = time.perf_counter()
            td.loom.write_schedules(schedule_file, net.weave_each(trees))
            extra["schedule_file_write_s"] = time.perf_counter() - t0
            stored = td.loom.read_schedules(schedule_file)
            index = {id(t): k for k, t in enumerate(trees)}
        weave_time = [0.0]

        def schedule_for(batch):
            t0 = time.perf_counter()
            if impl == "treadle loom (schedule file)":
                s = [stored[index[id(t)]] for t in batch]
            else:
                s = net.weave(batch)
            weave_time[0] += time.perf_counter() - t0
            return s

        def infer(batch):
            net.infer(schedule_for(batch)).numpy()

        def train(batch):
            loss, _ = net.train(schedule_for(batch), [t.label for t in batch])
            float(loss)

        def one_at_a_time(step):
            def run(batch):
                for t in batch:
                    step([t])
            return run

        steps = {"inference": infer, "training": train}
        if impl == "treadle one tree at a time":
            steps = {m: one_at_a_time(f) for m, f in steps.items()}
        for mode in modes:
            for b in batches:
                weave_time[0] = 0.0
                t0 = time.perf_counter()
                rate = _measure(steps[mode], _batches(trees, b), seconds)
                total = time.perf_counter() - t0
                results[f"{mode}/{b}"] = {"trees_per_s": rate, "weaver_share": weave_time[0] / total}
        # Fold's cost ratio: random shapes vs identically shaped trees, same total size.
        if impl == "treadle loom":
            b = max(batches)
            rng = np.random.default_rng(1)
            same = data.same_shape_batch(trees, b, rng)
            random_batch = _size_matched_batch(trees, sum(t.size for t in same))
            for mode in modes:
                extra[f"cost_ratio/{mode}/{b}"] = _cost_ratio(steps[mode], random_batch, same)
        if schedule_file:
            os.unlink(schedule_file)
    else:
        import torch
        torch.set_num_threads(int(os.environ.get("TREELSTM_THREADS", os.cpu_count() or 1)))
        from bench.treelstm import torch_peers
        steps, _ = torch_peers.make_steps(weights)
        kind = "torch recursive" if impl == "torch recursive" else "torch by height"
        for mode in modes:
            for b in batches:
                results[f"{mode}/{b}"] = {"trees_per_s": _measure(steps[(kind, mode)], _batches(trees, b), seconds)}
    extra["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"results": results, "extra": extra}


def _size_matched_batch(trees, total_nodes):
    out, n = [], 0
    for t in trees[::-1]:
        if n >= total_nodes:
            break
        out.append(t)
        n += t.size
    return out


def _cost_ratio(step, random_batch, same, repeat=7):
    """Fold's cost ratio: seconds per node on the randomly shaped trees over
    seconds per node on the identically shaped ones. The two batches are
    timed alternately, best of `repeat` each, so a slow spell of a shared
    machine falls on both."""
    batches = (random_batch, same)
    for batch in batches:
        step(batch)
    best = [float("inf")] * 2
    for _ in range(repeat):
        for i, batch in enumerate(batches):
            t0 = time.perf_counter()
            step(batch)
            best[i] = min(best[i], time.perf_counter() - t0)
    nodes = [sum(t.size for t in batch) for batch in batches]
    return (best[0] / nodes[0]) / (best[1] / nodes[1])


# ---------------------------------------------------------------- training run

def training_run(epochs, batch_size, learning_rate, limit):
    """Adam on the whole file; loss and accuracy per epoch (on the training trees)."""
    import numpy as np
    from bench.treelstm import data, model
    from bench.treelstm.treadle_impl import TreeLSTM
    trees = data.load_trees(limit=limit)
    net = TreeLSTM(model.initial_weights(), learning_rate=learning_rate, optimizer="adam")
    rng = np.random.default_rng(0)
    labels = np.array([t.label for t in trees])
    majority = np.bincount(labels, minlength=data.CLASSES).max() / len(labels)
    curve = []
    for epoch in range(1, epochs + 1):
        order = rng.permutation(len(trees))
        losses, correct, t0 = [], 0, time.perf_counter()
        for start in range(0, len(trees), batch_size):
            batch = [trees[k] for k in order[start:start + batch_size]]
            loss, right = net.train(net.weave(batch), [t.label for t in batch])
            losses.append(float(loss) * len(batch))
            correct += int(right)
        curve.append({"epoch": epoch, "loss": sum(losses) / len(trees), "accuracy": correct / len(trees),
                      "seconds": time.perf_counter() - t0})
        print(f"epoch {epoch}: loss {curve[-1]['loss']:.4f}  accuracy {curve[-1]['accuracy']:.3f}  "
              f"({curve[-1]['seconds']:.1f} s)", flush=True)
    return {"curve": curve, "majority_class": majority, "batch_size": batch_size, "learning_rate": learning_rate}


# ---------------------------------------------------------------- parent

def sgemm_gflops():
    """This machine's sgemm throughput through treadle (1024^3, best of 5)."""
    import numpy as np
    import treadle as td
    a = td.constant(np.random.default_rng(0).random((1024, 1024), dtype=np.float32))
    td.matmul(a, a)
    best = min(_timed(lambda: td.matmul(a, a)) for _ in range(5))
    return 2 * 1024 ** 3 / best / 1e9


def _timed(fn):
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def run_worker(impl, batches, modes, seconds, limit):
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", impl, "--batches", ",".join(map(str, batches)),
           "--modes", ",".join(modes), "--seconds", str(seconds), "--limit", str(limit)]
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        print(f"[{impl}] failed:\n{res.stderr[-3000:]}", file=sys.stderr)
        return None
    return json.loads(res.stdout.strip().splitlines()[-1])


def repeated_worker(impl, batches, modes, seconds, limit, repeats):
    """`repeats` runs of an implementation, each in a fresh process, combined:
    each figure is the median, with every run's figure kept beside it."""
    runs = [run_worker(impl, batches, modes, seconds, limit) for _ in range(repeats)]
    runs = [r for r in runs if r is not None]
    if not runs:
        return None
    results = {}
    for key in runs[0]["results"]:
        per_run = [r["results"][key] for r in runs if key in r["results"]]
        combined = {"trees_per_s_runs": [p["trees_per_s"] for p in per_run]}
        for field in per_run[0]:
            combined[field] = statistics.median(p[field] for p in per_run)
        results[key] = combined
    extra = {key: statistics.median(r["extra"][key] for r in runs if key in r["extra"]) for key in runs[0]["extra"]}
    extra["peak_rss_mb"] = max(r["extra"].get("peak_rss_mb", 0) for r in runs)
    return {"results": results, "extra": extra, "runs": len(runs)}


def markdown(report):
    lines = []
    batches = report["batches"]
    modes = report["modes"]
    repeats = report.get("repeats", 1)
    spread = f"the median of {repeats} runs (lowest to highest in brackets)" if repeats > 1 else "one run"
    lines.append(f"TreeLSTM on {report['trees']} SST-like trees, trees per second (higher is better), {spread}; "
                 f"machine: {report['machine']['cpu_model']}, {report['machine']['cores']} cores; "
                 f"measured sgemm peak {report['sgemm_gflops']:.0f} GFLOP/s; load average "
                 f"{report['load_average_start'][0]:.1f} at the start, {report['load_average_end'][0]:.1f} at the end "
                 f"(other work on the machine slows every figure). {common.kernels_sentence(report['machine'])}")
    lines.append("")
    header = "| implementation | " + " | ".join(f"{m} b={b}" for m in modes for b in batches) + " | peak RSS MB |"
    lines += [header, "|---|" + "---:|" * (len(modes) * len(batches) + 1)]
    for impl, r in report["implementations"].items():
        if r is None:
            continue
        cells = [_cell(r["results"].get(f"{m}/{b}")) for m in modes for b in batches]
        lines.append(f"| {impl} | " + " | ".join(cells) + f" | {r['extra'].get('peak_rss_mb', 0):.0f} |")
    lines.append("")
    loom = report["implementations"].get("treadle loom")
    if loom:
        lines.append("| figure | value | target |")
        lines.append("|---|---:|---|")
        for (mode, b), target in TARGETS.items():
            if f"{mode}/{b}" in loom["results"]:
                v = loom["results"][f"{mode}/{b}"]["trees_per_s"]
                lines.append(f"| treadle loom {mode}, batch {b} | {v:.0f} trees/s | ≥ {target} |")
        single = report["implementations"].get("treadle one tree at a time")
        if single:
            for mode in modes:
                big = max(batches)
                if f"{mode}/{big}" in loom["results"] and f"{mode}/1" in single["results"]:
                    speedup = loom["results"][f"{mode}/{big}"]["trees_per_s"] / single["results"][f"{mode}/1"]["trees_per_s"]
                    lines.append(f"| speedup of batching (batch {big}) over one tree at a time, {mode} | "
                                 f"{speedup:.1f}× | ≥ 30× |")
        for key, v in loom["extra"].items():
            if key.startswith("cost_ratio/"):
                _, mode, b = key.split("/")
                lines.append(f"| cost ratio (random vs identical shapes, batch {b}), {mode} | {v:.2f} | ≤ 1.1 |")
        for mode in modes:
            b = 256 if 256 in batches else max(batches)
            share = loom["results"].get(f"{mode}/{b}", {}).get("weaver_share")
            if share is not None:
                lines.append(f"| Weaver's share of a batch-{b} {mode} step (woven in process) | {share * 100:.1f}% | ≤ 10% |")
        filed = report["implementations"].get("treadle loom (schedule file)")
        if filed:
            b = 256 if 256 in batches else max(batches)
            share = filed["results"].get(f"inference/{b}", {}).get("weaver_share")
            if share is not None:
                lines.append(f"| schedule reading + merging share of a batch-{b} inference step (from a file) | "
                             f"{share * 100:.1f}% | ≤ 10% |")
        for mode in modes:
            b = max(batches)
            v = loom["results"].get(f"{mode}/{b}", {}).get("trees_per_s")
            if v:
                frac = v * report["flops_per_tree"] * (3 if mode == "training" else 1) / (report["sgemm_gflops"] * 1e9)
                lines.append(f"| fraction of sgemm peak, {mode} batch {b} | {frac * 100:.0f}% | — |")
    if report.get("training"):
        tr = report["training"]
        lines.append("")
        lines.append(f"Training run: Adam (learning rate {tr['learning_rate']}), batch {tr['batch_size']}, "
                     f"majority class {tr['majority_class'] * 100:.1f}%. Loss and accuracy are measured on the "
                     "training trees while training (there is no held-out set): training accuracy, not test accuracy.")
        lines.append("")
        lines.append("| epoch | training loss | training accuracy | seconds |")
        lines.append("|---:|---:|---:|---:|")
        for row in tr["curve"]:
            lines.append(f"| {row['epoch']} | {row['loss']:.4f} | {row['accuracy'] * 100:.1f}% | {row['seconds']:.1f} |")
    return "\n".join(lines) + "\n"


def _cell(result):
    if result is None:
        return "—"
    runs = result.get("trees_per_s_runs", [])
    if len(runs) > 1:
        return f"{result['trees_per_s']:.0f} ({min(runs):.0f}–{max(runs):.0f})"
    return f"{result['trees_per_s']:.0f}"


def redraw(report, path):
    """Draws a saved report of this benchmark or of treelstm_same_process.py;
    None when matplotlib is missing."""
    if report.get("benchmark") == "treelstm_same_process":
        return plot_same_process(report, path)
    return plot(report, path)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--short", action="store_true", help="the quick version (about a minute or two)")
    parser.add_argument("--seconds", type=float, default=None, help="measuring time per configuration")
    parser.add_argument("--limit", type=int, default=None, help="use only the first N trees")
    parser.add_argument("--train-epochs", type=int, default=0, help="also run the training run (0: skip)")
    parser.add_argument("--out-dir", default=str(common.RESULTS_DIR))
    parser.add_argument("--threads", type=int, default=None,
                        help="BLAS/OpenMP threads for every implementation (default: the libraries' own)")
    parser.add_argument("--repeats", type=int, default=1,
                        help="runs of each implementation, each in a fresh process; figures are their median")
    parser.add_argument("--plot-only", metavar="JSON",
                        help="only redraw the figure of a saved report (of this benchmark or of "
                             "treelstm_same_process.py), beside it as .png")
    parser.add_argument("--worker")
    parser.add_argument("--batches", help="comma-separated batch sizes (default: the full or short grid)")
    parser.add_argument("--modes", default="inference,training")
    args = parser.parse_args()
    if args.threads:
        os.environ["TREELSTM_THREADS"] = str(args.threads)
        for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ[var] = str(args.threads)
    if args.plot_only:
        with open(args.plot_only) as f:
            report = json.load(f)
        drawn = redraw(report, os.path.splitext(args.plot_only)[0] + ".png")
        if drawn is None:
            sys.exit("--plot-only needs matplotlib: .venv/bin/pip install matplotlib")
        print(f"drew {drawn}")
        return
    if args.worker:
        out = worker(args.worker, [int(b) for b in args.batches.split(",")], args.modes.split(","),
                     args.seconds, args.limit)
        print(json.dumps(out))
        return
    batches = BATCHES_SHORT if args.short else BATCHES_FULL
    if args.batches:
        batches = [int(b) for b in args.batches.split(",")]
    seconds = args.seconds or (1.0 if args.short else 4.0)
    limit = args.limit or (2048 if args.short else 8192)
    modes = ["inference", "training"]
    impls = list(IMPLEMENTATIONS)
    torch = common.optional_import("torch")
    if torch is None:
        print("PyTorch is not installed: its rows are left out (pip install torch==2.13.0 to add them).")
        impls = [i for i in impls if not i.startswith("torch")]
    if args.short:
        impls = [i for i in impls if i != "treadle loom (schedule file)"]
    report = {"benchmark": "treelstm", "machine": common.machine_info(), "batches": batches, "modes": modes,
              "trees": limit, "implementations": {}, "threads": args.threads, "repeats": args.repeats,
              "load_average_start": os.getloadavg()}
    from bench.treelstm import data, model
    trees = data.load_trees(limit=limit)
    report["flops_per_tree"] = sum(model.flops_per_tree(t) for t in trees) / len(trees)
    report["sgemm_gflops"] = sgemm_gflops()
    for impl in impls:
        b = batches if not impl.endswith("one tree at a time") and impl != "torch recursive" else [1] + \
            ([32] if impl == "torch recursive" else [])
        print(f"measuring {impl} ...", flush=True)
        report["implementations"][impl] = repeated_worker(impl, b, modes, seconds, limit, args.repeats)
    report["load_average_end"] = os.getloadavg()
    if args.train_epochs:
        report["training"] = training_run(args.train_epochs, 64, 0.01, None)
    md = markdown(report)
    name = "treelstm_short" if args.short else "treelstm"
    if not args.short or args.out_dir != str(common.RESULTS_DIR):
        common.write_report(name, report, md, args.out_dir)
        png = plot(report, os.path.join(args.out_dir, f"{name}.png"))
        print(f"drew {png}" if png else "(matplotlib is not installed: no figure drawn)")
    print(md)


if __name__ == "__main__":
    main()
