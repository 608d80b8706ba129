"""The graph executor on hand-built GraphDefs: results against NumPy, pruning,
control dependencies, constants, signatures, argument checks and concurrency."""

import threading

import numpy as np
import pytest

import treadle as td
from treadle import _core

from graph_testlib import BOOL, DT, F32, F64, I32, I64, STRING, GraphBuilder, Shape, run, tensor

RNG = np.random.RandomState(7)


def elementwise_chain(dtype_enum, shape):
    g = GraphBuilder()
    g.placeholder("x", dtype_enum, shape)
    g.placeholder("y", dtype_enum, shape)
    g.binary("Mul", "x", "y", "xy")
    g.binary("AddV2", "xy", "x", "s")
    g.binary("Sub", "s", "y", "d")
    g.unary("Neg", "d", "n")
    g.binary("Maximum", "n", "xy", "out")
    return g


@pytest.mark.parametrize("np_dtype,enum", [(np.float32, F32), (np.float64, F64), (np.int32, I32), (np.int64, I64)])
@pytest.mark.parametrize("shape", [[], [3], [2, 3], [2, 1, 4]])
def test_elementwise_chain_matches_numpy(np_dtype, enum, shape):
    exe = elementwise_chain(enum, shape).executable(["x", "y"], ["out"])
    x = np.asarray(RNG.randn(*shape) * 10).astype(np_dtype)
    y = np.asarray(RNG.randn(*shape) * 10).astype(np_dtype)
    (out,) = run(exe, x, y)
    expected = np.maximum(-((x * y + x) - y), x * y)
    assert out.dtype == np_dtype and out.shape == tuple(shape)
    np.testing.assert_allclose(out, expected, rtol=1e-6)


@pytest.mark.parametrize("shape", [None, [None, 3], [2, None]])
def test_partially_known_shapes_infer_at_run_time(shape):
    exe = elementwise_chain(F32, shape).executable(["x", "y"], ["out"])
    for concrete in ([2, 3], [5, 3] if shape != [2, None] else [2, 7]):
        x = RNG.randn(*concrete).astype(np.float32)
        y = RNG.randn(*concrete).astype(np.float32)
        (out,) = run(exe, x, y)
        np.testing.assert_allclose(out, np.maximum(-((x * y + x) - y), x * y), rtol=1e-6)


def test_broadcasting_and_unary_math():
    g = GraphBuilder()
    g.placeholder("a", F64, [2, 1, 3])
    g.placeholder("b", F64, [4, 1])
    g.binary("AddV2", "a", "b", "s")
    g.unary("Tanh", "s", "t")
    g.unary("Exp", "t", "e")
    g.binary("RealDiv", "e", "b", "q")
    exe = g.executable(["a", "b"], ["q", "s"])
    a, b = RNG.randn(2, 1, 3), RNG.rand(4, 1) + 1
    q, s = run(exe, a, b)
    np.testing.assert_allclose(s, a + b)
    np.testing.assert_allclose(q, np.exp(np.tanh(a + b)) / b)


def test_multiple_outputs_repeats_and_output_index():
    g = GraphBuilder()
    g.placeholder("x", F32, [2])
    g.unary("Square", "x", "sq")
    g.unary("Neg", "x", "neg")
    exe = g.executable(["x"], ["sq", "neg:0", "sq:0", "x"])
    x = np.array([1.5, -2.0], np.float32)
    sq, neg, sq2, same = run(exe, x)
    np.testing.assert_array_equal(sq, x * x)
    np.testing.assert_array_equal(sq2, x * x)
    np.testing.assert_array_equal(neg, -x)
    np.testing.assert_array_equal(same, x)
    assert exe.num_nodes == 2


def test_unused_nodes_are_not_run():
    g = GraphBuilder()
    g.placeholder("x", F32, [2])
    g.unary("Neg", "x", "used")
    # Would fail at run time (integer division by zero) if it ran.
    g.const("zero", np.array([0, 0], np.int32))
    g.binary("FloorDiv", "zero", "zero", "unused_div")
    for i in range(10):
        g.unary("Exp", "x", f"unused_{i}")
    exe = g.executable(["x"], ["used"])
    assert exe.num_nodes == 1
    (out,) = run(exe, np.array([1, 2], np.float32))
    np.testing.assert_array_equal(out, [-1, -2])


