"""td.loom.autobatch's gather interceptor: td.gather(variable, row) with a
Python or NumPy integer row inside an example goes to the recorder before
either argument becomes a tensor. It must give the values, gradients
(IndexedSlices to the embedding) and errors of the path that converts the
row to an eager tensor first, and be installed only while a call records."""

import numpy as np
import pytest

import treadle as td
from autobatch_models import finite_difference_gradient
from treadle.ops import _gather, array_ops

pytestmark = pytest.mark.filterwarnings("ignore:.*td.functions were made of")

RNG = np.random.default_rng(23)
EMBEDDING = RNG.uniform(-1, 1, (6, 4))
W = RNG.uniform(-1, 1, (4, 4))
TREES = [(1, (2, 3)), ((4, 5), 0), ((1, 1), (3, (4, 2)))]

# How a leaf's row is passed: the two the interceptor takes, and an eager
# tensor, which it leaves to the converting path.
AS_INT = int
AS_NUMPY = np.int64
AS_TENSOR = td.constant


def _model(row_as):
    emb, w = td.Variable(EMBEDDING), td.Variable(W)

    @td.function
    def combine(a, b):
        return td.tanh(td.linalg.matvec(w, a + b, transpose_a=True))

    def encode(tree):
        if isinstance(tree, int):
            return td.gather(emb, row_as(tree))
        return combine(encode(tree[0]), encode(tree[1]))
    return emb, w, encode


def _numpy(tree, emb=EMBEDDING, w=W):
    if isinstance(tree, int):
        return emb[tree]
    return np.tanh((_numpy(tree[0], emb, w) + _numpy(tree[1], emb, w)) @ w)


def _values_and_gradients(row_as, weights):
    emb, w, encode = _model(row_as)
    with td.GradientTape() as tape:
        out = td.loom.autobatch(encode)(TREES)
        loss = td.reduce_sum(out * weights)
    g_emb, g_w = tape.gradient(loss, [emb, w])
    return emb, w, out.numpy(), g_emb, np.asarray(g_w)


