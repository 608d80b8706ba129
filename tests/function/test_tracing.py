"""Tracing Python functions into graphs and running them (issue 3)."""

import collections
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import treadle as td


def test_traces_once_per_input_signature_and_matches_eager():
    traces = []

    @td.function
    def f(x, y):
        traces.append(1)
        return td.tanh(x) * y + 1.0

    a = td.constant([[1.0, 2.0], [3.0, 4.0]])
    b = td.constant([[0.5, 0.5], [2.0, 2.0]])
    np.testing.assert_allclose(f(a, b).numpy(), np.tanh(a.numpy()) * b.numpy() + 1.0, rtol=1e-6)
    f(b, a)
    assert len(traces) == 1
    f(td.constant([1.0]), td.constant([2.0]))  # new shape: new trace
    f(td.constant([1.0], td.float64), td.constant([2.0], td.float64))  # new dtype
    assert len(traces) == 3
    assert f.experimental_get_tracing_count() == 3


def test_python_arguments_are_literals():
    traces = []

    @td.function
    def scale(x, factor):
        traces.append(factor)
        return x * factor

    x = td.constant([1.0, 2.0])
    assert scale(x, 2.0).numpy().tolist() == [2.0, 4.0]
    assert scale(x, 3.0).numpy().tolist() == [3.0, 6.0]
    scale(x, 2.0)
    assert traces == [2.0, 3.0]


def test_structured_outputs():
    Point = collections.namedtuple("Point", "x y")

    @td.function
    def f(a):
        return {"sum": a + a, "pair": (a, 7), "point": Point(a * 2.0, "label"), "none": None}

    out = f(td.constant(1.5))
    assert out["sum"].numpy() == 3.0
    assert out["pair"][0].numpy() == 1.5 and out["pair"][1] == 7
    assert isinstance(out["point"], Point) and out["point"].y == "label"
    assert out["point"].x.numpy() == 3.0
    assert out["none"] is None


def test_nested_structure_arguments():
    @td.function
    def f(d):
        return d["a"] + d["b"][0] * d["b"][1]

    d = {"b": [td.constant(2.0), td.constant(3.0)], "a": td.constant(1.0)}
    assert f(d).numpy() == 7.0


def test_captures_eager_tensor_and_variable():
    c = td.constant([10.0, 20.0])
    v = td.Variable([1.0, 1.0])

    @td.function
    def f(x):
        return x + c + v

    x = td.constant([1.0, 2.0])
    assert f(x).numpy().tolist() == [12.0, 23.0]
    v.assign([5.0, 5.0])  # the graph reads the variable when it runs
    assert f(x).numpy().tolist() == [16.0, 27.0]


def test_variable_updates_inside_function():
    v = td.Variable(0)

    @td.function
    def step():
        v.assign_add(1)
        return v.read_value()

    assert [int(step()) for _ in range(3)] == [1, 2, 3]
    assert v.numpy() == 3


def test_graph_def_inspection():
    @td.function
    def f(x, y):
        return td.tanh(x) + y

    concrete = f.get_concrete_function(td.TensorSpec([None, 2]), td.TensorSpec([None, 2]))
    gd = concrete.graph.as_graph_def()
    ops = [n.op for n in gd.node]
    assert ops.count("Placeholder") == 2 and "Tanh" in ops and "AddV2" in ops
    add = next(n for n in gd.node if n.op == "AddV2")
    assert list(add.input) == ["Tanh", "y"]
    assert "TensorSpec(shape=(None, 2)" in str(concrete)
    out = concrete(td.constant([[0.0, 1.0]]), td.constant([[1.0, 1.0]]))
    np.testing.assert_allclose(out.numpy(), [[1.0, 1.0 + np.tanh(1.0)]], rtol=1e-6)


def test_symbolic_shapes_inferred():
    seen = {}

    @td.function
    def f(x):
        y = td.matmul(x, x, transpose_b=True)
        seen["shape"] = y.shape.as_list()
        return y

    f.get_concrete_function(td.TensorSpec([None, 3]))
    assert seen["shape"] == [None, None]


def test_nested_function_calls():
    @td.function
    def inner(x):
        return x * 2.0

    @td.function
    def outer(x):
        return inner(x) + inner(x + 1.0)

    assert outer(td.constant(1.0)).numpy() == 6.0
    ops = [n.op for n in outer.get_concrete_function(td.constant(1.0)).graph.as_graph_def().node]
    assert "PartitionedCall" in ops


def test_cond_and_while_in_graph():
    @td.function
    def f(x, n):
        y = td.cond(x > 0.0, lambda: x * 2.0, lambda: -x)
        i, total = td.while_loop(lambda i, t: i < n, lambda i, t: (i + 1, t + y), (td.constant(0), td.constant(0.0)))
        return total

    assert f(td.constant(3.0), td.constant(4)).numpy() == 24.0
    assert f(td.constant(-3.0), td.constant(2)).numpy() == 6.0
    assert f(td.constant(-3.0), td.constant(0)).numpy() == 0.0


