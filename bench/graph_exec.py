"""Graph execution overhead: a hand-built GraphDef of 300 small ops
(100 x `tanh(a) * 0.5 + 0.1` on a 2x2 float32) run through
_core.Executable.run, Python -> C++ -> Python included. For scale, the same
300 ops run eagerly in the same process by treadle, NumPy and PyTorch (when
installed).

    python bench/graph_exec.py [--repeat 15] [--threads N] [--out-dir bench/results]

Writes bench/results/graph_exec.json and graph_exec.md and prints the table.
"""

import os
import pathlib
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

# numpy, treadle and torch are imported after the command line is read: thread
# counts must be in the environment before their BLAS libraries start.

STAT = "median"
LAYERS = 100
TARGET_US = 40.0
FLOAT32 = 1


def build_graph_def(layers=LAYERS):
    """x -> layers x (tanh(.) * 0.5 + 0.1), serialized. The two constants are
    shared, as a tracer that deduplicates constants emits them (the executor
    folds constants either way). Returns (bytes, name of the last node)."""
    import numpy as np

    import treadle as td
    from treadle import _core, graph_pb2

    gd = graph_pb2.GraphDef()
    gd.versions.producer = _core.GRAPH_VERSION

    def node(name, op, inputs=(), **attrs):
        n = gd.node.add(name=name, op=op)
        n.input.extend(inputs)
        for key, value in attrs.items():
            n.attr[key].CopyFrom(value)
        return name

    f32 = graph_pb2.AttrValue(type=FLOAT32)
    shape = graph_pb2.AttrValue()
    shape.shape.dim.add().size = 2
    shape.shape.dim.add().size = 2
    node("x", "Placeholder", dtype=f32, shape=shape)
    for name, value in (("half", 0.5), ("tenth", 0.1)):
        v = graph_pb2.AttrValue()
        v.tensor.ParseFromString(_core.tensor_to_proto_bytes(td.constant(np.float32(value))))
        node(name, "Const", value=v, dtype=f32)
    h = "x"
    for i in range(layers):
        t = node(f"tanh_{i}", "Tanh", [h])
        m = node(f"mul_{i}", "Mul", [t, "half"])
        h = node(f"add_{i}", "AddV2", [m, "tenth"])
    return gd.SerializeToString(), h


def workload(torch):
    """{library: fn} computing the same 300 ops, checked against each other."""
    import numpy as np

    import treadle as td
    from treadle import _core

    data, out = build_graph_def()
    exe = _core.Executable(data, ["x"], [out])
    a = np.random.default_rng(0).random((2, 2), dtype=np.float32)
    ta = td.constant(a)
    args = [ta]
    half, tenth = 0.5, 0.1  # Python floats: each library keeps float32

    def eager(h, tanh):
        for _ in range(LAYERS):
            h = tanh(h) * half + tenth
        return h

    fns = {
        "Executable.run": lambda: exe.run(args),
        "treadle eager": lambda: eager(ta, td.tanh),
        "numpy eager": lambda: eager(a, np.tanh),
    }
    if torch is not None:
        pa = torch.from_numpy(a.copy())
        fns["torch eager"] = lambda: eager(pa, torch.tanh)
    expected = eager(a, np.tanh)
    np.testing.assert_allclose(exe.run(args)[0].numpy(), expected, rtol=1e-5)
    for lib in fns:
        if lib != "Executable.run":
            np.testing.assert_allclose(np.asarray(fns[lib]()), expected, rtol=1e-5, err_msg=lib)
    return exe, data, out, fns


def load_times(data, out, repeat=20):
    """Microseconds to parse, validate and plan the GraphDef: the first time in
    this process, and the best of `repeat` later loads."""
    from treadle import _core

    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        _core.Executable(data, ["x"], [out])
        times.append((time.perf_counter() - t0) * 1e6)
    return times[0], min(times[1:])


def markdown(result, machine):
    f = result["us_per_call"]
    peers = [lib for lib in f if lib != "Executable.run"]
    lines = [
        f"Graph execution, µs per call ({STAT} of {f['Executable.run']['runs']} interleaved runs; lower is better): "
        f"{result['code']}. Ratios: median over runs of Executable.run's time / the other's in the same run.",
        f"Machine: {machine['cpu_model']}, {machine['cores']} cores; Python {machine['python']}, "
        f"treadle {machine['versions']['treadle']}, NumPy {machine['versions']['numpy']}; "
        f"threads: {machine['threads']}.",
        common.kernels_sentence(machine),
        "",
        "| measurement | µs per call | ns per op | Executable.run / this | target | met |",
        "| --- | ---: | ---: | ---: | --- | --- |",
        f"| Executable.run, 300 ops | {common.fmt_us(f['Executable.run'][STAT])} "
        f"| {f['Executable.run'][STAT] * 1000 / result['ops_per_call']:.0f} | — "
        f"| ≤ {TARGET_US:.0f} µs | {'yes' if result['meets_target'] else 'no'} |",
    ]
    for lib in peers:
        lines.append(f"| {lib}, the same 300 ops | {common.fmt_us(f[lib][STAT])} "
                     f"| {f[lib][STAT] * 1000 / result['ops_per_call']:.0f} "
                     f"| {common.fmt_ratio(result['ratios'][f'Executable.run/{lib}'])} | — | — |")
    lines.append(f"| load + validate + plan (first in process / later) | {result['load_us']['first']:.0f} / "
                 f"{result['load_us']['later']:.0f} | — | — | — | — |")
    return "\n".join(lines) + "\n"


def main(argv=None):
    args = common.parse_benchmark_args(__doc__.split("\n\n")[0], "graph_exec", argv)
    torch = common.optional_import("torch")
    machine = common.machine_info()
    machine["threads"] = args.threads or "library defaults"
    exe, data, out, fns = workload(torch)
    first_load, later_load = load_times(data, out)
    figures, rounds = common.compare(fns, repeat=args.repeat)
    ratios = {f"Executable.run/{lib}": common.round_ratio(rounds, "Executable.run", lib)
              for lib in figures if lib != "Executable.run"}
    result = {
        "name": "graph 300 ops 2x2 float32",
        "code": "100 x `tanh(a) * 0.5 + 0.1` on a 2x2 float32, one Executable.run call",
        "ops_per_call": exe.num_nodes,
        "us_per_call": figures,
        "ratios": ratios,
        "load_us": {"first": first_load, "later": later_load},
        "target": f"≤ {TARGET_US:.0f} µs",
        "meets_target": figures["Executable.run"][STAT] <= TARGET_US,
    }
    table = markdown(result, machine)
    payload = {"benchmark": "graph_exec", "statistic": STAT, "machine": machine,
               "peers_missing": [] if torch else ["torch"], "results": [result]}
    json_path, md_path = common.write_report("graph_exec", payload, table, args.out_dir)
    print(table)
    print(f"wrote {json_path} and {md_path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
