"""The 16-bit floats and int8 against float32 and NumPy: eager add, tanh and
matmul and the casts, on 1M elements (matmul 256x256), µs per call.

    python bench/narrow_dtypes.py [--repeat 15] [--threads N] [--out-dir bench/results]

treadle computes float16/bfloat16 in float32 and rounds once (scalar C++
conversions, no SIMD kernels yet), so the figures show what that costs next
to float32 and next to NumPy's float16. Writes narrow_dtypes.json and .md.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

STAT = "median"


def workloads():
    """(name, {library: fn}) for each measurement; every library's answer is
    checked against NumPy's before anything is timed."""
    import numpy as np

    import treadle as td

    rng = np.random.default_rng(0)
    n = 1 << 20
    x32, y32 = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    m32 = [rng.standard_normal((256, 256)).astype(np.float32) for _ in range(2)]
    i8 = [rng.integers(-100, 100, n).astype(np.int8) for _ in range(2)]
    out = []
    for np_dtype, td_dtype in [(np.float32, td.float32), (np.float16, td.float16)]:
        x, y = x32.astype(np_dtype), y32.astype(np_dtype)
        tx, ty = td.constant(x), td.constant(y)
        a, b = (m.astype(np_dtype) for m in m32)
        ta, tb = td.constant(a), td.constant(b)
        name = td_dtype.name
        out.append((f"add 1M {name}", {"treadle": lambda tx=tx, ty=ty: tx + ty, "numpy": lambda x=x, y=y: x + y}))
        out.append((f"tanh 1M {name}", {"treadle": lambda tx=tx: td.tanh(tx), "numpy": lambda x=x: np.tanh(x)}))
        out.append((f"matmul 256x256 {name}", {"treadle": lambda ta=ta, tb=tb: td.matmul(ta, tb),
                                               "numpy": lambda a=a, b=b: a @ b}))
    tx32 = td.constant(x32)
    out.append(("cast 1M float32 -> float16", {"treadle": lambda: td.cast(tx32, td.float16),
                                               "numpy": lambda: x32.astype(np.float16)}))
    tx16 = td.constant(x32.astype(np.float16))
    out.append(("cast 1M float16 -> float32", {"treadle": lambda: td.cast(tx16, td.float32),
                                               "numpy": lambda: x32.astype(np.float16).astype(np.float32)}))
    ti = [td.constant(v) for v in i8]
    out.append(("add 1M int8", {"treadle": lambda: ti[0] + ti[1], "numpy": lambda: i8[0] + i8[1]}))
    for name, fns in out:
        want = np.asarray(fns["numpy"]()).astype(np.float64)
        got = np.asarray(fns["treadle"]()).astype(np.float64)
        np.testing.assert_allclose(got, want, rtol=2e-2, atol=2e-2, err_msg=name)
    # The float16 cast reference above includes NumPy's own float32 -> float16; time only the widening.
    x16 = x32.astype(np.float16)
    out[-2][1]["numpy"] = lambda: x16.astype(np.float32)
    return out


def main(argv=None):
    args = common.parse_benchmark_args(__doc__.split("\n\n")[0], "narrow_dtypes", argv)
    machine = common.machine_info()
    machine["threads"] = args.threads or "library defaults"
    results = []
    with __import__("numpy").errstate(over="ignore"):
        for name, fns in workloads():
            figures, rounds = common.compare(fns, repeat=args.repeat)
            results.append({"name": name, "us_per_call": figures,
                            "ratio_treadle_numpy": common.round_ratio(rounds, "treadle", "numpy")})
            print(f"  measured {name}", file=sys.stderr)
    lines = [
        f"Narrow dtypes, µs per call ({STAT} of {args.repeat} interleaved runs; lower is better). Ratio: median "
        "over runs of treadle's time / NumPy's in the same run.",
        f"Machine: {machine['cpu_model']}, {machine['cores']} cores; threads: {machine['threads']}.",
        common.kernels_sentence(machine),
        "",
        "| measurement | treadle | NumPy | treadle / NumPy |",
        "| --- | ---: | ---: | ---: |",
    ]
    for r in results:
        f = r["us_per_call"]
        lines.append(f"| {r['name']} | {common.fmt_us(f['treadle'][STAT])} | {common.fmt_us(f['numpy'][STAT])} "
                     f"| {common.fmt_ratio(r['ratio_treadle_numpy'])} |")
    table = "\n".join(lines) + "\n"
    payload = {"benchmark": "narrow_dtypes", "statistic": STAT, "machine": machine, "results": results}
    json_path, md_path = common.write_report("narrow_dtypes", payload, table, args.out_dir)
    print(table)
    print(f"wrote {json_path} and {md_path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
