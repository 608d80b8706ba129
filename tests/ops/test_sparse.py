"""td.SparseTensor and td.sparse (C++ sparse kernels) against NumPy, eagerly
and inside td.function; as td.function arguments (one trace per
SparseTensorSpec) and as loop variables; gradients of every sparse kernel by
finite differences; bad input refused with a clear error."""

import numpy as np
import pytest

import treadle as td
from autodiff.gradcheck import GradCheck

# Each check makes its td.function afresh (eager and staged side by side).
pytestmark = pytest.mark.filterwarnings("ignore:.*td.functions were made")

DENSE = np.array([[0.0, 2.0, 0.0], [3.0, 0.0, -1.0]])


def sparse_of(dense):
    return td.sparse.from_dense(td.constant(dense))


def both(fn):
    """fn eagerly and inside a td.function."""
    return [fn, td.function(fn)]


def test_construction_accessors_and_static_shape():
    sp = td.SparseTensor(indices=[[0, 1], [1, 0]], values=[2.0, 3.0], dense_shape=[2, 3])
    assert sp.dtype == td.float32 and sp.shape.as_list() == [2, 3] and sp.indices.dtype == td.int64
    np.testing.assert_array_equal(sp.numpy(), [[0, 2, 0], [3, 0, 0]])
    with pytest.raises(ValueError, match="2 indices but 3 values"):
        td.SparseTensor([[0, 1], [1, 0]], [1.0, 2.0, 3.0], [2, 3])
    with pytest.raises(ValueError, match="rank"):
        td.SparseTensor([[0, 1]], [1.0], [2, 3, 4])


@pytest.mark.parametrize("fn_index", [0, 1])
def test_from_dense_and_to_dense_round_trip(fn_index):
    f = both(lambda x: td.sparse.to_dense(td.sparse.from_dense(x)))[fn_index]
    np.testing.assert_array_equal(f(td.constant(DENSE)).numpy(), DENSE)
    sp = sparse_of(DENSE)
    np.testing.assert_array_equal(sp.indices.numpy(), np.argwhere(DENSE != 0))
    np.testing.assert_array_equal(sp.values.numpy(), DENSE[DENSE != 0])
    filled = td.sparse.to_dense(sp, default_value=7.0).numpy()
    np.testing.assert_array_equal(filled, np.where(DENSE != 0, DENSE, 7.0))
    words = td.sparse.from_dense(td.constant([["a", ""], ["", "b"]]))
    assert words.values.numpy().tolist() == [b"a", b"b"]


def test_to_dense_validates_indices():
    with pytest.raises(td.errors.InvalidArgumentError, match="out of bounds"):
        td.sparse.to_dense(td.SparseTensor([[0, 5]], [1.0], [2, 3]))
    unordered = td.SparseTensor([[1, 0], [0, 1]], [1.0, 2.0], [2, 2])
    with pytest.raises(td.errors.InvalidArgumentError, match="out of order or repeated"):
        td.sparse.to_dense(unordered)
    np.testing.assert_array_equal(td.sparse.to_dense(unordered, validate_indices=False).numpy(), [[0, 2], [1, 0]])
    np.testing.assert_array_equal(td.sparse.to_dense(td.sparse.reorder(unordered)).numpy(), [[0, 2], [1, 0]])


@pytest.mark.parametrize("fn_index", [0, 1])
def test_add_sparse_and_dense(fn_index):
    other = np.array([[1.0, -2.0, 0.0], [0.0, 0.0, 5.0]])
    add = both(lambda a, b: td.sparse.to_dense(td.sparse.add(td.sparse.from_dense(a), td.sparse.from_dense(b))))
    np.testing.assert_array_equal(add[fn_index](td.constant(DENSE), td.constant(other)).numpy(), DENSE + other)
    mixed = both(lambda a, b: td.sparse.add(td.sparse.from_dense(a), b))[fn_index]
    np.testing.assert_array_equal(mixed(td.constant(DENSE), td.constant(other)).numpy(), DENSE + other)
    # Sums below the threshold are dropped (2 + -2 = 0 here).
    summed = td.sparse.add(sparse_of(DENSE), sparse_of(other), threshold=0.5)
    assert summed.indices.numpy().tolist() == [[0, 0], [1, 0], [1, 2]]
    with pytest.raises(td.errors.InvalidArgumentError, match="dense shapes differ"):
        td.sparse.add(sparse_of(DENSE), sparse_of(np.ones((3, 3))))