def test_unfed_placeholder_not_needed_is_fine_but_needed_one_is_an_error():
    g = GraphBuilder()
    g.placeholder("x", F32, [2])
    g.placeholder("other", F32, [2])
    g.unary("Neg", "x", "a")
    g.binary("AddV2", "x", "other", "b")
    exe = g.executable(["x"], ["a"])
    np.testing.assert_array_equal(run(exe, np.ones(2, np.float32))[0], [-1, -1])
    with pytest.raises(td.errors.InvalidArgumentError, match="Placeholder node 'other' must be fed"):
        g.executable(["x"], ["b"])


def test_control_dependencies_run_first_and_keep_nodes():
    g = GraphBuilder()
    g.placeholder("x", F32, [])
    g.node("first", "Print", ["x"])
    g.node("anchor", "NoOp", ["^first"])
    g.unary("Neg", "x", "y")
    g.node("z", "Square", ["y", "^anchor"])
    exe = g.executable(["x"], ["z"])
    assert exe.num_nodes == 3  # Print, Neg, Square (NoOp is only an anchor)
    (out,) = run(exe, np.float32(3))
    assert out == 9


def test_control_dependency_pulls_in_otherwise_unused_node(capfd):
    g = GraphBuilder()
    g.placeholder("x", F32, [])
    g.unary("Exp", "x", "side")
    g.node("log", "Print", ["side"])
    g.node("y", "Neg", ["x", "^log"])
    exe = g.executable(["x"], ["y"])
    run(exe, np.float32(0))
    assert capfd.readouterr().err == "1\n"


def test_const_values_and_dtypes():
    g = GraphBuilder()
    g.const("c", np.arange(6, dtype=np.float64).reshape(2, 3))
    g.const("i", np.array([7, -1], np.int64))
    g.const("b", np.array(True))
    g.const("s", np.array([b"ab", b"c"], dtype=object))
    g.placeholder("x", F64, [2, 3])
    g.binary("Mul", "x", "c", "xc")
    exe = g.executable(["x"], ["xc", "c", "i", "b", "s"])
    assert exe.num_nodes == 1
    x = RNG.randn(2, 3)
    xc, c, i, b, s = run(exe, x)
    np.testing.assert_allclose(xc, x * np.arange(6).reshape(2, 3))
    np.testing.assert_array_equal(c, np.arange(6).reshape(2, 3))
    assert i.dtype == np.int64 and list(i) == [7, -1]
    assert b.dtype == np.bool_ and b
    assert list(s) == [b"ab", b"c"]


def test_graph_with_no_inputs():
    g = GraphBuilder()
    g.const("a", np.float32(2))
    g.const("b", np.float32(5))
    g.binary("Pow", "a", "b", "p")
    exe = g.executable([], ["p"])
    assert run(exe)[0] == 32


def test_signatures():
    g = GraphBuilder()
    g.placeholder("x", F32, [2, None])
    g.placeholder("n", I32, None)
    g.placeholder("u", F64)
    g.unary("Neg", "x", "y")
    exe = g.executable(["x", "n", "u"], ["y", "n"])
    assert exe.input_signature == [(td.float32, (2, None)), (td.int32, None), (td.float64, None)]
    assert exe.output_signature == [(td.float32, (2, None)), (td.int32, None)]
    assert "Executable" in repr(exe)


def test_call_is_run_and_tuple_args():
    g = GraphBuilder()
    g.placeholder("x", I32, [])
    g.unary("Neg", "x", "y")
    exe = g.executable(["x"], ["y"])
    assert exe((tensor(4, np.int32),))[0].numpy() == -4
    assert exe([tensor(5, np.int32)])[0].numpy() == -5


