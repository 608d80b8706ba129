"""Eager dispatch and execution: `a + b` on 2x2 float32 and a 256x256 float32
matmul, for treadle, NumPy and PyTorch (when installed), in one process.

    python bench/eager_ops.py [--repeat 15] [--threads N] [--out-dir bench/results]

Writes bench/results/eager_ops.json (machine, versions, every figure) and
eager_ops.md (the table), and prints the table. 
"""

import os
import pathlib
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

# numpy, treadle and torch are imported after the command line is read: thread
# counts must be in the environment before their BLAS libraries start.

STAT = "median"  # the figure compared with targets and peers; min is recorded too


def workloads(torch):
    """(name, description, {library: fn}, target) for each measurement.
    `target(figures, ratios)` returns (text, met)."""
    import numpy as np

    import treadle as td

    rng = np.random.default_rng(0)
    small = [rng.standard_normal((2, 2)).astype(np.float32) for _ in range(2)]
    big = [rng.standard_normal((256, 256)).astype(np.float32) for _ in range(2)]

    def libraries(a, b, op):
        ta, tb = td.constant(a), td.constant(b)
        fns = {"treadle": lambda: op(ta, tb), "numpy": lambda: op(a, b)}
        if torch is not None:
            pa, pb = torch.from_numpy(a.copy()), torch.from_numpy(b.copy())
            fns["torch"] = lambda: op(pa, pb)
        # Same answer everywhere before anything is timed.
        expected = op(a, b)
        for lib, fn in fns.items():
            got = np.asarray(fn())
            np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4, err_msg=lib)
        return fns

    def absolute(limit_us):
        def check(figures, ratios):
            value = figures["treadle"][STAT]
            return f"≤ {limit_us} µs", value <= limit_us
        return check

    def relative_to_numpy(max_ratio):
        def check(figures, ratios):
            return f"≤ {max_ratio:.2f}× NumPy", ratios["treadle/numpy"] <= max_ratio
        return check

    return [
        ("add 2x2 float32", "eager `a + b`", libraries(*small, lambda x, y: x + y), absolute(1.5)),
        ("matmul 256x256 float32", "eager `a @ b`", libraries(*big, lambda x, y: x @ y), relative_to_numpy(1.10)),
    ]


def run(repeat):
    torch = common.optional_import("torch")
    results = []
    for name, description, fns, target in workloads(torch):
        figures, rounds = common.compare(fns, repeat=repeat)
        ratios = {f"treadle/{lib}": common.round_ratio(rounds, "treadle", lib) for lib in figures if lib != "treadle"}
        target_text, met = target(figures, ratios)
        results.append({"name": name, "code": description, "us_per_call": figures, "ratios": ratios,
                        "target": target_text, "meets_target": met})
        print(f"  measured {name}", file=sys.stderr)
    return torch, results


def markdown(results, machine, torch):
    v = machine["versions"]
    lines = [
        f"Eager ops, µs per call ({STAT} of {results[0]['us_per_call']['treadle']['runs']} interleaved runs; "
        "lower is better). Ratios: median over runs of treadle's time / the peer's in the same run.",
        f"Machine: {machine['cpu_model']}, {machine['cores']} cores; Python {machine['python']}, "
        f"treadle {v['treadle']}, NumPy {v['numpy']}, "
        + (f"PyTorch {v['torch']}" if torch else "PyTorch not installed (pip install torch to compare)")
        + f"; threads: {machine['threads']}.",
        common.kernels_sentence(machine),
        "",
        "| measurement | treadle | NumPy | PyTorch | treadle / NumPy | treadle / PyTorch | target | met |",
        "| --- | ---: | ---: | ---: | ---: | ---: | --- | --- |",
    ]
    for r in results:
        f = r["us_per_call"]
        lines.append(
            f"| {r['name']} ({r['code']}) | {common.fmt_us(f['treadle'][STAT])} | {common.fmt_us(f['numpy'][STAT])} "
            f"| {common.fmt_us(f['torch'][STAT]) if 'torch' in f else '—'} "
            f"| {common.fmt_ratio(r['ratios'].get('treadle/numpy'))} "
            f"| {common.fmt_ratio(r['ratios'].get('treadle/torch'))} | {r['target']} "
            f"| {'yes' if r['meets_target'] else 'no'} |")
    return "\n".join(lines) + "\n"


def main(argv=None):
    args = common.parse_benchmark_args(__doc__.split("\n\n")[0], "eager_ops", argv)
    machine = common.machine_info()
    machine["threads"] = args.threads or "library defaults"
    torch, results = run(args.repeat)
    if torch is None:
        print("note: PyTorch is not installed; reporting treadle and NumPy only", file=sys.stderr)
    table = markdown(results, machine, torch)
    payload = {"benchmark": "eager_ops", "statistic": STAT, "machine": machine,
               "peers_missing": [] if torch else ["torch"], "results": results}
    json_path, md_path = common.write_report("eager_ops", payload, table, args.out_dir)
    print(table)
    print(f"wrote {json_path} and {md_path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
