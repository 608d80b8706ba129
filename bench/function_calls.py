"""Dispatch and execution overhead of td.function,
with tf.function, jax.jit and eager PyTorch measured in the same process when
they are installed.

    python bench/function_calls.py [--repeat 15] [--quick] [--out-dir bench/results]

Rows: a td.function `add(a, b)` call on 2x2 float32 (also with a nested dict
argument and with a Python literal argument); a call of a 300-op function
(100 x `tanh(a) * 0.5 + 0.1`); the first call of that function (trace + run);
a retrace for a new Python literal; the construction of the TreeLSTM's Loom
(bench/treelstm/treadle_impl.py: tracing its two ops and their gradients).
Writes function_calls.json / .md.
"""

import argparse
import os
import statistics
import sys
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

TARGETS = {"add": 3.0, "add_dict": None, "add_literal": None, "chain300": 40.0, "first_call": 15000.0,
           "retrace": 300.0, "loom_construction": None}
LAYERS = 100


def chain(x, tanh):
    for _ in range(LAYERS):
        x = tanh(x) * 0.5 + 0.1
    return x


def treadle_fns():
    import treadle as td
    a = td.constant([[1.0, 2.0], [3.0, 4.0]])
    b = td.constant([[0.5, 0.5], [0.5, 0.5]])

    @td.function
    def add(x, y):
        return x + y

    @td.function
    def add_dict(d):
        return d["x"] + d["y"]

    @td.function
    def add_literal(x, k):
        return x + k

    @td.function
    def chain300(x):
        return chain(x, td.tanh)

    d = {"x": a, "y": b}
    fns = {"add": lambda: add(a, b), "add_dict": lambda: add_dict(d), "add_literal": lambda: add_literal(a, 2.0),
           "chain300": lambda: chain300(a)}

    def first_call():
        f = td.function(lambda x: chain(x, td.tanh))
        return f(a)

    counter = iter(range(10**9))

    def retrace():
        return add_literal(a, float(next(counter)) + 0.5)

    return fns, first_call, retrace


def treadle_loom_construction():
    """A function building the TreeLSTM's Loom again (the model, its weights
    and variables made once beforehand)."""
    from bench.treelstm.model import initial_weights
    from bench.treelstm.treadle_impl import TreeLSTM
    return TreeLSTM(initial_weights()).build_loom


def tf_fns(tf):
    a = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    b = tf.constant([[0.5, 0.5], [0.5, 0.5]])

    @tf.function
    def add(x, y):
        return x + y

    @tf.function
    def add_dict(d):
        return d["x"] + d["y"]

    @tf.function
    def add_literal(x, k):
        return x + k

    @tf.function
    def chain300(x):
        return chain(x, tf.tanh)

    d = {"x": a, "y": b}
    fns = {"add": lambda: add(a, b), "add_dict": lambda: add_dict(d), "add_literal": lambda: add_literal(a, 2.0),
           "chain300": lambda: chain300(a)}

    def first_call():
        f = tf.function(lambda x: chain(x, tf.tanh))
        return f(a)

    counter = iter(range(10**9))

    def retrace():
        return add_literal(a, float(next(counter)) + 0.5)

    return fns, first_call, retrace


def jax_fns(jax):
    import jax.numpy as jnp
    a = jnp.array([[1.0, 2.0], [3.0, 4.0]], dtype=jnp.float32)
    b = jnp.array([[0.5, 0.5], [0.5, 0.5]], dtype=jnp.float32)
    add = jax.jit(lambda x, y: x + y)
    add_dict = jax.jit(lambda d: d["x"] + d["y"])
    add_literal = jax.jit(lambda x, k: x + k, static_argnums=1)
    chain300 = jax.jit(lambda x: chain(x, jnp.tanh))
    d = {"x": a, "y": b}
    block = jax.block_until_ready
    fns = {"add": lambda: block(add(a, b)), "add_dict": lambda: block(add_dict(d)),
           "add_literal": lambda: block(add_literal(a, 2.0)), "chain300": lambda: block(chain300(a))}

    def first_call():
        return block(jax.jit(lambda x: chain(x, jnp.tanh))(a))

    counter = iter(range(10**9))

    def retrace():
        return block(add_literal(a, float(next(counter)) + 0.5))

    return fns, first_call, retrace