@pytest.mark.parametrize("adjoint_a", [False, True])
@pytest.mark.parametrize("adjoint_b", [False, True])
@pytest.mark.parametrize("fn_index", [0, 1])
def test_sparse_dense_matmul(adjoint_a, adjoint_b, fn_index):
    rng = np.random.default_rng(0)
    a = DENSE.T if adjoint_a else DENSE
    b = rng.normal(size=(3, 4))
    b_in = b.T if adjoint_b else b
    f = both(lambda x, y: td.sparse.sparse_dense_matmul(td.sparse.from_dense(x), y, adjoint_a=adjoint_a,
                                                        adjoint_b=adjoint_b))[fn_index]
    np.testing.assert_allclose(f(td.constant(a), td.constant(b_in)).numpy(), DENSE @ b, rtol=1e-12)
    left = td.sparse.sparse_dense_matmul(td.constant(b.T), sparse_of(DENSE.T))
    np.testing.assert_allclose(left.numpy(), b.T @ DENSE.T, rtol=1e-12)
    with pytest.raises(td.errors.InvalidArgumentError, match="inner dimensions differ"):
        td.sparse.sparse_dense_matmul(sparse_of(DENSE), td.constant(np.ones((2, 2))))


@pytest.mark.parametrize("axis, keepdims", [(None, False), (0, False), (1, True), (-1, False), ([0, 1], False)])
def test_reduce_sum(axis, keepdims):
    expected = np.sum(DENSE, axis=tuple(axis) if isinstance(axis, list) else axis, keepdims=keepdims)
    for f in both(lambda x: td.sparse.reduce_sum(td.sparse.from_dense(x), axis=axis, keepdims=keepdims)):
        np.testing.assert_allclose(f(td.constant(DENSE)).numpy(), expected)
    out = td.sparse.reduce_sum(sparse_of(DENSE), axis=1, output_is_sparse=True)
    np.testing.assert_allclose(td.sparse.to_dense(out).numpy(), DENSE.sum(axis=1))


def test_retain_and_transpose():
    sp = sparse_of(DENSE)
    kept = td.sparse.retain(sp, [True, False, True])
    np.testing.assert_array_equal(td.sparse.to_dense(kept).numpy(), [[0, 2, 0], [0, 0, -1]])
    np.testing.assert_array_equal(td.sparse.to_dense(td.sparse.transpose(sp)).numpy(), DENSE.T)
    with pytest.raises(ValueError, match="2 flags for 3 entries"):
        td.sparse.retain(sp, [True, False])


def test_sparse_arguments_trace_once_per_spec():
    traces = []

    @td.function
    def total(sp):
        traces.append(sp.shape.as_list())
        return td.sparse.reduce_sum(sp)

    assert total(sparse_of(DENSE)).numpy() == DENSE.sum()
    assert total(sparse_of(np.eye(2, 3))).numpy() == 2.0  # fewer entries, same spec
    assert total(sparse_of(np.ones((4, 3)))).numpy() == 12.0  # another dense shape: a new trace
    assert len(traces) == 2
    conc = total.get_concrete_function(td.SparseTensorSpec([None, 3], td.float64))
    assert [t.dtype for t in conc.inputs] == [td.int64, td.float64, td.int64]
    assert traces[-1] == [None, 3]
    spec = sparse_of(DENSE).__tf_tracing_type__(None)
    assert spec == td.SparseTensorSpec([2, 3], td.float64)
    assert spec.is_subtype_of(td.SparseTensorSpec([None, 3], td.float64))


