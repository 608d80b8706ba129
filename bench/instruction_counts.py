"""The workloads of bench/function_calls.py, for counting
instructions under valgrind (independent of the machine's load).

    python bench/instruction_counts.py first|add|chain300 N

Runs the workload twice to warm up, then N times: `first` is the first call
(trace + build + run) of a new td.function of the 300-op chain of
bench/function_calls.py, `add` a call of a traced `add(a, b)` on 2x2 float32,
`chain300` a call of the traced 300-op function. Instructions per call are
(count with N - count with 0) / N, on the main thread:

    PYTHONHASHSEED=0 OPENBLAS_NUM_THREADS=1 valgrind --tool=callgrind \\
        --separate-threads=yes --callgrind-out-file=cg.%p python bench/instruction_counts.py first 20
    grep ^summary cg.<pid>-01
"""

import os
import sys
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from function_calls import chain  # noqa: E402


def main():
    which, n = sys.argv[1], int(sys.argv[2])
    warnings.simplefilter("ignore")  # a td.function made in a loop warns, by design
    import treadle as td
    a = td.constant([[1.0, 2.0], [3.0, 4.0]])
    b = td.constant([[0.5, 0.5], [0.5, 0.5]])
    add = td.function(lambda x, y: x + y)
    chain300 = td.function(lambda x: chain(x, td.tanh))
    workloads = {"first": lambda: td.function(lambda x: chain(x, td.tanh))(a),
                 "add": lambda: add(a, b), "chain300": lambda: chain300(a)}
    run = workloads[which]
    for _ in range(2 + n):
        run()


if __name__ == "__main__":
    main()