def test_int_and_numpy_rows_give_the_values_and_gradients_of_tensor_rows():
    weights = RNG.uniform(-1, 1, (len(TREES), 4))
    expected = np.stack([_numpy(t) for t in TREES])
    results = {row_as: _values_and_gradients(row_as, weights) for row_as in (AS_INT, AS_NUMPY, AS_TENSOR)}
    _, _, out_t, g_emb_t, g_w_t = results[AS_TENSOR]
    for row_as in (AS_INT, AS_NUMPY):
        emb, w, out, g_emb, g_w = results[row_as]
        np.testing.assert_allclose(out, expected, rtol=1e-12, atol=1e-12)
        np.testing.assert_array_equal(out, out_t)
        assert isinstance(g_emb, td.IndexedSlices) and isinstance(g_emb_t, td.IndexedSlices)
        np.testing.assert_array_equal(np.asarray(td.convert_to_tensor(g_emb)),
                                      np.asarray(td.convert_to_tensor(g_emb_t)))
        np.testing.assert_array_equal(g_w, g_w_t)

    emb, w, _, g_emb, g_w = results[AS_INT]

    def numpy_loss():
        e, m = np.asarray(emb.read_value()), np.asarray(w.read_value())
        return float(np.sum(np.stack([_numpy(t, e, m) for t in TREES]) * weights))
    np.testing.assert_allclose(np.asarray(td.convert_to_tensor(g_emb)), finite_difference_gradient(numpy_loss, emb),
                               rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(g_w, finite_difference_gradient(numpy_loss, w), rtol=1e-5, atol=1e-7)


def test_the_interceptor_gives_the_rows_shared_value():
    emb = td.Variable(EMBEDDING)
    seen = []

    def fn(row):
        hooks = list(array_ops.gather_interceptors)
        fast = td.gather(emb, row)
        seen.append((len(hooks), hooks[-1](emb, row) is fast, td.gather(emb, np.int32(row)) is fast,
                     td.gather(emb, td.constant(row)) is fast, td.gather(emb.read_value(), row) is fast))
        return fast * 2.0
    out = td.loom.autobatch(fn)([3, 0, 3])
    np.testing.assert_allclose(out.numpy(), 2 * EMBEDDING[[3, 0, 3]], rtol=1e-12)
    assert seen == [(1, True, True, True, True)] * 3
    # td.gather calls the hook as a C function (registered by its type); its
    # Python call above answers alike.
    with pytest.raises(TypeError, match="register_c_interceptor takes a type"):
        _gather.register_c_interceptor(object(), None)


def test_the_interceptor_leaves_other_gathers_to_the_usual_path():
    emb = td.Variable(EMBEDDING)
    answers = []

    def fn(row):
        hook = array_ops.gather_interceptors[-1]
        answers.append([hook(emb, True), hook(emb, 1.0), hook(emb, td.constant(row)), hook(emb, [row]),
                        hook(EMBEDDING, row), hook(td.constant(EMBEDDING), row)])
        return td.gather(emb, [row, 0]) + td.gather(emb, row, axis=0, batch_dims=0)
    out = td.loom.autobatch(fn)([2, 5])
    np.testing.assert_allclose(out.numpy(), EMBEDDING[[[2, 0], [5, 0]]] + EMBEDDING[[2, 5]][:, None], rtol=1e-12)
    assert answers == [[NotImplemented] * 6] * 2


@pytest.mark.parametrize("row_as", [AS_INT, AS_NUMPY, AS_TENSOR])
def test_rows_out_of_range_are_refused_alike(row_as):
    emb = td.Variable(EMBEDDING)

    def fn(row):
        return td.gather(emb, row_as(row)) * 1.0
    with pytest.raises(IndexError, match="td.gather: index 6 is out of range for a variable of 6 rows"):
        td.loom.autobatch(fn)([1, 6])
    with pytest.raises(IndexError, match="td.gather: index -1 is out of range for a variable of 6 rows"):
        td.loom.autobatch(fn)([-1])
    assert array_ops.gather_interceptors == []


def test_a_row_beyond_any_index_gets_the_usual_error_after_rows_of_the_same_variable():
    # The variable gathered last answers its rows without a Python call;
    # an index no C integer holds still goes the usual way (its error).
    emb = td.Variable(EMBEDDING)

    def fn(row):
        return td.gather(emb, row) * 1.0
    for examples in ([2 ** 70], [1, 2 ** 70]):
        with pytest.raises(TypeError, match="Failed to convert elements of 1180591620717411303424 to Tensor"):
            td.loom.autobatch(fn)(examples)


def test_rows_of_two_variables_in_turn_are_each_their_own_row():
    # Each row is a row of its own variable's group, whichever variable
    # was gathered (or its group looked up) last.
    emb = td.Variable(EMBEDDING)
    other = td.Variable(EMBEDDING[::-1] * 2.0)

    def fn(row):
        return td.gather(emb, row) + td.gather(other, row) * td.gather(emb, 5 - row)
    out = td.loom.autobatch(fn)([0, 3, 3, 5])
    rows = np.array([0, 3, 3, 5])
    expected = EMBEDDING[rows] + (EMBEDDING[::-1] * 2.0)[rows] * EMBEDDING[5 - rows]
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-12)


def test_installed_only_while_a_call_records():
    emb = td.Variable(EMBEDDING)
    assert array_ops.gather_interceptors == []

    def fn(row):
        assert len(array_ops.gather_interceptors) == 1
        if row == 4:
            raise ValueError("example four")
        return td.gather(emb, row)
    td.loom.autobatch(fn)([1, 2])
    assert array_ops.gather_interceptors == []
    with pytest.raises(ValueError, match="example four"):
        td.loom.autobatch(fn)([1, 4])
    assert array_ops.gather_interceptors == []
    np.testing.assert_allclose(td.gather(emb, 3).numpy(), EMBEDDING[3], rtol=0)  # eager, outside a call
