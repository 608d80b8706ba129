"""All the automatic-batching benchmarks in one command, at each instruction
level of the machine, into bench/results/autobatch-<level>/ and a summary
bench/results/autobatch.md:

    python bench/autobatch_suite.py                 # native and AVX2 levels, 5 rounds
    python bench/autobatch_suite.py --short         # a quick look (3 rounds of 1 batch, less data)
    python bench/autobatch_suite.py --rounds 9 --levels native --label quiet

At each level it runs bench/autobatch_peers.py, one batch per
implementation per round (a process each, as DyNet's batching strategy is
fixed per process):
1. the three workloads at one thread, DyNet's agenda strategy;
2. the binary TreeLSTM again with DyNet's depth strategy;
3. the three workloads with treadle at two threads (peers still at one).
The AVX2 level caps every library's kernels: TREADLE_ISA=avx2 and
OPENBLAS_CORETYPE=Haswell for treadle and NumPy, ATEN_CPU_CAPABILITY=avx2
and MKL_ENABLE_INSTRUCTIONS=AVX2 for PyTorch (DyNet's wheel is built for
AVX2 already)."""

import argparse
import json
import os
import pathlib
import subprocess
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import common  # noqa: E402

RESULTS = HERE / "results"
LEVELS = {
    "native": {},
    "avx2": {"TREADLE_ISA": "avx2", "OPENBLAS_CORETYPE": "Haswell",
             "ATEN_CPU_CAPABILITY": "avx2", "MKL_ENABLE_INSTRUCTIONS": "AVX2"},
}
RUNS = [  # (name of the run, arguments of bench/autobatch_peers.py, peers it leaves out)
    ("one thread, DyNet agenda", [], set()),
    ("one thread, DyNet depth", ["--workloads", "treelstm", "--dynet-strategy", "depth", "--no-torch"],
     {"PyTorch batched by hand"}),
    ("treadle at two threads", ["--treadle-threads", "2", "--no-dynet"], {"DyNet"}),
]


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--levels", default="native,avx2", help="instruction levels, of " + ", ".join(LEVELS))
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds of each run (default 5)")
    parser.add_argument("--short", action="store_true", help="3 rounds of 1 batch on less data")
    parser.add_argument("--label", default="loaded", help="how the machine was: 'loaded' or 'quiet'")
    parser.add_argument("--out-dir", type=pathlib.Path, default=RESULTS)
    parser.add_argument("--summary-only", action="store_true",
                        help="run nothing: write autobatch.md from the reports already in --out-dir")
    args = parser.parse_args(argv)
    args.levels = args.levels.split(",")
    unknown = [lv for lv in args.levels if lv not in LEVELS]
    if unknown:
        parser.error(f"unknown levels {unknown}; choose from {list(LEVELS)}")
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    return args


def run_dir(args, level, k):
    return args.out_dir / f"autobatch-{level}" / f"run{k + 1}"


def read_reports(out):
    return {p.stem[len("autobatch_"):]: json.loads(p.read_text()) for p in sorted(out.glob("*.json"))}


def run_level(level, args):
    """Runs every run of RUNS at `level` (or, with --summary-only, reads
    their reports); returns {run name: {workload: report}}."""
    if args.summary_only:
        return {name: read_reports(run_dir(args, level, k)) for k, (name, _, _) in enumerate(RUNS)
                if run_dir(args, level, k).exists()}
    env = dict(os.environ, **LEVELS[level])
    reports = {}
    for k, (name, extra, _) in enumerate(RUNS):
        out = run_dir(args, level, k)
        cmd = [sys.executable, str(HERE / "autobatch_peers.py"), "--rounds", str(args.rounds), "--steps", "1",
               "--label", args.label, "--out-dir", str(out)] + (["--short"] if args.short else []) + extra
        print(f"[{level}] {name}: {' '.join(cmd[1:])}", flush=True)
        t0 = time.time()
        subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)
        print(f"[{level}] {name}: {time.time() - t0:.0f} s", flush=True)
        reports[name] = read_reports(out)
    return reports


def summary_lines(level, reports):
    """The Markdown rows of one level: every ratio of every run."""
    lines = []
    for run, by_workload in reports.items():
        for workload, r in by_workload.items():
            for mode, pairs in r["ratios"].items():
                for pair, value in pairs.items():
                    lines.append(f"| {level} | {workload} | {run} | {mode} | {pair} | {value:.2f}× |")
    return lines


def rates_lines(level, reports):
    lines = []
    for run, by_workload in reports.items():
        for workload, r in by_workload.items():
            for mode, entries in r["results"].items():
                for name, e in entries.items():
                    lines.append(f"| {level} | {workload} | {run} | {mode} | {name} | {e['per_second']:.0f} |")
    return lines


def main(argv=None):
    args = parse_args(argv)
    ratio_rows, rate_rows, notes = [], [], []
    for level in args.levels:
        if level == "avx2" and "native" in args.levels and "avx512f" not in common.cpu_flags():
            notes.append("- avx2: not run separately: this CPU has no AVX-512, so the native level is AVX2.")
            continue
        reports = run_level(level, args)
        if not reports:
            notes.append(f"- {level}: no reports.")
            continue
        ratio_rows += summary_lines(level, reports)
        rate_rows += rates_lines(level, reports)
        first = next(iter(next(iter(reports.values())).values()))
        m = first["machine"]
        notes.append(f"- {level}: {m['kernels']['treadle_isa']} kernels in treadle, OpenBLAS "
                     f"{m['kernels']['blas_kernels']}; load average {first['load_average_start'][0]:.1f}.")
        for run, by_workload in reports.items():
            for workload, r in by_workload.items():
                for what, n in (("", r.get("launches_first_batch")),
                                ("level by level, ", r["data"].get("launches_by_level"))):
                    if n and run == RUNS[0][0]:
                        notes.append(f"- {level}, {workload}, {what}first batch: {n['nodes']} recorded calls in "
                                     f"{n['rounds']} rounds; launches: depth {n['depth']}, agenda {n['agenda']}, "
                                     f"default {n['default']}, lower bound {n['lower_bound']}.")
                if r.get("outside_matrix_products"):
                    for mode, fr in r["outside_matrix_products"].items():
                        notes.append(f"- {level}, {workload} ({run}), {mode}: outside the matrix products: "
                                     + ", ".join(f"{k} {100 * v:.0f}%" for k, v in fr.items()) + ".")
                left_out = next(lo for name, _, lo in RUNS if name == run)
                missing = [m for m in r["missing"] if m not in left_out]
                if missing:
                    notes.append(f"- {level}, {workload} ({run}): not measured: {', '.join(missing)}.")
    md = [f"# Automatic batching, every run ({args.label})", "",
          f"Made by `python bench/autobatch_suite.py --rounds {args.rounds}"
          + (" --short" if args.short else "") + f" --levels {','.join(args.levels)}`. Each run is one process; "
          "ratios are medians of per-round ratios within it. Per-run details: "
          "`autobatch-<level>/run<k>/autobatch_<workload>.md`.", "", *notes, "",
          "| level | workload | run | mode | ratio | value |", "|---|---|---|---|---|---:|", *ratio_rows, "",
          "| level | workload | run | mode | implementation | examples/s |", "|---|---|---|---|---|---:|", *rate_rows]
    path = args.out_dir / "autobatch.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(md) + "\n")
    print("\n".join(md))


if __name__ == "__main__":
    main()
