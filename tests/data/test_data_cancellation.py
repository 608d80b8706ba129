"""Ctrl-C and td.experimental.deadline stop an iteration of a td.data
pipeline whose C++ threads are busy (a map that never ends, on prefetch or
parallel-map threads, or a slow source behind prefetch), promptly, and the
dataset stays usable.

The Ctrl-C cases run in a child process, as in tests/test_cancellation.py: a
time limit on the child turns a hang into a failure."""

import os
import subprocess
import sys
import textwrap
import time

import pytest

import treadle as td

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

PRELUDE = """
import os, signal, threading, time
import treadle as td
Dataset = td.data.Dataset

@td.function
def spin(x):
    # a While that ends only when x reaches the (huge) limit: "never" for the test
    while x < 4_000_000_000_000:
        x = x + 1
    return x

def interrupt_after(seconds):
    threading.Timer(seconds, lambda: os.kill(os.getpid(), signal.SIGINT)).start()

def timed_next(it):
    t = time.perf_counter()
    try:
        next(it)
        return "finished"
    except KeyboardInterrupt:
        return "interrupted %.3f" % (time.perf_counter() - t)
"""


def _child(tmp_path, body):
    script = tmp_path / "child.py"  # a file: AutoGraph reads the source
    script.write_text(textwrap.dedent(PRELUDE) + textwrap.dedent(body))
    proc = subprocess.run([sys.executable, str(script)], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout.split("\n")


def _interrupted_promptly(line):
    word, seconds = line.split()
    assert word == "interrupted"
    assert float(seconds) < 0.3 + 2.0  # the signal comes at 0.3 s; generous for a loaded machine


@pytest.mark.parametrize("pipeline", [
    "Dataset.range(5).map(spin)",                                  # on the consumer's thread
    "Dataset.range(5).map(spin).prefetch(2)",                      # on the prefetch thread
    "Dataset.range(5).map(spin, num_parallel_calls=2)",            # on the map's threads
    "Dataset.range(5).map(spin).batch(2, num_parallel_calls=2)",   # inside a parallel batch
    "Dataset.range(3).interleave(lambda i: Dataset.range(2).map(spin), cycle_length=2, num_parallel_calls=2)",
])
def test_ctrl_c_stops_an_iteration_and_the_dataset_stays_usable(tmp_path, pipeline):
    out = _child(tmp_path, f"""
        ds = {pipeline}
        for attempt in range(2):   # twice: the first interrupt leaves the dataset usable
            it = iter(ds)
            interrupt_after(0.3)
            print(timed_next(it))
            del it                 # its threads stop (they run under the iteration's stop flag)
        print([int(x) for x in Dataset.range(3).map(lambda x: x * 2).prefetch(1)])
    """)
    _interrupted_promptly(out[0])
    _interrupted_promptly(out[1])
    assert out[2] == "[0, 2, 4]"


def test_ctrl_c_while_a_python_source_is_slow_and_reuse_after(tmp_path):
    out = _child(tmp_path, """
        slow = [True]
        def gen():
            for i in range(4):
                if slow[0] and i == 2:
                    time.sleep(3.0)   # Python cannot be stopped mid-element: the thread finishes it
                yield i
        ds = Dataset.from_generator(gen, output_signature=td.TensorSpec([], td.int64)).prefetch(1)
        it = iter(ds)
        print(int(next(it)), int(next(it)))
        interrupt_after(0.3)
        print(timed_next(it))
        slow[0] = False
        t = time.perf_counter()
        del it                        # waits for the element in progress, then the thread stops
        print("joined", time.perf_counter() - t < 10.0)
        print([int(x) for x in ds])   # a new iteration of the same dataset
    """)
    assert out[0] == "0 1"
    word, seconds = out[1].split()
    assert word == "interrupted" and float(seconds) < 2.5  # before the slow element was ready
    assert out[2:4] == ["joined True", "[0, 1, 2, 3]"]


def _spin_fn():
    @td.function
    def spin(x):
        while x < 4_000_000_000_000:
            x = x + 1
        return x
    return spin


@pytest.mark.parametrize("threads", [None, 2])
def test_deadline_stops_the_wait_for_an_element(threads):
    spin = _spin_fn()
    ds = td.data.Dataset.range(4).map(spin, num_parallel_calls=threads).prefetch(1)
    it = iter(ds)
    t = time.perf_counter()
    with pytest.raises(td.errors.DeadlineExceededError):
        with td.experimental.deadline(0.2):
            next(it)
    assert time.perf_counter() - t < 5.0
    del it  # joins the threads: their map stops with the iteration
    assert [int(x) for x in td.data.Dataset.range(3).map(lambda x: x + 1)] == [1, 2, 3]


def test_deadline_stops_a_map_on_the_consumers_thread():
    spin = _spin_fn()
    with pytest.raises(td.errors.DeadlineExceededError):
        with td.experimental.deadline(0.2):
            for _ in td.data.Dataset.range(3).map(spin):
                pass


PARALLEL_WEAVE_CHILD = """
import os, signal, sys, threading, time
sys.path.insert(0, {tests!r})
import treadle as td
import weave_helpers
from test_data_schedules import make_loom

def ctrl_c_after(seconds):
    # as a terminal's Ctrl-C: to the whole process group, the workers included
    threading.Timer(seconds, lambda: os.killpg(os.getpgid(0), signal.SIGINT)).start()

if __name__ == "__main__":
    loom = make_loom()
    ds = td.data.experimental.parallel_weave(range(6), weave_helpers.weave_slowly, loom, processes=1,
                                             chunk_size=1)
    for pipeline in (ds, ds.prefetch(1)):
        it = iter(pipeline)
        print(len(next(it).numpy()) > 0)   # example 0 comes at once
        ctrl_c_after(0.3)
        t = time.perf_counter()
        try:
            next(it)
            print("finished")
        except KeyboardInterrupt:
            print("interrupted %.3f" % (time.perf_counter() - t))
        del it
    fast = td.data.experimental.parallel_weave(range(3), weave_helpers.weave_vector, loom, processes=1)
    print(len(list(fast)), len(list(ds.take(2))))   # the pool survived: the dataset weaves again
"""


def test_ctrl_c_stops_a_parallel_weave_and_its_pool_survives(tmp_path):
    script = tmp_path / "weave_child.py"
    script.write_text(PARALLEL_WEAVE_CHILD.format(tests=os.path.join(ROOT, "tests", "data")))
    # a session of its own: the child's Ctrl-C goes to its process group, not to pytest's
    proc = subprocess.run([sys.executable, str(script)], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          start_new_session=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout.split("\n")
    for k in (0, 2):
        assert out[k] == "True"
        word, seconds = out[k + 1].split()
        assert word == "interrupted" and float(seconds) < 1.4, out  # before the slow example was woven
    assert out[4] == "3 2"
