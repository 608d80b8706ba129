"""Elementwise fusion (src/cpp/graph/elementwise_fusion.h): chains of float32
elementwise ops, with an absorbed Split, run as one node. Every graph is
planned twice, fused and unfused, and the results must be the same bits at
every SIMD level the machine has; NumPy checks the values; shapes the fast
path does not take (broadcasts along other axes, mismatches) must give the
unfused results and errors."""

import contextlib
import os
import subprocess
import sys

import numpy as np
import pytest

import treadle as td
from treadle import _core

from graph_testlib import F32, GraphBuilder, run

RNG = np.random.RandomState(12)
LEVELS = td.config.isa_info()["available"]


@contextlib.contextmanager
def fusion(on):
    before = _core.elementwise_fusion_enabled()
    _core.set_elementwise_fusion(on)
    try:
        yield
    finally:
        _core.set_elementwise_fusion(before)


@contextlib.contextmanager
def isa(level):
    before = td.config.isa_info()["level"]
    td.config.set_isa(level)
    try:
        yield
    finally:
        td.config.set_isa(before)


def both(g, inputs, outputs):
    """The fused and the unfused Executable of one graph."""
    with fusion(True):
        fused = g.executable(inputs, outputs)
    with fusion(False):
        plain = g.executable(inputs, outputs)
    return fused, plain


def assert_same_bits(a, b):
    assert a.dtype == b.dtype and a.shape == b.shape
    np.testing.assert_array_equal(a.view(np.uint32), b.view(np.uint32))


def lstm_cell_graph(width, pieces=5):
    """The binary TreeLSTM's node cell after its matmul: bias add, Split into
    five gates, c = s(i) t(u) + s(fl) cl + s(fr) cr, h = s(o) t(c)."""
    g = GraphBuilder()
    g.placeholder("z", F32, [None, pieces * width])
    g.placeholder("b", F32, [pieces * width])
    g.placeholder("cl", F32, [None, width])
    g.placeholder("cr", F32, [None, width])
    g.binary("AddV2", "z", "b", "zb")
    g.const("axis", np.int32(1))
    g.node("split", "Split", ["axis", "zb"], num_split=pieces)
    g.unary("Sigmoid", "split:0", "si")
    g.unary("Sigmoid", "split:1", "sfl")
    g.unary("Sigmoid", "split:2", "sfr")
    g.unary("Sigmoid", "split:3", "so")
    g.unary("Tanh", "split:4", "tu")
    g.binary("Mul", "si", "tu", "m0")
    g.binary("Mul", "sfl", "cl", "m1")
    g.binary("Mul", "sfr", "cr", "m2")
    g.binary("AddV2", "m0", "m1", "a1")
    g.binary("AddV2", "a1", "m2", "c")
    g.unary("Tanh", "c", "tc")
    g.binary("Mul", "so", "tc", "h")
    return g


def sigmoid(x):
    return 1 / (1 + np.exp(-x.astype(np.float64)))


def lstm_cell_numpy(z, b, cl, cr):
    i, fl, fr, o, u = np.split(z.astype(np.float64) + b, 5, axis=1)
    c = sigmoid(i) * np.tanh(u) + sigmoid(fl) * cl + sigmoid(fr) * cr
    return c, sigmoid(o) * np.tanh(c)


def special_values(shape):
    x = (RNG.randn(*shape) * 4).astype(np.float32)
    flat = x.reshape(-1)
    specials = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-40, -1e-40, 88.8, -104.5, 30.0, -30.0],
                        np.float32)
    flat[:specials.size] = specials[:flat.size]
    return x


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("rows,width", [(1, 16), (3, 17), (7, 150), (64, 150), (5, 40)])
def test_lstm_cell_fuses_and_keeps_every_bit(level, rows, width):
    with isa(level):
        fused, plain = both(lstm_cell_graph(width), ["z", "b", "cl", "cr"], ["c", "h", "si"])
        assert fused.num_nodes == 1 < plain.num_nodes
        z = special_values((rows, 5 * width))
        b = (RNG.randn(5 * width)).astype(np.float32)
        cl, cr = (RNG.randn(2, rows, width)).astype(np.float32)
        got = run(fused, z, b, cl, cr)
        want = run(plain, z, b, cl, cr)
    for g, w in zip(got, want):
        assert_same_bits(g, w)
    finite = np.isfinite(z).all(axis=1)
    c, h = lstm_cell_numpy(z[finite], b, cl[finite], cr[finite])
    np.testing.assert_allclose(got[0][finite], c, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[1][finite], h, rtol=1e-5, atol=1e-6)


