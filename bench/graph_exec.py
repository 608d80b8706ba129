"""Graph execution overhead: a GraphDef of 300 small ops (100 x tanh(a) * 0.5 + 0.1
on a 2x2 float32) run through _core.Executable.run. Reports microseconds per call,
Python -> C++ -> Python included (target <= 40 us, shared/BENCHMARKS.md section 1).

    python bench/graph_exec.py [--repeat N] [--json out.json]
"""

import argparse
import json
import platform
import time

import numpy as np

import treadle as td
from treadle import _core, graph_pb2

FLOAT32 = 1


def build_graph(layers=100):
    """x -> 100 x (tanh(.) * 0.5 + 0.1); the two constants are shared, as a tracer
    deduplicating constants would emit them."""
    gd = graph_pb2.GraphDef()

    def node(name, op, inputs=(), **attrs):
        n = gd.node.add()
        n.name, n.op = name, op
        n.input.extend(inputs)
        for key, value in attrs.items():
            n.attr[key].CopyFrom(value)
        return name

    x = graph_pb2.AttrValue()
    x.type = FLOAT32
    shape = graph_pb2.AttrValue()
    shape.shape.dim.add().size = 2
    shape.shape.dim.add().size = 2
    node("x", "Placeholder", dtype=x, shape=shape)
    for name, value in (("half", 0.5), ("tenth", 0.1)):
        v = graph_pb2.AttrValue()
        v.tensor.ParseFromString(_core.tensor_to_proto_bytes(td.constant(np.float32(value))))
        node(name, "Const", value=v, dtype=x)
    h = "x"
    for i in range(layers):
        t = node(f"tanh_{i}", "Tanh", [h])
        m = node(f"mul_{i}", "Mul", [t, "half"])
        h = node(f"add_{i}", "AddV2", [m, "tenth"])
    gd.versions.producer = _core.GRAPH_VERSION
    return gd.SerializeToString(), h


def reference(a, layers=100):
    h = a
    for _ in range(layers):
        h = (np.tanh(h) * np.float32(0.5) + np.float32(0.1)).astype(np.float32)
    return h


def measure(fn, repeat, inner=200):
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(inner):
            fn()
        best = min(best, (time.perf_counter() - t0) / inner)
    return best * 1e6


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()

    data, out = build_graph()
    t0 = time.perf_counter()
    exe = _core.Executable(data, ["x"], [out])
    load_us = (time.perf_counter() - t0) * 1e6
    a = td.constant(np.random.RandomState(0).rand(2, 2).astype(np.float32))
    np.testing.assert_allclose(exe.run([a])[0].numpy(), reference(a.numpy()), rtol=1e-5)

    run_us = measure(lambda: exe.run([a]), args.repeat)
    figures = {
        "benchmark": "graph_exec",
        "machine": platform.platform(),
        "python": platform.python_version(),
        "ops_run_per_call": exe.num_nodes,
        "load_and_plan_us": round(load_us, 1),
        "run_us_per_call": round(run_us, 2),
        "run_ns_per_op": round(run_us * 1000 / exe.num_nodes, 1),
        "target_us": 40,
    }
    print(f"300-op graph (100 x tanh(a) * 0.5 + 0.1 on 2x2 float32), {exe.num_nodes} ops per call")
    print(f"  load + validate + plan: {load_us:10.1f} us")
    print(f"  Executable.run:         {run_us:10.2f} us per call "
          f"({figures['run_ns_per_op']} ns per op; target <= 40 us)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(figures, f, indent=2)


if __name__ == "__main__":
    main()