def test_bool_and_string_ops():
    g = GraphBuilder()
    g.placeholder("a", BOOL, [3])
    g.placeholder("b", BOOL, [3])
    g.binary("LogicalAnd", "a", "b", "and")
    g.unary("LogicalNot", "and", "nand")
    g.placeholder("s", STRING, [2])
    g.binary("AddV2", "s", "s", "ss")
    g.binary("Equal", "ss", "s", "eq")
    exe = g.executable(["a", "b", "s"], ["nand", "ss", "eq"])
    a = np.array([True, True, False])
    b = np.array([True, False, False])
    nand, ss, eq = run(exe, a, b, tensor(np.array([b"x", b""], dtype=object)))
    np.testing.assert_array_equal(nand, ~(a & b))
    assert list(ss) == [b"xx", b""]
    np.testing.assert_array_equal(eq, [False, True])


def test_run_time_kernel_error_names_node():
    g = GraphBuilder()
    g.placeholder("x", I32, [2])
    g.placeholder("y", I32, [2])
    g.binary("FloorDiv", "x", "y", "div")
    exe = g.executable(["x", "y"], ["div"])
    with pytest.raises(td.errors.InvalidArgumentError, match="(?s)division by zero.*node 'div'"):
        run(exe, np.array([1, 2], np.int32), np.array([1, 0], np.int32))


def test_run_time_shape_error_names_node():
    g = GraphBuilder()
    g.placeholder("x", F32, [None])
    g.placeholder("y", F32, [None])
    g.binary("AddV2", "x", "y", "add")
    exe = g.executable(["x", "y"], ["add"])
    with pytest.raises(td.errors.InvalidArgumentError, match="(?s)Incompatible shapes.*node 'add'"):
        run(exe, np.ones(2, np.float32), np.ones(3, np.float32))


def test_wrong_argument_count_dtype_and_shape():
    g = GraphBuilder()
    g.placeholder("x", F32, [2])
    g.placeholder("y", F32, [None, 3])
    g.binary("AddV2", "x", "x", "out")
    exe = g.executable(["x", "y"], ["out"])
    ok_y = np.ones((4, 3), np.float32)
    with pytest.raises(td.errors.InvalidArgumentError, match=r"takes 2 arguments \(x, y\) but was given 1"):
        run(exe, np.ones(2, np.float32))
    with pytest.raises(td.errors.InvalidArgumentError, match="argument 'x' must be float32, got int32"):
        run(exe, np.ones(2, np.int32), ok_y)
    with pytest.raises(td.errors.InvalidArgumentError, match=r"argument 'x' must have shape \(2,\), got shape \[3\]"):
        run(exe, np.ones(3, np.float32), ok_y)
    with pytest.raises(td.errors.InvalidArgumentError, match=r"argument 'y' must have shape \(None, 3\)"):
        run(exe, np.ones(2, np.float32), np.ones((4, 2), np.float32))
    with pytest.raises(TypeError, match="not an EagerTensor"):
        exe.run([np.ones(2, np.float32), tensor(ok_y)])
    with pytest.raises(TypeError, match="list of EagerTensors"):
        exe.run(tensor(np.ones(2, np.float32)))


def test_buffers_are_released_after_last_use():
    # A 3-node chain on a large input: the intermediate tensors die as soon as
    # they are consumed, so only the result and the input are alive after the
    # call. Observed through the NumPy base of a zero-copy argument.
    g = GraphBuilder()
    g.placeholder("x", F32, [4])
    g.unary("Neg", "x", "a")
    g.unary("Neg", "a", "b")
    exe = g.executable(["x"], ["b"])
    x = np.arange(4, dtype=np.float32)
    t = _core.tensor_from_numpy(x, copy=False)
    import sys
    before = sys.getrefcount(x)
    out = exe.run([t])
    del t
    assert sys.getrefcount(x) == before - 1  # the executor kept no reference to the input
    np.testing.assert_array_equal(out[0].numpy(), x)


def test_results_do_not_alias_across_calls():
    g = GraphBuilder()
    g.placeholder("x", F32, [2])
    g.unary("Square", "x", "y")
    exe = g.executable(["x"], ["y"])
    first = exe.run([tensor(np.array([1, 2], np.float32))])[0]
    second = exe.run([tensor(np.array([3, 4], np.float32))])[0]
    np.testing.assert_array_equal(first.numpy(), [1, 4])
    np.testing.assert_array_equal(second.numpy(), [9, 16])