def gradient_graph(width):
    """A backward cell: the gradients of tanh and sigmoid, AddN, products."""
    g = GraphBuilder()
    for name in ("y", "t", "dy", "dh"):
        g.placeholder(name, F32, [None, width])
    g.binary("TanhGrad", "t", "dh", "gt")
    g.node("sum", "AddN", ["dy", "gt", "dh"])
    g.binary("Mul", "sum", "y", "m")
    g.binary("SigmoidGrad", "y", "m", "gs")
    g.unary("Neg", "gs", "n")
    g.unary("Square", "n", "sq")
    g.unary("Relu", "n", "r")
    g.binary("Maximum", "sq", "r", "mx")
    g.binary("Minimum", "mx", "gt", "mn")
    g.binary("RealDiv", "mn", "sum", "q")
    g.binary("Sub", "q", "y", "s")
    g.unary("Exp", "s", "e")
    g.unary("Log", "e", "out")
    return g


@pytest.mark.parametrize("level", LEVELS)
def test_gradient_ops_and_the_rest_fuse_bit_identically(level):
    width = 33
    with isa(level):
        fused, plain = both(gradient_graph(width), ["y", "t", "dy", "dh"], ["out", "sum"])
        assert fused.num_nodes == 1 < plain.num_nodes
        args = [special_values((9, width)) for _ in range(4)]
        got, want = run(fused, *args), run(plain, *args)
    for g, w in zip(got, want):
        assert_same_bits(g, w)
    y, t, dy, dh = (a.astype(np.float64) for a in args)
    ok = np.isfinite(np.stack(args)).all(axis=0)
    with np.errstate(invalid="ignore"):
        total = dy + dh * (1 - t * t) + dh
    np.testing.assert_allclose(got[1][ok], total[ok], rtol=1e-5, atol=1e-5)


def broadcast_chain(shape_x, shape_y):
    g = GraphBuilder()
    g.placeholder("x", F32, shape_x)
    g.placeholder("y", F32, shape_y)
    g.binary("Mul", "x", "y", "m")
    g.unary("Sigmoid", "m", "s")
    g.binary("AddV2", "s", "y", "out")
    return g


@pytest.mark.parametrize("x_shape,y_shape", [
    ((4, 32), (4, 32)),     # equal shapes: one long row
    ((4, 32), (1, 32)),     # a row broadcast
    ((4, 32), (32,)),       # a lower-rank row
    ((2, 3, 32), (1, 1, 32)),
    ((2, 3, 32), (2, 1, 32)),  # broadcast along a middle axis: the ops one by one
    ((1, 32), (5, 32)),     # x is the broadcast row
    ((3, 32), (1, 1)),      # a scalar of rank 2
    ((0, 32), (1, 32)),     # empty
])
def test_broadcasting_gives_the_unfused_results(x_shape, y_shape):
    g = broadcast_chain([None] * (len(x_shape) - 1) + [32], [None] * (len(y_shape) - 1) + [y_shape[-1]])
    fused, plain = both(g, ["x", "y"], ["out"])
    x = RNG.randn(*x_shape).astype(np.float32)
    y = RNG.randn(*y_shape).astype(np.float32)
    (got,), (want,) = run(fused, x, y), run(plain, x, y)
    assert_same_bits(got, want)
    np.testing.assert_allclose(got, sigmoid(x * y) + y, rtol=1e-6, atol=1e-6)


def test_a_shape_mismatch_raises_the_unfused_error():
    g = broadcast_chain([None, 32], [None, 32])
    fused, plain = both(g, ["x", "y"], ["out"])
    x = np.ones((4, 32), np.float32)
    y = np.ones((3, 32), np.float32)
    with pytest.raises(td.errors.InvalidArgumentError) as plain_error:
        run(plain, x, y)
    with pytest.raises(td.errors.InvalidArgumentError) as fused_error:
        run(fused, x, y)
    first_line = str(plain_error.value).splitlines()[0]
    assert first_line in str(fused_error.value)
    assert "node 'm' (Mul)" in str(fused_error.value)


