"""Long runs: what a retrace costs after many traces, and how soon
Ctrl-C and a deadline stop a run that would never end.

    python bench/long_runs.py [--traces 10000] [--out-dir bench/results]

Rows:
- miss_after_N: ms per new trace of `x + 1.0` once N shapes were traced
  (shapes (0, n): no data, so the figure is dispatch + tracing alone);
- hit: µs per call of a traced shape;
- sigint_while / sigint_loom: ms from SIGINT to the KeyboardInterrupt, for a
  While loop that never ends and a loom whose op never ends (64 calls on the
  pool's threads);
- deadline_while / deadline_loom: ms past a 0.2 s td.experimental.deadline.
Medians of 5 (interrupts and deadlines) or 20 (misses) measurements.
Writes long_runs.json / .md.
"""

import argparse
import json
import os
import signal
import statistics
import threading
import time
import warnings

import numpy as np

import treadle as td


def _empty(n):
    return td.constant(np.zeros((0, n), np.float32))


def miss_costs(total):
    warnings.simplefilter("ignore")

    @td.function
    def f(x):
        return x + 1.0

    marks = sorted({m for m in (10, 100, 1000, 10000, total) if m <= total})
    rows, traced, probe = {}, 0, 10 ** 7
    for mark in marks:
        while traced < mark:
            traced += 1
            f(_empty(traced))
        times = []
        for _ in range(20):
            probe += 1
            t0 = time.perf_counter()
            f(_empty(probe))
            times.append((time.perf_counter() - t0) * 1e3)
        rows[f"miss_after_{mark}"] = statistics.median(times)
    hot = _empty(1)
    f(hot)
    t0 = time.perf_counter()
    for _ in range(20000):
        f(hot)
    rows["hit_us"] = (time.perf_counter() - t0) / 20000 * 1e6
    return rows


def stop_latencies():
    @td.function
    def forever(x):
        while x > 0.0:
            x = x + 1.0
        return x

    vec = td.loom.TypeShape("float32", (1,))

    class Spin(td.loom.LoomOp):
        def __init__(self):
            super().__init__([vec], [vec])

        def instantiate_batch(self, inputs):
            return [td.while_loop(lambda v: td.reduce_sum(v) > -1.0, lambda v: v + 1.0, [inputs[0]])[0]]

    loom = td.loom.Loom(named_ops={"spin": Spin()})
    w = loom.make_weaver()
    for _ in range(64):
        w.add_output(w.spin(w(np.ones(1, np.float32))))
    sent = {}

    def fire():
        sent["t"] = time.perf_counter()
        os.kill(os.getpid(), signal.SIGINT)

    rows = {}
    for name, call in [("while", lambda: forever(td.constant(1.0))), ("loom", lambda: loom(w))]:
        lat = []
        for _ in range(5):
            threading.Timer(0.2, fire).start()
            try:
                call()
            except KeyboardInterrupt:
                lat.append((time.perf_counter() - sent["t"]) * 1e3)
        rows[f"sigint_{name}_ms"] = statistics.median(lat)
        over = []
        for _ in range(5):
            t0 = time.perf_counter()
            try:
                with td.experimental.deadline(0.2):
                    call()
            except td.errors.DeadlineExceededError:
                over.append((time.perf_counter() - t0 - 0.2) * 1e3)
        rows[f"deadline_{name}_ms"] = statistics.median(over)
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--traces", type=int, default=10000)
    ap.add_argument("--out-dir", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "results"))
    args = ap.parse_args()
    rows = miss_costs(args.traces)
    rows.update(stop_latencies())
    os.makedirs(args.out_dir, exist_ok=True)
    with open(os.path.join(args.out_dir, "long_runs.json"), "w") as f:
        json.dump(rows, f, indent=1)
    lines = ["| measurement | value |", "| --- | --- |"]
    for k, v in rows.items():
        unit = "µs" if k.endswith("_us") else "ms"
        lines.append(f"| {k} | {v:.3f} {unit} |")
    with open(os.path.join(args.out_dir, "long_runs.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
