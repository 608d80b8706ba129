"""Shared by the benchmarks in bench/: timing, machine description and the
JSON + Markdown reports. Peers (NumPy, PyTorch, ...) are measured in the same
process as treadle, so ratios are meaningful on a noisy machine."""

import argparse
import datetime
import importlib
import json
import os
import pathlib
import platform
import statistics
import timeit

RESULTS_DIR = pathlib.Path(__file__).resolve().parent / "results"


def optional_import(name):
    """The module, or None when it is not installed (peers are optional)."""
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


def limit_threads(n):
    """Caps BLAS and OpenMP threads of every library at n. Must run before
    NumPy, treadle or PyTorch is imported."""
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(n)
    torch = optional_import("torch")
    if torch is not None:
        torch.set_num_threads(n)


def _loop_size(timer, min_seconds):
    """Calls per run so that one run lasts at least `min_seconds` (as
    `python -m timeit` does); the calibration doubles as a warm-up."""
    number = 1
    while True:
        elapsed = timer.timeit(number)
        if elapsed >= min_seconds or number >= 10**8:
            return number
        number = max(number * 2, int(number * min_seconds / max(elapsed, 1e-9) * 1.2))


def compare(fns, repeat=15, min_seconds=0.05):
    """Microseconds per call of each `fns[name]()`, measured in interleaved
    rounds: every round times each function once (rotating the order), so a
    busy spell on a shared machine slows all of them alike.

    Returns ({name: {"min", "median", "calls_per_run", "runs"}},
             {name: [per-round µs]})."""
    timers = {name: timeit.Timer(fn) for name, fn in fns.items()}
    numbers = {name: _loop_size(timer, min_seconds) for name, timer in timers.items()}
    names = list(fns)
    rounds = {name: [] for name in names}
    for r in range(repeat):
        for name in names[r % len(names):] + names[:r % len(names)]:
            rounds[name].append(timers[name].timeit(numbers[name]) / numbers[name] * 1e6)
    figures = {name: {"min": min(rounds[name]), "median": statistics.median(rounds[name]),
                      "calls_per_run": numbers[name], "runs": repeat} for name in names}
    return figures, rounds


def interleaved_rates(steps, batches, rounds, steps_per_round, size=len):
    """{name: [items/s per round]} of each `steps[name](batch)`: every round
    runs each step on the same `steps_per_round` batches, rotating the order
    from round to round, so a busy spell on a shared machine slows all of
    them alike. Each step first runs once on every batch the rounds time,
    untimed: work done once per new input (a trace, a loom's new op for a
    signature first seen in that batch) stays out of the rounds.
    `size(batch)` counts its items."""
    names = list(steps)
    used = sorted({(r * steps_per_round + k) % len(batches) for r in range(rounds) for k in range(steps_per_round)})
    for name in names:
        for i in used:
            steps[name](batches[i])
    rates = {name: [] for name in names}
    for r in range(rounds):
        chosen = [batches[(r * steps_per_round + k) % len(batches)] for k in range(steps_per_round)]
        for name in names[r % len(names):] + names[:r % len(names)]:
            t0 = timeit.default_timer()
            for b in chosen:
                steps[name](b)
            rates[name].append(sum(size(b) for b in chosen) / (timeit.default_timer() - t0))
    return rates


def round_ratio(rounds, a, b):
    """Median over rounds of a's time / b's time in the same round."""
    return statistics.median(x / y for x, y in zip(rounds[a], rounds[b]))


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def cpu_flags():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    flags = line.split(":", 1)[1].split()
                    return sorted(f for f in flags if f.startswith(("avx", "fma", "sse4")))
    except OSError:
        pass
    return []


def kernel_levels():
    """The SIMD level treadle's kernels run at and the kernels OpenBLAS chose:
    every report names both."""
    import treadle as td
    from treadle import _core
    isa = td.config.isa_info()
    return {"treadle_isa": isa["level"], "treadle_target": isa["target"],
            "treadle_isa_cap": os.environ.get("TREADLE_ISA") or None,
            "blas_kernels": _core.blas_config()[1],
            "openblas_coretype": os.environ.get("OPENBLAS_CORETYPE") or None}


def kernels_sentence(machine):
    """One sentence for a report's Markdown: the kernel levels of the run."""
    k = machine.get("kernels") or kernel_levels()
    cap = f", capped by TREADLE_ISA={k['treadle_isa_cap']}" if k.get("treadle_isa_cap") else ""
    return (f"Kernels: treadle {k['treadle_isa']} (Highway target {k['treadle_target']}{cap}); "
            f"OpenBLAS {k['blas_kernels']}.")


def machine_info():
    import numpy as np
    import treadle
    torch = optional_import("torch")
    info = {
        "cpu_model": cpu_model(),
        "cpu_flags": cpu_flags(),
        "kernels": kernel_levels(),
        "cores": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "versions": {
            "treadle": treadle.__version__,
            "numpy": np.__version__,
            "torch": torch.__version__ if torch else None,
        },
        "timestamp": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }
    if torch:
        info["torch_threads"] = torch.get_num_threads()
    return info


def fmt_us(value):
    if value is None:
        return "—"
    return f"{value:.2f}" if value < 100 else f"{value:.0f}"


def fmt_ratio(value):
    return "—" if value is None else f"{value:.2f}×"


def write_report(name, payload, markdown, out_dir=RESULTS_DIR):
    """Writes <name>.json and <name>.md under out_dir; returns their paths."""
    out_dir = pathlib.Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    json_path = out_dir / f"{name}.json"
    md_path = out_dir / f"{name}.md"
    json_path.write_text(json.dumps(payload, indent=2) + "\n")
    md_path.write_text(markdown)
    return json_path, md_path


def parse_benchmark_args(description, result_name, argv=None):
    """The options every timing benchmark takes (--repeat, --threads,
    --out-dir), checked; thread limits are applied before the libraries start."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--repeat", type=int, default=15, help="interleaved timing runs (default 15)")
    parser.add_argument("--threads", type=int, default=None,
                        help="BLAS/OpenMP threads for every library (default: each library's own default)")
    parser.add_argument("--out-dir", type=pathlib.Path, default=RESULTS_DIR,
                        help=f"where {result_name}.json/.md go (default bench/results)")
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    if args.threads is not None:
        if args.threads < 1:
            parser.error("--threads must be at least 1")
        limit_threads(args.threads)
    return args