def test_a_mismatch_after_the_split_raises_the_unfused_error():
    g = lstm_cell_graph(20)
    fused, plain = both(g, ["z", "b", "cl", "cr"], ["h"])
    # The gates have 2 rows, the cell state 3: Mul cannot broadcast them.
    z = np.ones((2, 100), np.float32)
    b = np.ones(100, np.float32)
    cl = np.ones((3, 20), np.float32)
    with pytest.raises(td.errors.InvalidArgumentError) as plain_error:
        run(plain, z, b, cl, cl)
    with pytest.raises(td.errors.InvalidArgumentError) as fused_error:
        run(fused, z, b, cl, cl)
    assert str(plain_error.value).splitlines()[0] in str(fused_error.value)


def test_narrow_or_unknown_widths_and_other_dtypes_do_not_fuse():
    for shape in ([None, 8], [None, None], None):
        g = broadcast_chain(shape, shape)
        fused, plain = both(g, ["x", "y"], ["out"])
        assert fused.num_nodes == plain.num_nodes == 3


def test_a_path_out_of_the_group_and_back_blocks_fusion():
    g = GraphBuilder()
    g.placeholder("x", F32, [None, 32])
    g.unary("Sigmoid", "x", "s")
    g.node("shape", "Shape", ["s"])
    g.node("back", "Reshape", ["s", "shape"])  # leaves the group and comes back
    g.binary("Mul", "s", "back", "out")
    fused, plain = both(g, ["x"], ["out"])
    assert fused.num_nodes == plain.num_nodes
    x = RNG.randn(3, 32).astype(np.float32)
    assert_same_bits(run(fused, x)[0], run(plain, x)[0])


def test_control_edges_keep_their_nodes_out():
    g = GraphBuilder()
    g.placeholder("x", F32, [None, 32])
    g.unary("Tanh", "x", "t")
    g.node("anchor", "NoOp", [])
    g.node("e", "Exp", ["t", "^anchor"])
    g.binary("Mul", "e", "t", "out")
    fused, plain = both(g, ["x"], ["out"])
    assert fused.num_nodes == plain.num_nodes == 3
    x = RNG.randn(2, 32).astype(np.float32)
    assert_same_bits(run(fused, x)[0], run(plain, x)[0])


def test_intermediate_results_and_unused_values():
    g = lstm_cell_graph(16)
    # Every gate and the cell: a training forward returns them all.
    outs = ["si", "sfl", "sfr", "so", "tu", "m0", "m1", "m2", "a1", "c", "tc", "h"]
    fused, plain = both(g, ["z", "b", "cl", "cr"], outs)
    args = [RNG.randn(6, 80).astype(np.float32), RNG.randn(80).astype(np.float32),
            RNG.randn(6, 16).astype(np.float32), RNG.randn(6, 16).astype(np.float32)]
    for got, want in zip(run(fused, *args), run(plain, *args)):
        assert_same_bits(got, want)
    # Only c requested: h's branch is pruned, not computed into nothing.
    fused, plain = both(g, ["z", "b", "cl", "cr"], ["c"])
    assert_same_bits(run(fused, *args)[0], run(plain, *args)[0])


def test_a_traced_function_gives_the_same_bits_fused():
    w = RNG.randn(24, 5 * 40).astype(np.float32) * 0.3
    bias = RNG.randn(5 * 40).astype(np.float32)

    def cell(x, c):
        i, f, g, o, u = td.split(td.matmul(x, w) + bias, 5, axis=1)
        c2 = td.sigmoid(i) * td.tanh(u) + td.sigmoid(f) * c - td.nn.relu(g)
        return td.sigmoid(o) * td.tanh(c2)

    x = RNG.randn(10, 24).astype(np.float32)
    c = RNG.randn(10, 40).astype(np.float32)
    results = []
    for on in (True, False):
        with fusion(on):
            f = td.function(cell, input_signature=[td.TensorSpec([None, 24], td.float32),
                                                   td.TensorSpec([None, 40], td.float32)])
            results.append(f(td.constant(x), td.constant(c)).numpy())
    assert_same_bits(results[0], results[1])


def test_the_environment_variable_turns_fusion_off_at_import():
    code = "from treadle import _core; print(_core.elementwise_fusion_enabled())"
    for value, expected in (("0", "False"), ("1", "True")):
        env = dict(os.environ, TREADLE_ELEMENTWISE_FUSION=value)
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
        assert out.stdout.strip() == expected