def test_many_threads_share_one_executable():
    g = GraphBuilder()
    g.placeholder("x", F64, [None])
    g.placeholder("k", F64, [])
    h = "x"
    for i in range(20):
        g.binary("Mul", h, "k", f"m{i}")
        h = g.unary("Tanh", f"m{i}", f"t{i}")
    exe = g.executable(["x", "k"], [h])

    def reference(x, k):
        for _ in range(20):
            x = np.tanh(x * k)
        return x

    errors = []
    barrier = threading.Barrier(8)

    def worker(seed):
        try:
            rng = np.random.RandomState(seed)
            barrier.wait()
            for _ in range(200):
                n = rng.randint(1, 50)
                x, k = rng.randn(n), rng.rand() + 0.5
                (out,) = run(exe, x, np.float64(k))
                np.testing.assert_allclose(out, reference(x, k), rtol=1e-12)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(s,)) for s in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]


def test_attrs_and_internal_attrs():
    # Explicit type attrs ("T") are accepted when they agree; "_..." attrs are ignored.
    g = GraphBuilder()
    g.placeholder("x", F32, [2])
    g.node("c", "Cast", ["x"], DstT=DT(I64), SrcT=DT(F32), _class="internal")
    g.node("n", "Neg", ["c"], T=DT(I64))
    exe = g.executable(["x"], ["n"])
    (out,) = run(exe, np.array([1.7, -2.2], np.float32))
    assert out.dtype == np.int64
    np.testing.assert_array_equal(out, [-1, 2])


def test_versions_and_shape_attr():
    g = GraphBuilder()
    g.gd.versions.min_consumer = _core.GRAPH_VERSION
    g.node("x", "Placeholder", dtype=DT(F32), shape=Shape([3]))
    exe = g.executable(["x"], ["x"])
    assert exe.input_signature == [(td.float32, (3,))]


def test_long_chain_does_not_exhaust_the_stack():
    # Sorting and planning are iterative: a 20000-node chain loads and runs.
    g = GraphBuilder()
    g.placeholder("x", I64, [])
    g.const("one", np.int64(1))
    h = "x"
    for i in range(20000):
        h = g.binary("AddV2", h, "one", f"a{i}")
    exe = g.executable(["x"], [h])
    assert run(exe, np.int64(5))[0] == 20005


def test_nodes_in_any_order():
    g = GraphBuilder()
    g.node("out", "Mul", ["mid", "x"])
    g.node("mid", "Neg", ["x"])
    g.placeholder("x", F32, [])
    exe = g.executable(["x"], ["out"])
    assert run(exe, np.float32(3))[0] == -9


def test_recycled_buffers_never_touch_arguments_constants_or_results():
    # Dead intermediates' buffers are reused for later outputs; arguments
    # (even zero-copy NumPy memory), constants and fetched values never are.
    g = GraphBuilder()
    g.placeholder("x", F32, [3])
    g.const("c", np.array([1, 2, 3], np.float32))
    g.binary("AddV2", "x", "c", "a")
    g.unary("Neg", "a", "b")        # a dies here unless fetched
    g.unary("Square", "b", "d")     # b dies here
    g.binary("Mul", "d", "c", "e")  # d dies here
    g.unary("Tanh", "x", "t")
    exe = g.executable(["x"], ["b", "e", "t"])
    x = np.array([0.5, -1.0, 2.0], np.float32)
    xt = _core.tensor_from_numpy(x, copy=False)
    for _ in range(3):
        b, e, t = (r.numpy() for r in exe.run([xt]))
        np.testing.assert_array_equal(x, [0.5, -1.0, 2.0])
        np.testing.assert_allclose(b, -(x + [1, 2, 3]))
        np.testing.assert_allclose(e, (x + [1, 2, 3]) ** 2 * [1, 2, 3])
        np.testing.assert_allclose(t, np.tanh(x), rtol=1e-6)
    b, e, t = exe.run([xt])
    assert not b._same_buffer(e) and not e._same_buffer(t) and not b._same_buffer(t)
