"""The interpreter exits cleanly (status 0, no abort, no hang, nothing on
stderr) while iterators of every public td.data transformation and every
long-running entry point are alive, their threads busy: prefetch,
parallel interleave and map over Python generators, parallel_weave, ...

Each case runs in a child process under a time limit. The transformations
are enumerated from td.data.Dataset's public attributes (the recipes of
tests/test_interruptibility.py, so a new method needs one recipe for both
checks); all of them are alive at once in one child, and the thread-heavy
ones also each alone, exiting three ways: falling off the end, sys.exit in
the middle of an iteration, and an uncaught exception."""

import os
import subprocess
import sys
import textwrap

import pytest

from test_interruptibility import (DATASET_RECIPES, LOOP_AND_WEAVE_HELPERS, PRELUDE, ROOT, THREADED_RECIPES,
                                   as_main)

EXITS = {
    "end": ("", 0),
    "sys.exit": ("sys.exit(3)", 3),
    "uncaught": ("raise RuntimeError('uncaught at exit')", 1),
}


def run_child(tmp_path, body, expect_status, timeout=120):
    script = tmp_path / "child.py"
    script.write_text(as_main(textwrap.dedent(PRELUDE) + textwrap.dedent(body)))
    try:
        proc = subprocess.run([sys.executable, str(script), str(tmp_path)], cwd=ROOT, capture_output=True,
                              text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"the interpreter did not exit (hung); it printed:\n{e.stdout}\n{e.stderr}")
    assert proc.returncode == expect_status, proc.stderr[-3000:]
    assert "alive" in proc.stdout
    for bad in ("FATAL", "terminate called", "Aborted", "Fatal Python error", "Segmentation"):
        assert bad not in proc.stderr, proc.stderr[-3000:]
    return proc


# Recipes whose first element never comes (or only after seconds): their
# iterators are made, and their threads started, but next() is not called.
NO_FIRST_ELEMENT = {"batch", "padded_batch", "unbatch", "skip", "shuffle", "batch/parallel", "shuffle/prefetch"}


def _live(recipes):
    """Code that leaves one started iterator of each recipe alive (in a list),
    each having handed out an element where it has one to give."""
    lines = ["live = []"]
    for name, recipe in recipes.items():
        numpy = name == "as_numpy_iterator"
        lines.append(f"ds = {recipe}")
        lines.append(f"it = iter(ds.as_numpy_iterator() if {numpy} else ds)")
        lines.append("live.append(it)")
        if "NEVER" not in recipe and name not in NO_FIRST_ELEMENT:
            lines.append("next(it)")
    lines.append("time.sleep(0.2)  # their threads busy")
    lines.append("print('alive', len(live), flush=True)")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("how", list(EXITS))
def test_exit_with_an_iterator_of_every_transformation_alive(tmp_path, how):
    code, status = EXITS[how]
    run_child(tmp_path, _live({**DATASET_RECIPES, **THREADED_RECIPES}) + code + "\n", status)


@pytest.mark.parametrize("name", list(THREADED_RECIPES) + ["from_generator", "zip", "interleave"])
def test_exit_with_a_threaded_iterator_alive(tmp_path, name):
    recipe = {**DATASET_RECIPES, **THREADED_RECIPES}[name]
    run_child(tmp_path, _live({name: recipe}), 0)


PREFETCH_GENERATOR = """
# Python generators behind C++ threads that are busy taking the GIL at exit.
sources = [PYINF.prefetch(10 ** 6),
           Dataset.range(4).interleave(lambda x: PYINF, cycle_length=2, num_parallel_calls=2),
           PYINF.map(lambda x: x + 1, num_parallel_calls=2),
           PYINF.batch(3, num_parallel_calls=2)]
live = [iter(ds) for ds in sources]
for it in live:
    next(it)
print("alive", flush=True)
"""


@pytest.mark.parametrize("attempt", range(3))  # the abort was a race: twice in three runs
def test_item10_exit_with_prefetch_and_parallel_interleave_over_a_generator(tmp_path, attempt):
    run_child(tmp_path, PREFETCH_GENERATOR, 0)


ENTRY_POINTS = LOOP_AND_WEAVE_HELPERS + """
loop_over(PYINF.take(100).prefetch(2))
woven = td.data.experimental.parallel_weave(range(100), weave_hangs_on_3, vector_loom()[0], processes=2,
                                            chunk_size=1)
woven_it = iter(woven)
next(woven_it)
time.sleep(0.5)  # a worker now hangs on example 3
print("alive", flush=True)
"""


@pytest.mark.parametrize("how", list(EXITS))
def test_exit_with_live_entry_points(tmp_path, how):
    code, status = EXITS[how]
    run_child(tmp_path, ENTRY_POINTS + code + "\n", status, timeout=180)


STUCK_IN_NEXT = """
# A generator whose next() never returns, behind a prefetch thread: the thread
# outlasts the exit hook's wait inside Python, and Python ends it by a forced
# unwind through treadle's frames when the interpreter finalizes.
def stuck():
    while True:
        time.sleep(0.005)
    yield 0
ds = Dataset.from_generator(stuck, output_signature=td.TensorSpec([], td.int64)).prefetch(2)
it = iter(ds)
time.sleep(0.2)
print("alive", flush=True)
"""


def test_exit_with_a_generator_stuck_inside_next(tmp_path):
    run_child(tmp_path, STUCK_IN_NEXT, 0)


GATE = """
from treadle import _core
calls = []
def counted():
    while True:
        calls.append(1)
        yield len(calls)
spec = td.TensorSpec([], td.int64)
ahead = iter(Dataset.from_generator(counted, output_signature=spec).prefetch(3))
next(ahead)
# The exit hook: treadle's threads come out of Python and enter it no more.
assert _core._stop_entering_python()
seen = len(calls)
time.sleep(0.3)
assert len(calls) == seen, (seen, len(calls))
try:
    while True:
        next(ahead)  # the elements fetched before, then the prefetch thread's refusal
except td.errors.CancelledError as e:
    assert "interpreter is exiting" in str(e), e
# The main thread is Python's own: it still runs a generator.
assert [int(x) for x in Dataset.from_generator(counted, output_signature=spec).take(2)] == [seen + 1, seen + 2]
print("alive", flush=True)
"""


def test_treadle_threads_enter_python_no_more_after_the_exit_hook(tmp_path):
    run_child(tmp_path, GATE, 0)
