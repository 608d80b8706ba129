"""treadle's SIMD kernels against PyTorch's single-threaded CPU kernels, at
every SIMD level this CPU offers (td.config.set_isa), on the shapes of the
TreeLSTM's gates: 256 x 750 float32.

    .venv/bin/python bench/simd_kernels.py            # -> bench/results/simd_kernels.{json,md}

Target (kernels issue): td.sigmoid, td.tanh and td.exp within 1.2x of
PyTorch's time, at every level. The other rows show the rest of what the
Loom's layers run: a broadcasting bias add, the activation gradients, a
softmax and a column sum (a bias gradient).
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import common  # noqa: E402

ROWS, COLS = 256, 750
TARGET = 1.2
TARGETED = ("sigmoid", "tanh", "exp")


def cases(td, torch, np):
    rs = np.random.RandomState(0)
    x = (rs.randn(ROWS, COLS) * 3).astype(np.float32)
    pos = np.abs(x) + 0.1
    y = 1 / (1 + np.exp(-x))
    bias = rs.randn(COLS).astype(np.float32)
    t = {k: td.constant(v) for k, v in dict(x=x, pos=pos, y=y, bias=bias).items()}
    out = {
        "sigmoid": (lambda: td.sigmoid(t["x"]), None),
        "tanh": (lambda: td.tanh(t["x"]), None),
        "exp": (lambda: td.exp(t["x"]), None),
        "log": (lambda: td.math.log(t["pos"]), None),
        "add, [256,750] + [750]": (lambda: t["x"] + t["bias"], None),
        "SigmoidGrad": (lambda: td.raw_ops.SigmoidGrad(y=t["y"], dy=t["x"]), None),
        "softmax over 750": (lambda: td.nn.softmax(t["x"]), None),
        "sum over rows (bias gradient)": (lambda: td.reduce_sum(t["x"], axis=0), None),
    }
    if torch is not None:
        p = {k: torch.from_numpy(v) for k, v in dict(x=x, pos=pos, y=y, bias=bias).items()}
        sigmoid_backward = torch.ops.aten.sigmoid_backward
        peers = {
            "sigmoid": lambda: torch.sigmoid(p["x"]),
            "tanh": lambda: torch.tanh(p["x"]),
            "exp": lambda: torch.exp(p["x"]),
            "log": lambda: torch.log(p["pos"]),
            "add, [256,750] + [750]": lambda: p["x"] + p["bias"],
            "SigmoidGrad": lambda: sigmoid_backward(p["x"], p["y"]),
            "softmax over 750": lambda: torch.softmax(p["x"], dim=1),
            "sum over rows (bias gradient)": lambda: p["x"].sum(dim=0),
        }
        out = {name: (fn, peers[name]) for name, (fn, _) in out.items()}
    return out


def measure(td, torch, np, repeat):
    levels = td.config.isa_info()["available"]
    results = {}
    for level in levels:
        td.config.set_isa(level)
        rows = {}
        for name, (ours, peer) in cases(td, torch, np).items():
            fns = {"treadle": ours}
            if peer is not None:
                fns["torch"] = peer
            figures, rounds = common.compare(fns, repeat=repeat, min_seconds=0.02)
            row = {"treadle_us": figures["treadle"]["median"]}
            if peer is not None:
                row["torch_us"] = figures["torch"]["median"]
                row["ratio"] = common.round_ratio(rounds, "treadle", "torch")
            rows[name] = row
        results[level] = {"target": td.config.isa_info()["target"], "ops": rows}
    td.config.set_isa(os.environ.get("TREADLE_ISA") or td.config.isa_info()["known"][0])
    return results


def markdown(results, machine, torch):
    lines = [
        f"SIMD kernels on {ROWS}×{COLS} float32, µs per call (median of interleaved runs; lower is better), "
        "treadle at each SIMD level against PyTorch's single-threaded kernels in the same run. Ratio: "
        f"treadle's time / PyTorch's; target ≤ {TARGET}× for sigmoid, tanh and exp.",
        f"Machine: {machine['cpu_model']}, {machine['cores']} cores; PyTorch "
        f"{machine['versions']['torch'] or 'not installed'} (1 thread). {common.kernels_sentence(machine)}",
        "",
        "| op | " + " | ".join(f"{lvl} treadle | {lvl} PyTorch | {lvl} ratio" for lvl in results) + " |",
        "| --- |" + " ---: | ---: | ---: |" * len(results),
    ]
    names = list(next(iter(results.values()))["ops"])
    for name in names:
        cells = []
        for level in results:
            row = results[level]["ops"][name]
            ratio = row.get("ratio")
            mark = "" if name not in TARGETED or ratio is None else (" ✓" if ratio <= TARGET else " ✗")
            cells += [common.fmt_us(row["treadle_us"]), common.fmt_us(row.get("torch_us")),
                      common.fmt_ratio(ratio) + mark]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv=None):
    args = common.parse_benchmark_args(__doc__.splitlines()[0], "simd_kernels", argv)
    torch = common.optional_import("torch")
    if torch is not None:
        torch.set_num_threads(1)
    import numpy as np

    import treadle as td
    results = measure(td, torch, np, args.repeat)
    machine = common.machine_info()
    payload = {"benchmark": "simd_kernels", "machine": machine, "shape": [ROWS, COLS], "target_ratio": TARGET,
               "levels": results}
    md = markdown(results, machine, torch)
    common.write_report("simd_kernels", payload, md, args.out_dir)
    print(md)


if __name__ == "__main__":
    main()