def test_while_loop_maximum_iterations():
    @td.function
    def f():
        return td.while_loop(lambda i: i < 100, lambda i: i + 1, td.constant(0), maximum_iterations=7)

    assert f().numpy() == 7


def test_tensor_array_in_loop():
    @td.function
    def squares(n):
        ta = td.TensorArray(td.float32, size=0, dynamic_size=True)

        def body(i, ta):
            return i + 1, ta.write(i, td.cast(i * i, td.float32))

        _, ta = td.while_loop(lambda i, ta: i < n, body, (td.constant(0), ta))
        return ta.stack()

    assert squares(td.constant(5)).numpy().tolist() == [0.0, 1.0, 4.0, 9.0, 16.0]


def test_print_and_py_function_run_every_call(capfd):
    calls = []

    def record(x):
        calls.append(float(x))
        return x * 10.0

    @td.function
    def f(x):
        td.print("value:", x)
        return td.py_function(record, inp=[x], Tout=td.float32)

    assert f(td.constant(1.0)).numpy() == 10.0
    assert f(td.constant(2.0)).numpy() == 20.0
    assert calls == [1.0, 2.0]
    err = capfd.readouterr().err
    assert "value: 1" in err and "value: 2" in err


def test_threads_share_one_function():
    @td.function
    def f(x):
        return td.tanh(x) * 2.0

    f(td.constant([0.0]))
    results, errors = {}, []

    def work(k):
        try:
            for _ in range(50):
                x = td.constant([float(k)])
                results[k] = f(x).numpy()[0]
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for k in range(8):
        assert results[k] == pytest.approx(np.tanh(k) * 2.0, rel=1e-6)


def test_save_and_load_in_a_fresh_process(tmp_path):
    v = td.Variable([1.0, 2.0])

    @td.function(input_signature=[td.TensorSpec([None, 2])])
    def f(x):
        return {"y": td.tanh(x) * v + 3.0}

    path = str(tmp_path / "f.td")
    td.save(f, path)
    script = textwrap.dedent(f"""
        import numpy as np, treadle as td
        g = td.load({path!r})
        out = g(td.constant([[0.0, 1.0], [2.0, 3.0]]))
        print(out["y"].numpy().tolist())
    """)
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    expected = np.tanh(np.array([[0.0, 1.0], [2.0, 3.0]], np.float32)) * [1.0, 2.0] + 3.0
    np.testing.assert_allclose(np.array(eval(res.stdout.strip())), expected, rtol=1e-6)


def test_load_rejects_corrupt_files(tmp_path):
    @td.function(input_signature=[td.TensorSpec([2])])
    def f(x):
        return x + 1.0

    path = tmp_path / "f.td"
    td.save(f, str(path))
    data = path.read_bytes()
    (tmp_path / "trunc.td").write_bytes(data[: len(data) // 2])
    with pytest.raises(td.errors.DataLossError, match="truncated"):
        td.load(str(tmp_path / "trunc.td"))
    corrupt = bytearray(data)
    corrupt[-3] ^= 0xFF
    (tmp_path / "corrupt.td").write_bytes(bytes(corrupt))
    with pytest.raises(td.errors.DataLossError, match="checksum"):
        td.load(str(tmp_path / "corrupt.td"))
    (tmp_path / "junk.td").write_bytes(b"hello world, not a model")
    with pytest.raises(td.errors.DataLossError, match="not a treadle file"):
        td.load(str(tmp_path / "junk.td"))


def test_leaked_tensor_is_out_of_scope():
    leaked = []

    @td.function
    def f(x):
        leaked.append(x + 1.0)
        return x

    f(td.constant(1.0))
    with pytest.raises(TypeError, match="out of scope"):
        @td.function
        def g(y):
            return y + leaked[0]
        g(td.constant(1.0))
    with pytest.raises(AttributeError):
        leaked[0].numpy()


def test_recursion_is_an_error():
    @td.function
    def fact(n):
        return n * fact(n - 1)

    with pytest.raises(RecursionError, match="calls itself"):
        fact(td.constant(3))


def test_command_line_runs_saved_function(tmp_path):
    @td.function(input_signature=[td.TensorSpec([None], td.float32), td.TensorSpec([None], td.float32)])
    def f(x, y):
        return x * y + 1.0

    path = str(tmp_path / "f.td")
    td.save(f, path)
    np.save(tmp_path / "x.npy", np.array([1.0, 2.0], np.float32))
    np.save(tmp_path / "y.npy", np.array([3.0, 4.0], np.float32))
    out_dir = tmp_path / "out"
    res = subprocess.run([sys.executable, "-m", "treadle", "run", path, "-i", f"x={tmp_path / 'x.npy'}",
                          "-i", f"y={tmp_path / 'y.npy'}", "-o", str(out_dir)], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert np.load(out_dir / "output_0.npy").tolist() == [4.0, 9.0]
    show = subprocess.run([sys.executable, "-m", "treadle", "show", path], capture_output=True, text=True)
    assert show.returncode == 0, show.stderr
    assert "Mul(x, y)" in show.stdout and "AddV2" in show.stdout
