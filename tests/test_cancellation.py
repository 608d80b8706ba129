"""Stopping long runs: Ctrl-C (SIGINT) and td.experimental.deadline stop a
While loop that never ends and a loom, and treadle stays usable after.

The Ctrl-C cases run in a child process (a fixed time limit on the child
turns a run that cannot be stopped into a failure instead of a hung suite)."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import treadle as td

from tests.loom.loom_testlib import VEC3, vector_loom

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

FOREVER = """
import os, signal, threading, time
import numpy as np
import treadle as td

@td.function
def forever(x):
    while x > 0.0:   # AutoGraph: a While node whose condition stays true
        x = x + 1.0
    return x

def interrupt_after(seconds):
    threading.Timer(seconds, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
"""


def _child(tmp_path, body):
    script = tmp_path / "child.py"  # a file: AutoGraph reads the source
    script.write_text(textwrap.dedent(FOREVER) + textwrap.dedent(body))
    proc = subprocess.run([sys.executable, str(script)], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def test_ctrl_c_stops_a_while_loop_that_never_ends(tmp_path):
    out = _child(tmp_path, """
        for attempt in range(2):   # twice: the first interrupt leaves treadle usable
            interrupt_after(0.3)
            try:
                forever(td.constant(1.0))
                print("finished")
            except KeyboardInterrupt:
                print("interrupted")
        print(float(td.function(lambda x: x * 2.0)(td.constant(21.0))))
    """)
    assert out.split() == ["interrupted", "interrupted", "42.0"]


def test_ctrl_c_with_a_program_handler_installed_after_import(tmp_path):
    out = _child(tmp_path, """
        seen = []
        signal.signal(signal.SIGINT, lambda sig, frame: seen.append(sig))
        interrupt_after(0.3)
        try:
            forever(td.constant(1.0))
        except td.errors.CancelledError:
            print("cancelled", seen == [signal.SIGINT])
    """)
    assert out.split() == ["cancelled", "True"]


def test_ctrl_c_stops_a_loom_whose_op_never_ends(tmp_path):
    out = _child(tmp_path, """
        vec = td.loom.TypeShape("float32", (1,))
        class Spin(td.loom.LoomOp):
            def __init__(self):
                super().__init__([vec], [vec])
            def instantiate_batch(self, inputs):
                return [td.while_loop(lambda v: td.reduce_sum(v) > -1.0, lambda v: v + 1.0, [inputs[0]])[0]]
        loom = td.loom.Loom(named_ops={"spin": Spin()})
        w = loom.make_weaver()
        for i in range(64):    # calls split over the pool's threads
            w.add_output(w.spin(w(np.ones(1, np.float32))))
        interrupt_after(0.3)
        try:
            loom(w)
        except KeyboardInterrupt:
            print("interrupted")
        ok = loom.make_weaver()
        ok.add_output(ok(np.ones(1, np.float32)))
        print(loom(ok)[vec].numpy().tolist())
    """)
    assert out.split("\n")[:2] == ["interrupted", "[[1.0]]"]


def test_deadline_stops_a_while_loop_and_the_next_call_runs():
    @td.function
    def forever(x):
        while x > 0.0:
            x = x + 1.0
        return x

    with pytest.raises(td.errors.DeadlineExceededError, match="deadline"):
        with td.experimental.deadline(0.2):
            forever(td.constant(1.0))
    assert float(forever(td.constant(-1.0))) == -1.0


def test_deadline_stops_a_loom_run():
    loom, x, y = vector_loom()
    w = loom.make_weaver()
    w.add_output(w.add(w.x, w.y))
    with pytest.raises(td.errors.DeadlineExceededError):
        with td.experimental.deadline(0):
            loom(w)
    np.testing.assert_array_equal(loom(w)[VEC3].numpy(), [x.numpy() + y.numpy()])


def test_deadlines_nest_and_are_restored():
    @td.function
    def f(x):
        return x + 1.0

    with td.experimental.deadline(3600):
        with pytest.raises(td.errors.DeadlineExceededError):
            with td.experimental.deadline(0):
                f(td.constant(1.0))
        assert float(f(td.constant(1.0))) == 2.0
    with pytest.raises(ValueError, match="seconds"):
        with td.experimental.deadline(-1):
            pass


def test_deadline_is_per_thread():
    import threading

    @td.function
    def f(x):
        return x * 3.0

    results = []
    with td.experimental.deadline(0):
        t = threading.Thread(target=lambda: results.append(float(f(td.constant(2.0)))))
        t.start()
        t.join()
    assert results == [6.0]


# ---------------------------------------------------------------- the command line's --timeout

def test_treadle_run_timeout(tmp_path, capsys):
    from treadle import cli

    @td.function(input_signature=[td.TensorSpec([], td.float32)])
    def forever(x):
        while x > 0.0:
            x = x + 1.0
        return x

    path = str(tmp_path / "forever.td")
    td.save(forever, path)
    np.save(tmp_path / "x.npy", np.float32(1.0))
    np.save(tmp_path / "neg.npy", np.float32(-3.0))
    assert cli.main(["run", path, "-i", f"x={tmp_path / 'x.npy'}", "--timeout", "0.3"]) == 124
    assert "timed out after 0.3 s" in capsys.readouterr().err
    assert cli.main(["run", path, "-i", f"x={tmp_path / 'neg.npy'}", "--timeout", "60"]) == 0
    assert "-3.0" in capsys.readouterr().out


def test_treadle_loom_run_timeout(tmp_path, capsys):
    from treadle import cli
    loom, _, _ = vector_loom()
    td.save(loom, str(tmp_path / "v.loom"))
    w = loom.make_weaver()
    w.add_output(w.add(w.x, w.y))
    td.loom.write_schedules(str(tmp_path / "s.tfrecord"), [w.serialize()] * 3)
    args = ["loom", "run", str(tmp_path / "v.loom"), str(tmp_path / "s.tfrecord"), "-o", str(tmp_path / "out"), "-q"]
    assert cli.main(args + ["--timeout", "0"]) == 124
    assert "timed out" in capsys.readouterr().err
    assert cli.main(args + ["--timeout", "60"]) == 0
    assert "ran 3 schedules" in capsys.readouterr().out
