"""MLP training step: batch 256, 784 -> 256 (ReLU) -> 10, float32, softmax
cross-entropy (sparse labels), SGD (learning rate 0.1). Forward, backward
and update, measured as treadle eager code (GradientTape), as one
td.function, and as PyTorch eager code (autograd + torch.optim.SGD) when
PyTorch is installed, in the same process from the same initial weights.

    python bench/mlp_train.py [--repeat 15] [--threads N] [--out-dir bench/results]

Writes bench/results/mlp_train.json and mlp_train.md and prints the table.
Before timing, each variant trains 5 steps from the same start and their
losses are checked against each other.
"""

import os
import pathlib
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

# numpy, treadle and torch are imported after the command line is read: thread
# counts must be in the environment before their BLAS libraries start.

STAT = "median"
BATCH, INPUTS, HIDDEN, CLASSES = 256, 784, 256, 10
LEARNING_RATE = 0.1


def initial_values(seed=0):
    import numpy as np
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(BATCH, INPUTS)).astype(np.float32)
    labels = rng.integers(0, CLASSES, size=BATCH).astype(np.int32)
    w1 = (rng.normal(size=(INPUTS, HIDDEN)) * np.sqrt(2.0 / INPUTS)).astype(np.float32)
    w2 = (rng.normal(size=(HIDDEN, CLASSES)) * np.sqrt(2.0 / HIDDEN)).astype(np.float32)
    return x, labels, [w1, np.zeros(HIDDEN, np.float32), w2, np.zeros(CLASSES, np.float32)]


def treadle_step(x, labels, start):
    """(a training step of treadle eager code, the parameters) on fresh variables."""
    import treadle as td
    params = [td.Variable(v) for v in start]
    w1, b1, w2, b2 = params
    opt = td.optimizers.SGD(LEARNING_RATE)
    xt, yt = td.constant(x), td.constant(labels)

    def step(x, y):
        with td.GradientTape() as tape:
            hidden = td.nn.relu(td.matmul(x, w1) + b1)
            logits = td.matmul(hidden, w2) + b2
            loss = td.reduce_mean(td.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
        grads = tape.gradient(loss, params)
        opt.apply_gradients(zip(grads, params))
        return loss

    return step, xt, yt


def torch_step(torch, x, labels, start):
    tx = torch.from_numpy(x)
    ty = torch.from_numpy(labels.astype("int64"))
    params = [torch.tensor(v, requires_grad=True) for v in start]
    w1, b1, w2, b2 = params
    opt = torch.optim.SGD(params, lr=LEARNING_RATE)

    def step():
        opt.zero_grad(set_to_none=True)
        hidden = torch.relu(tx @ w1 + b1)
        loss = torch.nn.functional.cross_entropy(hidden @ w2 + b2, ty)
        loss.backward()
        opt.step()
        return loss

    return step


def workload(torch):
    """{variant: fn() running one step}, after checking 5 steps of each agree."""
    import numpy as np

    import treadle as td

    x, labels, start = initial_values()
    eager, xt, yt = treadle_step(x, labels, start)
    compiled_raw, xc, yc = treadle_step(x, labels, start)
    compiled = td.function(compiled_raw)
    fns = {
        "treadle eager": lambda: eager(xt, yt),
        "treadle td.function": lambda: compiled(xc, yc),
    }
    if torch is not None:
        fns["torch eager"] = torch_step(torch, x, labels, start)
    losses = {}
    for name, fn in fns.items():
        values = []
        for _ in range(5):
            out = fn()
            values.append(float(out.detach().numpy()) if hasattr(out, "detach") else float(out.numpy()))
        losses[name] = values
    reference = losses["treadle eager"]
    for name, values in losses.items():
        np.testing.assert_allclose(values, reference, rtol=2e-4, err_msg=name)
    if compiled.experimental_get_tracing_count() != 1:
        raise AssertionError("the td.function step was traced more than once")
    return fns, losses


def markdown(result, machine):
    f = result["us_per_step"]
    lines = [
        f"MLP training step, µs per step ({STAT} of {f['treadle eager']['runs']} interleaved runs; lower is "
        f"better): {result['code']}. Ratios: median over runs of treadle's time / the peer's in the same run.",
        f"Machine: {machine['cpu_model']}, {machine['cores']} cores; Python {machine['python']}, "
        f"treadle {machine['versions']['treadle']}, NumPy {machine['versions']['numpy']}, "
        f"PyTorch {machine['versions']['torch'] or 'not installed'}; threads: {machine['threads']}.",
        common.kernels_sentence(machine),
        "",
        "| variant | µs per step (median) | min | treadle td.function / this |",
        "| --- | ---: | ---: | ---: |",
    ]
    for name, fig in f.items():
        ratio = result["ratios"].get(f"treadle td.function/{name}")
        lines.append(f"| {name} | {common.fmt_us(fig[STAT])} | {common.fmt_us(fig['min'])} | "
                     f"{common.fmt_ratio(ratio) if name != 'treadle td.function' else '—'} |")
    return "\n".join(lines) + "\n"


def main(argv=None):
    args = common.parse_benchmark_args(__doc__.split("\n\n")[0], "mlp_train", argv)
    torch = common.optional_import("torch")
    if torch is None:
        print("note: PyTorch is not installed; reporting treadle only", file=sys.stderr)
    machine = common.machine_info()
    machine["threads"] = args.threads or "library defaults"
    fns, losses = workload(torch)
    figures, rounds = common.compare(fns, repeat=args.repeat)
    ratios = {f"treadle td.function/{name}": common.round_ratio(rounds, "treadle td.function", name)
              for name in figures if name != "treadle td.function"}
    result = {
        "name": "mlp train step",
        "code": f"batch {BATCH}, {INPUTS}->{HIDDEN}->{CLASSES}, float32, ReLU, sparse softmax cross-entropy, "
                f"SGD({LEARNING_RATE})",
        "us_per_step": figures,
        "ratios": ratios,
        "first_losses": losses,
    }
    table = markdown(result, machine)
    payload = {"benchmark": "mlp_train", "statistic": STAT, "machine": machine,
               "peers_missing": [] if torch else ["torch"], "results": [result]}
    json_path, md_path = common.write_report("mlp_train", payload, table, args.out_dir)
    print(table)
    print(f"wrote {json_path} and {md_path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
