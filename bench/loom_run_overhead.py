"""The fixed cost of one loom run: a loom of two tiny ops on float64[3]
vectors, run on a one-call schedule, eagerly (`loom(schedule)`) and inside a
td.function (`LoomRun` node), in µs per run (median of 7 rounds of 500 runs).
What it measures is everything around the ops' work: converting the Loom op's
attrs, finding the loom's runtime, checking the schedule and inputs.

    python bench/loom_run_overhead.py
"""

import json
import os
import statistics
import sys
import time
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))


def _vector_loom(td):
    vec3 = td.loom.TypeShape("float64", (3,))

    class Binary(td.loom.LoomOp):
        def __init__(self, fn):
            self._fn = fn
            super().__init__([vec3, vec3], [vec3])

        def instantiate_batch(self, inputs):
            return [self._fn(inputs[0], inputs[1])]

    x = td.Variable(np.array([1.0, 2.0, 3.0]))
    y = td.Variable(np.array([-1.0, 0.5, 2.0]))
    loom = td.loom.Loom(named_tensors={"x": x, "y": y},
                        named_ops={"add": Binary(td.add), "mul": Binary(td.multiply)})
    return loom, vec3


def _per_run_us(fn, rounds=7, runs=500):
    for _ in range(200):
        fn()
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(runs):
            fn()
        times.append((time.perf_counter() - t0) / runs * 1e6)
    return statistics.median(times)


def main():
    warnings.simplefilter("ignore")
    import treadle as td
    loom, vec3 = _vector_loom(td)
    w = loom.make_weaver()
    w.add_output(w.op("add", [w.named_tensor("x"), w.named_tensor("y")])[0])
    schedule = w._schedule()
    message = td.constant(w.serialize())
    traced = td.function(lambda m: loom.output_tensor(vec3, m))
    print(json.dumps({"eager_us": _per_run_us(lambda: loom(schedule)),
                      "function_us": _per_run_us(lambda: traced(message))}))


if __name__ == "__main__":
    main()