def test_sparse_loop_variable_with_changing_entry_count():
    @td.function
    def grow(n):
        sp = td.SparseTensor(td.zeros([0, 2], td.int64), td.zeros([0]), [4, 4])
        i = td.constant(0, td.int64)
        while i < n:
            td.autograph.experimental.set_loop_options(shape_invariants=[(sp, td.TensorShape([None, None]))])
            entry = td.SparseTensor(td.reshape(td.stack([i, i]), [1, 2]), [1.0], [4, 4])
            sp = td.sparse.add(sp, entry)
            i += 1
        return td.sparse.to_dense(sp)

    np.testing.assert_array_equal(grow(td.constant(3, td.int64)).numpy(), np.diag([1.0, 1.0, 1.0, 0.0]))

    def body(i, sp):
        entry = td.SparseTensor(td.reshape(td.stack([i, 0]), [1, 2]), [2.0], [3, 1])
        return i + 1, td.sparse.add(sp, entry)

    start = td.SparseTensor(td.zeros([0, 2], td.int64), td.zeros([0]), [3, 1])
    loop = td.function(lambda: td.while_loop(lambda i, sp: i < 3, body, (td.constant(0, td.int64), start))[1])
    np.testing.assert_array_equal(td.sparse.to_dense(loop()).numpy(), [[2.0], [2.0], [2.0]])


# ---------------------------------------------------------------- gradients

INDICES = np.array([[0, 1], [1, 0], [1, 2]])
VALUES = np.array([0.5, -1.5, 2.0])
SHAPE = [2, 3]


def _sp(values):
    return td.SparseTensor(INDICES, values, SHAPE)


@pytest.mark.parametrize("in_function", [False, True])
def test_gradients_by_finite_differences(in_function):
    rng = np.random.default_rng(1)
    dense = rng.normal(size=(2, 3))
    b = rng.normal(size=(3, 2))
    other = np.array([[0, 1], [0, 2]])
    checks = [
        (lambda v, d: td.sparse.to_dense(_sp(v), default_value=d), [VALUES, np.array(0.25)]),
        (lambda v, x: td.sparse.add(_sp(v), x), [VALUES, dense]),
        (lambda v, m: td.sparse.sparse_dense_matmul(_sp(v), m), [VALUES, b]),
        (lambda v, m: td.sparse.sparse_dense_matmul(_sp(v), m, adjoint_a=True, adjoint_b=True), [VALUES, b]),
        (lambda v, w: td.sparse.add(_sp(v), td.SparseTensor(other, w, SHAPE)).values, [VALUES, np.array([3., 4.])]),
        (lambda v: td.sparse.reduce_sum(_sp(v), axis=0), [VALUES]),
        (lambda v: td.sparse.reduce_sum(_sp(v), axis=-1, keepdims=True), [VALUES]),
        (lambda v: td.sparse.reorder(td.SparseTensor(INDICES[::-1], v, SHAPE)).values, [VALUES]),
    ]
    for fn, inputs in checks:
        GradCheck(fn, inputs).check_first(in_function=in_function)
    GradCheck(checks[2][0], checks[2][1]).check_second(in_function=in_function)


def test_expand_dims():
    sp = td.SparseTensor([[0, 1], [1, 2]], [1.0, 2.0], [2, 3])
    for axis, shape in ((None, [1, 2, 3]), (1, [2, 1, 3]), (-1, [2, 3, 1])):
        out = td.sparse.expand_dims(sp, axis)
        assert out.shape.as_list() == shape
        np.testing.assert_array_equal(td.sparse.to_dense(out).numpy(),
                                      np.expand_dims(sp.numpy(), 0 if axis is None else axis))
    with pytest.raises(ValueError, match="out of range"):
        td.sparse.expand_dims(sp, 3)


def add_leading_dims(n):
    v = td.SparseTensor(indices=[[0, 0], [1, 1]], values=[1, 2], dense_shape=[3, 3])
    i = 0
    while i < n:
        td.autograph.experimental.set_loop_options(shape_invariants=[(v, td.TensorShape(None))])
        v = td.sparse.expand_dims(v)
        i += 1
    return v


@pytest.mark.parametrize("n", [0, 1, 4])
def test_loop_changing_the_rank_with_an_unknown_shape_invariant(n):
    eager = add_leading_dims(td.constant(n))
    staged = td.function(add_leading_dims)(td.constant(n))
    assert staged.shape == eager.shape == td.TensorShape([1] * n + [3, 3])
    np.testing.assert_array_equal(staged.indices.numpy(), eager.indices.numpy())
    np.testing.assert_array_equal(staged.values.numpy(), [1, 2])