def torch_fns(torch):
    a = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    return {"chain300": lambda: chain(a, torch.tanh)}


def one_shot_times(fn, count):
    """Microseconds of `count` separate calls of fn (each does its own work once)."""
    times = []
    for _ in range(count):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e6)
    return times


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--quick", action="store_true", help="fewer rounds (for smoke tests)")
    parser.add_argument("--out-dir", default=str(common.RESULTS_DIR))
    args = parser.parse_args()
    repeat = 3 if args.quick else args.repeat
    one_shots = 3 if args.quick else 15
    warnings.simplefilter("ignore")

    peers = {}
    tf = common.optional_import("tensorflow")
    jax = common.optional_import("jax")
    torch = common.optional_import("torch")
    libraries = {"treadle": treadle_fns()}
    if tf is not None:
        libraries["tensorflow"] = tf_fns(tf)
    if jax is not None:
        libraries["jax"] = jax_fns(jax)

    results = {}
    for row in ("add", "add_dict", "add_literal", "chain300"):
        fns = {lib: lib_fns[0][row] for lib, lib_fns in libraries.items() if row in lib_fns[0]}
        if row == "chain300" and torch is not None:
            fns["torch eager"] = torch_fns(torch)["chain300"]
        for fn in fns.values():
            fn()
        figures, rounds = common.compare(fns, repeat=repeat)
        results[row] = {lib: figures[lib]["median"] for lib in figures}
        results[row + "_ratios"] = {lib: common.round_ratio(rounds, "treadle", lib) for lib in figures if lib != "treadle"}
    for row, index in (("first_call", 1), ("retrace", 2)):
        results[row] = {}
        for lib, lib_fns in libraries.items():
            lib_fns[index]()  # warm imports and caches
            results[row][lib] = statistics.median(one_shot_times(lib_fns[index], one_shots))
    build_loom = treadle_loom_construction()
    build_loom()  # warm imports and caches
    results["loom_construction"] = {"treadle": statistics.median(one_shot_times(build_loom, one_shots))}
    for lib in ("tensorflow", "jax", "torch"):
        mod = {"tensorflow": tf, "jax": jax, "torch": torch}[lib]
        peers[lib] = mod.__version__ if mod is not None else None

    machine = common.machine_info()
    machine["versions"].update({k: v for k, v in peers.items()})
    payload = {"benchmark": "function_calls", "machine": machine, "stat": "median", "us": results,
               "targets_us": TARGETS}
    md = markdown(results, peers) + "\n" + common.kernels_sentence(machine) + "\n"
    common.write_report("function_calls", payload, md, args.out_dir)
    print(md)


def markdown(results, peers):
    libs = ["treadle", "tensorflow", "jax", "torch eager"]
    labels = {"add": "`add(a, b)` call, 2x2", "add_dict": "`add(d)` with a nested dict argument",
              "add_literal": "`add(x, 2.0)` with a Python literal argument",
              "chain300": "call of a 300-op function", "first_call": "first call of the 300-op function (trace + run)",
              "retrace": "retrace for a new Python literal",
              "loom_construction": "construction of the TreeLSTM's Loom (2 ops, with gradients)"}
    lines = ["td.function overhead, µs (median; lower is better). Peers measured in the same process "
             f"(TensorFlow {peers.get('tensorflow') or 'not installed'}, JAX {peers.get('jax') or 'not installed'}, "
             f"PyTorch {peers.get('torch') or 'not installed'}).", "",
             "| measurement | " + " | ".join(libs) + " | target |", "|---|" + "---:|" * (len(libs) + 1)]
    for row, label in labels.items():
        cells = [common.fmt_us(results[row].get(lib)) for lib in libs]
        target = TARGETS.get(row)
        lines.append(f"| {label} | " + " | ".join(cells) + f" | {'≤ ' + common.fmt_us(target) if target else ''} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
