"""The Print op: tf.print's formatting, written to stderr (or stdout) when the
graph runs."""

import numpy as np
import pytest

import treadle as td

from graph_testlib import F32, Func, GraphBuilder, run, tensor, types


def printed(capfd, *values, **attrs):
    """Runs one Print node on `values` (fed as graph inputs); returns stderr."""
    g = GraphBuilder()
    names = []
    for i, v in enumerate(values):
        t = v if isinstance(v, td.Tensor) else tensor(v)
        g.placeholder(f"v{i}", t.dtype.as_datatype_enum)
        names.append(f"v{i}")
    g.node("print", "Print", names, **attrs)
    exe = g.executable(names, [])
    capfd.readouterr()
    exe.run([v if isinstance(v, td.Tensor) else tensor(v) for v in values])
    out = capfd.readouterr()
    return out.err if attrs.get("output_stream", "stderr") == "stderr" else out.out


@pytest.mark.parametrize("value,text", [
    (np.float32(1.5), "1.5"), (np.float32(0.1), "0.1"), (np.float32(1) / np.float32(3), "0.333333343"),
    (np.float64(1) / 3, "0.33333333333333331"), (np.float32(1e20), "1e+20"), (np.float32(2), "2"),
    (np.float32(np.nan), "nan"), (np.float64(-np.inf), "-inf"), (np.int32(-7), "-7"),
    (np.int64(2 ** 40), "1099511627776"), (np.array(True), "1"), (np.array(False), "0")])
def test_scalars(capfd, value, text):
    assert printed(capfd, value) == text + "\n"


def test_vectors_and_matrices(capfd):
    assert printed(capfd, np.array([1, 2, 3], np.int32)) == "[1 2 3]\n"
    assert printed(capfd, np.array([[1, 2], [3, 4]], np.int64)) == "[[1 2]\n [3 4]]\n"
    assert printed(capfd, np.arange(8, dtype=np.int32).reshape(2, 2, 2)) == \
        "[[[0 1]\n  [2 3]]\n\n [[4 5]\n  [6 7]]]\n"
    assert printed(capfd, np.array([0.5, -1.25], np.float64)) == "[0.5 -1.25]\n"
    assert printed(capfd, np.array([True, False])) == "[1 0]\n"


def test_empty_tensors(capfd):
    assert printed(capfd, np.zeros((0,), np.float32)) == "[]\n"
    assert printed(capfd, np.zeros((2, 0), np.float32)) == "[[]\n []]\n"


def test_summarize_long_dimensions(capfd):
    assert printed(capfd, np.arange(10, dtype=np.int32)) == "[0 1 2 ... 7 8 9]\n"
    assert printed(capfd, np.arange(6, dtype=np.int32)) == "[0 1 2 3 4 5]\n"
    assert printed(capfd, np.arange(10, dtype=np.int32), summarize=1) == "[0 ... 9]\n"
    assert printed(capfd, np.arange(10, dtype=np.int32), summarize=-1) == "[0 1 2 3 4 5 6 7 8 9]\n"
    grid = np.arange(25, dtype=np.int32).reshape(5, 5)
    assert printed(capfd, grid, summarize=1) == "[[0 ... 4]\n ...\n [20 ... 24]]\n"


def test_strings(capfd):
    assert printed(capfd, td.constant("hello world")) == "hello world\n"
    assert printed(capfd, td.constant([b"a", b"b\n\"c\""])) == '["a" "b\\n\\"c\\""]\n'


def test_several_values_separator_end_and_stdout(capfd):
    assert printed(capfd, td.constant("x ="), np.array([1, 2], np.int32)) == "x = [1 2]\n"
    assert printed(capfd, np.int32(1), np.int32(2), separator=", ", end="!\n") == "1, 2!\n"
    assert printed(capfd, np.int32(3), output_stream="stdout") == "3\n"


def test_bad_output_stream(capfd):
    with pytest.raises(td.errors.InvalidArgumentError, match="output_stream must be"):
        printed(capfd, np.int32(3), output_stream="file.txt")


def test_print_runs_every_call_in_order(capfd):
    g = GraphBuilder()
    g.placeholder("x", F32, [])
    g.node("p1", "Print", ["x"])
    g.unary("Neg", "x", "n")
    g.node("p2", "Print", ["n", "^p1"])
    g.unary("Square", "x", "y")
    exe = g.executable(["x"], ["y"])
    capfd.readouterr()
    for v in (1.0, 2.0):
        assert run(exe, np.float32(v))[0] == v * v
    assert capfd.readouterr().err == "1\n-1\n2\n-2\n"


def test_print_inside_function_and_loop(capfd):
    g = GraphBuilder()
    cond = g.function("cond", [("i", 3)], [("r", 5)])
    cond.const("three", np.int32(3))
    cond.binary("Less", "i", "three", "lt")
    cond.ret(r="lt")
    body = g.function("body", [("i", 3)], [("j", 3)], stateful=True)
    body.const("one", np.int32(1))
    body.node("p", "Print", ["i"], end=";")
    body.node("j", "AddV2", ["i", "one"])
    body.ret(j="j").control_ret("p")
    g.placeholder("i", 3, [])
    g.node("loop", "While", ["i"], T=types(3), cond=Func("cond"), body=Func("body"))
    exe = g.executable(["i"], ["loop"])
    capfd.readouterr()
    assert run(exe, np.int32(0))[0] == 3
    assert capfd.readouterr().err == "0;1;2;"


def test_eager_print(capfd):
    td.raw_ops.Print(inputs=[td.constant([1.5, 2.0])], separator=" ")
    assert capfd.readouterr().err == "[1.5 2]\n"
