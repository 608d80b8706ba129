"""A short race, in plain words: a TreeLSTM over SST-like sentence trees,
treadle's Loom against PyTorch batched by hand (all nodes of one tree height
at a time), inference and training at batch 256, timed in one process in
alternating rounds. `bash scripts/demo.sh` runs it after `treadle demo`.

    python bench/demo_race.py [--rounds 3] [--steps 2] [--batch 256]

Without PyTorch, treadle's figures are printed alone, with how to install it.
For the full benchmark: bench/treelstm_bench.py and bench/treelstm_same_process.py.
"""

import argparse
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

import common  # noqa: E402
from bench.treelstm import data, model  # noqa: E402
from bench.treelstm_same_process import treadle_steps, _batches, _rate  # noqa: E402

MODES = {"inference": "inference (predicting)", "training": "training (forward, backward, update)"}


def progress(total, desc):
    """A progress bar on a terminal, nothing elsewhere (no half-drawn bars in logs)."""
    from tqdm import tqdm
    return tqdm(total=total, desc=desc, unit="batch", leave=False, disable=None)


def race(steps, trees, batch, rounds, steps_per_round, desc):
    """{name: [trees/s per round]}, the implementations alternating round by round."""
    names = list(steps)
    feeds = {name: _batches(trees, batch) for name in names}
    per_round = {name: [] for name in names}
    with progress(len(names) * (1 + rounds * steps_per_round), desc) as bar:
        for name in names:  # warm-up: tracing, first allocations
            steps[name](next(feeds[name]))
            bar.update(1)
        for r in range(rounds):
            for name in names[r % len(names):] + names[:r % len(names)]:
                per_round[name].append(_rate(steps[name], feeds[name], steps_per_round))
                bar.update(steps_per_round)
    return per_round


def machine_words():
    info = common.machine_info()
    load = os.getloadavg()[0]
    busy = "otherwise idle" if load < info["cores"] * 0.5 else f"busy: load average {load:.1f}, figures are lower"
    return f"{info['cpu_model']}, {info['cores']} cores ({busy})"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds per mode")
    parser.add_argument("--steps", type=int, default=2, help="batches per implementation per round")
    parser.add_argument("--batch", type=int, default=256, help="trees per batch")
    parser.add_argument("--limit", type=int, default=2048, help="use only the first N trees of the data set")
    args = parser.parse_args()
    if args.rounds < 1 or args.steps < 1 or args.batch < 1:
        parser.error("--rounds, --steps and --batch must be at least 1")

    trees = data.load_trees(limit=args.limit)
    weights = model.initial_weights()
    print(f"The race: a TreeLSTM (hidden size {model.HIDDEN}) over {len(trees)} sentence trees of different shapes, "
          f"{args.batch} trees per batch, on {machine_words()}.", flush=True)
    _, steps = treadle_steps("treadle", weights, fused=True)
    torch = common.optional_import("torch")
    if torch is not None:
        from bench.treelstm import torch_peers
        peer_steps, _ = torch_peers.make_steps(weights)
        for mode in MODES:
            steps[("PyTorch", mode)] = peer_steps[("torch by height", mode)]
    for mode, words in MODES.items():
        mine = {name: fn for (name, m), fn in steps.items() if m == mode}
        per_round = race(mine, trees, args.batch, args.rounds, args.steps, f"measuring {mode}")
        ours = statistics.median(per_round["treadle"])
        if "PyTorch" in per_round:
            theirs = statistics.median(per_round["PyTorch"])
            ratio = statistics.median(x / y for x, y in zip(per_round["treadle"], per_round["PyTorch"]))
            verdict = f"{ratio:.2f}× faster" if ratio >= 1 else f"{1 / ratio:.2f}× slower"
            print(f"  {words}: treadle ran {ours:,.0f} trees/s, PyTorch batched by hand {theirs:,.0f}: {verdict}",
                  flush=True)
        else:
            print(f"  {words}: treadle ran {ours:,.0f} trees/s", flush=True)
    if torch is None:
        print("PyTorch is not installed, so treadle ran alone. To race it: "
              ".venv/bin/pip install torch --index-url https://download.pytorch.org/whl/cpu")
    print(f"(medians of {args.rounds} alternating rounds of {args.steps} batches; the full benchmark: "
          "python bench/treelstm_bench.py)")


if __name__ == "__main__":
    main()
