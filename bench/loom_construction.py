"""The construction of the TreeLSTM's Loom (tracing its two ops, their
gradient functions, and building the C++ runtime): the median of --repeats
constructions, each of a fresh TreeLSTM, in one process.

    python bench/loom_construction.py --repeats 15
"""

import argparse
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args()
    import treadle as td  # noqa: F401  (imported before timing)
    from bench.treelstm import model
    from bench.treelstm.treadle_impl import TreeLSTM
    weights = model.initial_weights()
    TreeLSTM(weights)  # warm-up: first imports and op tables
    times = []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        TreeLSTM(weights)
        times.append(time.perf_counter() - t0)
    print(f"TreeLSTM Loom construction: median {statistics.median(times) * 1e3:.2f} ms, "
          f"min {min(times) * 1e3:.2f} ms, max {max(times) * 1e3:.2f} ms over {args.repeats} (load {os.getloadavg()[0]:.2f})")


if __name__ == "__main__":
    main()
