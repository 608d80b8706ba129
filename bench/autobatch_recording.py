"""What td.loom.autobatch adds to an example's Python, per recorded thing:
a cell call (a td.function on per-example values), `a + b` of two values,
a gather of a variable's row, a floating-point td.constant, and a read of a
computed value (float(p)), each timed in a loop inside one example, beside
the same loop calling a plain Python function (the machine's yardstick).

    python bench/autobatch_recording.py [--repeat 15] [--threads 1]

Each figure is the median over --repeat calls of microseconds per
operation; nothing is run (no round), except the one round that computes
the value the read loop reads. Writes autobatch_recording.json / .md."""

import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

LOOP = 4000  # operations per timed loop
STATE = 150


def _plain(x, y):
    return x


def timed_loops(td):
    """{operation: µs per operation}, from one autobatched call of one example."""
    w = td.Variable(np.eye(STATE, dtype=np.float32) * 0.5)
    embedding = td.Variable(np.ones((64, STATE), np.float32))

    @td.function
    def cell(a, b):
        return td.tanh(td.matmul(a, w) + b)

    @td.function
    def probability(s):
        return td.reduce_sum(s)

    found = {}

    def loop(name, body):
        t0 = time.perf_counter()
        for _ in range(LOOP):
            body()
        found[name] = 1e6 * (time.perf_counter() - t0) / LOOP

    def example(root):
        a = td.constant(root)
        b = cell(a, a)
        cell(a, b), a + b  # the first of each: traced and cached
        loop("plain Python function call (yardstick)", lambda: _plain(a, b))
        loop("cell call (td.function, 2 values)", lambda: cell(a, b))
        loop("a + b (two values)", lambda: a + b)
        loop("td.gather(variable, int)", lambda: td.gather(embedding, 7))
        loop("td.constant(float) inside an example", lambda: td.constant(0.5))
        p = probability(b)
        float(p)  # waits for its round once; then each read finds it computed
        loop("float(p) of a computed value", lambda: float(p))
        return a

    td.loom.autobatch(example)([np.ones((1, STATE), np.float32)])
    return found


def main(argv=None):
    args = common.parse_benchmark_args(__doc__.splitlines()[0], "autobatch_recording", argv)
    import treadle as td
    runs = [timed_loops(td) for _ in range(args.repeat + 1)][1:]  # the first call also traces
    medians = {name: statistics.median(r[name] for r in runs) for name in runs[0]}
    machine = common.machine_info()
    lines = ["# What recording costs inside td.loom.autobatch", "",
             f"Made by `python bench/autobatch_recording.py --repeat {args.repeat}`: microseconds per operation, "
             f"median of {args.repeat} calls, each a loop of {LOOP} inside one example. "
             f"Load average {os.getloadavg()[0]:.1f}.", "",
             "| operation | µs |", "|---|---:|"]
    lines += [f"| {name} | {value:.2f} |" for name, value in medians.items()]
    common.write_report("autobatch_recording", {"machine": machine, "us_per_operation": medians,
                                                 "loop": LOOP, "repeat": args.repeat},
                        "\n".join(lines) + "\n", args.out_dir)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
