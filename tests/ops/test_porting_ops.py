"""The ops and names a TensorFlow user reaches for first when porting (issue
17), against NumPy; their gradients are checked by finite differences in
tests/autodiff/op_cases.py."""

import collections

import numpy as np
import pytest

import treadle as td

rng = np.random.default_rng(17)


def a(*shape, dtype=np.float32):
    return rng.uniform(-2, 2, size=shape).astype(dtype)


def both(fn, *args):
    """fn's result eagerly and inside a td.function (the same values)."""
    eager = fn(*args)
    traced = td.function(fn)(*[td.constant(x) for x in args])
    np.testing.assert_allclose(np.asarray(traced), np.asarray(eager), rtol=1e-6)
    return np.asarray(eager)


# ---------------------------------------------------------------- scans

@pytest.mark.parametrize("exclusive", [False, True])
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_cumsum_cumprod(axis, exclusive, reverse):
    x = a(3, 4, dtype=np.float64)

    def ref(x, op, identity):
        y = np.flip(x, axis) if reverse else x
        out = op(y, axis=axis)
        if exclusive:
            # Shifted by one along the axis, the identity first.
            out = np.concatenate([np.full_like(np.take(out, [0], axis=axis), identity),
                                  np.delete(out, -1, axis=axis)], axis=axis)
        return np.flip(out, axis) if reverse else out

    got = both(lambda t: td.cumsum(t, axis=axis, exclusive=exclusive, reverse=reverse), x)
    np.testing.assert_allclose(got, ref(x, np.cumsum, 0.0), rtol=1e-12)
    got = both(lambda t: td.math.cumprod(t, axis=axis, exclusive=exclusive, reverse=reverse), x)
    np.testing.assert_allclose(got, ref(x, np.cumprod, 1.0), rtol=1e-12)
    assert td.cumsum(td.constant([1, 2, 3])).numpy().tolist() == [1, 3, 6]


def test_cumsum_bad_axis():
    with pytest.raises((td.errors.InvalidArgumentError, ValueError)):
        td.cumsum(td.constant([1.0, 2.0]), axis=3)


# ---------------------------------------------------------------- elementwise

def test_log1p_softplus_erf():
    import math
    x = np.array([-0.5, -1e-9, 0.0, 1e-9, 3.0], np.float64)
    np.testing.assert_allclose(both(td.math.log1p, x), np.log1p(x), rtol=1e-15)
    s = np.array([-100.0, -3.0, 0.0, 3.0, 100.0], np.float64)
    np.testing.assert_allclose(both(td.nn.softplus, s), np.logaddexp(0.0, s), rtol=1e-14)
    assert td.math.softplus is td.nn.softplus or td.math.softplus(1.0).numpy() == td.nn.softplus(1.0).numpy()
    np.testing.assert_allclose(both(td.math.erf, x), [math.erf(v) for v in x], rtol=1e-14)
    with pytest.raises(td.errors.InvalidArgumentError):
        td.math.log1p(td.constant([1, 2]))


# ---------------------------------------------------------------- reordering and padding

def test_reverse_roll_pad():
    x = a(2, 3, 4)
    np.testing.assert_array_equal(both(lambda t: td.reverse(t, [0, 2]), x), x[::-1, :, ::-1])
    np.testing.assert_array_equal(both(lambda t: td.roll(t, [1, -2], [1, 2]), x), np.roll(x, (1, -2), (1, 2)))
    np.testing.assert_array_equal(td.roll(x, [1, 1], [0, 0]).numpy(), np.roll(x, 2, 0))  # shifts add up
    pads = [[1, 0], [0, 2], [2, 1]]
    np.testing.assert_array_equal(both(lambda t: td.pad(t, pads, constant_values=7.0), x),
                                  np.pad(x, pads, constant_values=7.0))
    s = td.constant([["a", "b"]])
    assert td.pad(s, [[0, 1], [1, 0]], constant_values="z").numpy().tolist() == [[b"z", b"a", b"b"],
                                                                                  [b"z", b"z", b"z"]]
    assert td.reverse(s, [1]).numpy().tolist() == [[b"b", b"a"]]
    with pytest.raises(td.errors.InvalidArgumentError, match="non-negative"):
        td.pad(x, [[-1, 0], [0, 0], [0, 0]])
    with pytest.raises(td.errors.InvalidArgumentError, match="paddings must have shape"):
        td.pad(x, [[1, 0]])
    with pytest.raises(NotImplementedError, match="REFLECT"):
        td.pad(x, pads, mode="REFLECT")
    with pytest.raises(td.errors.InvalidArgumentError, match="more than once"):
        td.reverse(x, [1, 1])


# ---------------------------------------------------------------- index tuples

def test_gather_nd_and_scatters():
    x = a(3, 4)
    idx = np.array([[0, 1], [2, 3], [0, 1]])
    np.testing.assert_array_equal(both(lambda t: td.gather_nd(t, idx), x), x[idx[:, 0], idx[:, 1]])
    np.testing.assert_array_equal(td.gather_nd(x, [[2], [0]]).numpy(), x[[2, 0]])
    np.testing.assert_array_equal(td.gather_nd(x, np.zeros((0, 2), np.int64)).numpy(), np.zeros((0,), np.float32))
    with pytest.raises(td.errors.InvalidArgumentError, match="out of range"):
        td.gather_nd(x, [[3, 0]])

    updates = np.array([1.0, 2.0, 3.0], np.float32)
    ref = np.zeros(4, np.float32)
    np.add.at(ref, [1, 3, 1], updates)
    np.testing.assert_array_equal(td.scatter_nd([[1], [3], [1]], updates, [4]).numpy(), ref)  # duplicates add
    np.testing.assert_array_equal(td.scatter_nd([[1]], [[1, 2]], td.constant([2, 2])).numpy(), [[0, 0], [1, 2]])

    rows = a(2, 4)
    want = x.copy()
    want[[2, 0]] = rows
    np.testing.assert_array_equal(td.tensor_scatter_nd_update(x, [[2], [0]], rows).numpy(), want)
    want = x.copy()
    np.add.at(want, ([1, 1], [2, 2]), [5.0, 6.0])
    np.testing.assert_allclose(td.tensor_scatter_nd_add(x, [[1, 2], [1, 2]], [5.0, 6.0]).numpy(), want)
    want = x.copy()
    want[0, 0] -= 1.0
    np.testing.assert_allclose(td.tensor_scatter_nd_sub(x, [[0, 0]], [1.0]).numpy(), want)
    with pytest.raises(td.errors.InvalidArgumentError, match="updates must have shape"):
        td.tensor_scatter_nd_update(x, [[0]], [1.0, 2.0])


# ---------------------------------------------------------------- masks, grids, identities

def test_boolean_and_sequence_masks():
    x = a(3, 2, 2)
    mask = np.array([True, False, True])
    np.testing.assert_array_equal(both(lambda t: td.boolean_mask(t, mask), x), x[mask])
    m2 = np.array([[True, False], [False, False], [True, True]])
    np.testing.assert_array_equal(td.boolean_mask(x, m2).numpy(), x[m2])
    np.testing.assert_array_equal(td.boolean_mask(x, [True, False], axis=1).numpy(), x[:, [True, False]])
    with pytest.raises(ValueError, match="does not match"):
        td.boolean_mask(x, [True, False])
    lengths = np.array([1, 3, 0])
    np.testing.assert_array_equal(td.sequence_mask(lengths, 4).numpy(), np.arange(4) < lengths[:, None])
    assert td.sequence_mask(lengths).shape == (3, 3)
    assert td.sequence_mask([2], 3, dtype=td.float32).numpy().tolist() == [[1.0, 1.0, 0.0]]


@pytest.mark.parametrize("indexing", ["xy", "ij"])
def test_meshgrid(indexing):
    xs, ys, zs = np.arange(3), np.arange(4) * 10, np.arange(2) * 100
    got = td.meshgrid(xs, ys, zs, indexing=indexing)
    for g, w in zip(got, np.meshgrid(xs, ys, zs, indexing=indexing)):
        np.testing.assert_array_equal(g.numpy(), w)


def test_identity_n_ensure_shape_stop_gradient():
    x, s = td.constant([1.0, 2.0]), td.constant("s")
    y, t = td.identity_n([x, s])
    assert y.numpy().tolist() == [1.0, 2.0] and t.numpy() == b"s"
    assert td.ensure_shape(x, [2]) is not None
    with pytest.raises(td.errors.InvalidArgumentError, match="not compatible"):
        td.ensure_shape(x, [3])

    @td.function
    def f(v):
        return td.ensure_shape(v, [None, 2])

    assert f.get_concrete_function(td.TensorSpec(None, td.float32)).structured_outputs.shape.as_list() == [None, 2]
    with pytest.raises(td.errors.InvalidArgumentError, match="not compatible"):
        f(td.constant([1.0, 2.0, 3.0]))
    with td.GradientTape() as tape:
        tape.watch(x)
        y = td.stop_gradient(x * 2.0) + x
    assert tape.gradient(y, x).numpy().tolist() == [1.0, 1.0]


# ---------------------------------------------------------------- clipping, norms, log-sum-exp

def test_clipping():
    x = a(3, 4)
    np.testing.assert_array_equal(td.clip_by_value(x, -1.0, 0.5).numpy(), np.clip(x, -1.0, 0.5))
    n = np.linalg.norm(x)
    np.testing.assert_allclose(td.clip_by_norm(x, 1.0).numpy(), x / n, rtol=1e-6)
    np.testing.assert_allclose(td.clip_by_norm(x, 100.0).numpy(), x, rtol=1e-6)
    rows = np.linalg.norm(x, axis=1, keepdims=True)
    np.testing.assert_allclose(td.clip_by_norm(x, 1.0, axes=[1]).numpy(), x / np.maximum(rows, 1.0), rtol=1e-6)
    np.testing.assert_array_equal(td.clip_by_norm(np.zeros(3, np.float32), 1.0).numpy(), np.zeros(3))
    y = a(5)
    g = np.sqrt(np.sum(x ** 2) + np.sum(y ** 2))
    clipped, norm = td.clip_by_global_norm([x, None, y], 2.0)
    assert clipped[1] is None
    np.testing.assert_allclose(norm.numpy(), g, rtol=1e-6)
    np.testing.assert_allclose(clipped[0].numpy(), x * 2.0 / max(g, 2.0), rtol=1e-6)
    np.testing.assert_allclose(clipped[2].numpy(), y * 2.0 / max(g, 2.0), rtol=1e-6)


def test_norms_and_logsumexp():
    x = a(3, 4, dtype=np.float64)
    np.testing.assert_allclose(td.norm(x).numpy(), np.linalg.norm(x))
    np.testing.assert_allclose(td.norm(x, axis=1).numpy(), np.linalg.norm(x, axis=1))
    np.testing.assert_allclose(td.norm(x, ord=1, axis=0).numpy(), np.abs(x).sum(0))
    np.testing.assert_allclose(td.norm(x, ord=np.inf, axis=1, keepdims=True).numpy(),
                               np.abs(x).max(1, keepdims=True))
    np.testing.assert_allclose(td.norm(x, ord="fro", axis=[0, 1]).numpy(), np.linalg.norm(x))
    np.testing.assert_allclose(td.linalg.norm(x).numpy(), np.linalg.norm(x))
    big = np.array([[1000.0, 1000.0], [-1.0, 2.0]])
    want = np.log(np.sum(np.exp(big - big.max(1, keepdims=True)), 1)) + big.max(1)
    np.testing.assert_allclose(td.math.reduce_logsumexp(big, axis=1).numpy(), want)
    np.testing.assert_allclose(td.math.reduce_logsumexp(x).numpy(), np.log(np.exp(x).sum()))
    assert td.math.reduce_logsumexp(x, axis=0, keepdims=True).shape == (1, 4)
    x32 = td.constant(a(4))
    with td.GradientTape() as tape:
        tape.watch(x32)
        y = td.math.reduce_logsumexp(x32)
    e = np.exp(x32.numpy())
    np.testing.assert_allclose(tape.gradient(y, x32).numpy(), e / e.sum(), rtol=1e-5)


def test_linalg():
    m, v = a(2, 3, 4, dtype=np.float64), a(2, 4, dtype=np.float64)
    np.testing.assert_allclose(td.linalg.matmul(m, m, transpose_b=True).numpy(), m @ np.swapaxes(m, -1, -2))
    np.testing.assert_allclose(td.linalg.matvec(m, v).numpy(), np.einsum("bij,bj->bi", m, v))
    np.testing.assert_array_equal(td.linalg.matrix_transpose(m).numpy(), np.swapaxes(m, -1, -2))
    np.testing.assert_array_equal(td.linalg.eye(3, 2).numpy(), np.eye(3, 2))
    np.testing.assert_array_equal(td.eye(2, batch_shape=[3]).numpy(), np.broadcast_to(np.eye(2), (3, 2, 2)))
    np.testing.assert_array_equal(td.linalg.diag(v).numpy(), np.stack([np.diag(r) for r in v]))
    np.testing.assert_array_equal(td.linalg.diag_part(m).numpy(), np.stack([np.diag(r) for r in m]))
    np.testing.assert_allclose(td.linalg.trace(m).numpy(), np.trace(m, axis1=-2, axis2=-1))


# ---------------------------------------------------------------- nn

def test_nn_functions():
    from math import erf, sqrt, tanh, pi
    x = np.array([-3.0, -0.5, 0.0, 0.7, 4.0])
    np.testing.assert_allclose(td.nn.gelu(x).numpy(), [v * 0.5 * (1 + erf(v / sqrt(2))) for v in x], rtol=1e-12)
    np.testing.assert_allclose(td.nn.gelu(x, approximate=True).numpy(),
                               [0.5 * v * (1 + tanh(sqrt(2 / pi) * (v + 0.044715 * v ** 3))) for v in x],
                               rtol=1e-12)
    z = np.array([0.0, 1.0, 0.3, 1.0, 0.0])
    want = np.maximum(x, 0) - x * z + np.log1p(np.exp(-np.abs(x)))
    np.testing.assert_allclose(td.nn.sigmoid_cross_entropy_with_logits(labels=z, logits=x).numpy(), want)
    params = a(5, 3)
    np.testing.assert_array_equal(td.nn.embedding_lookup(params, [[4, 0], [1, 1]]).numpy(), params[[[4, 0], [1, 1]]])
    td.random.set_seed(5)
    out = td.nn.dropout(np.ones((200, 50), np.float32), rate=0.25).numpy()
    assert set(np.unique(out)) <= {0.0, np.float32(1 / 0.75)}
    assert 0.2 < np.mean(out == 0) < 0.3
    with pytest.raises(ValueError, match="rate"):
        td.nn.dropout(np.ones(3, np.float32), rate=1.0)


# ---------------------------------------------------------------- td.nest

def test_nest_is_tf_nest():
    Point = collections.namedtuple("Point", "x y")
    s = {"b": [1, Point(2, 3)], "a": (4,)}
    assert td.nest.flatten(s) == [4, 1, 2, 3]
    assert td.nest.flatten(None) == [None]
    assert td.nest.is_nested([1]) and not td.nest.is_nested(td.constant(1))
    assert td.nest.pack_sequence_as(s, [0, 1, 2, 3]) == {"b": [1, Point(2, 3)], "a": (0,)}
    assert td.nest.map_structure(lambda u, v: u + v, s, s) == {"b": [2, Point(4, 6)], "a": (8,)}
    with pytest.raises(TypeError):
        td.nest.assert_same_structure([1], (1,))
    td.nest.assert_same_structure([1], (1,), check_types=False)
    with pytest.raises(ValueError):
        td.nest.assert_same_structure([1], [1, 2])
    assert td.nest.map_structure(lambda u, v: u, [1], (2,), check_types=False) == [1]


# ---------------------------------------------------------------- custom_gradient

def _log1pexp_grad_check(fn):
    x = td.constant([0.0, 100.0])
    with td.GradientTape() as tape:
        tape.watch(x)
        y = fn(x)
    return y, tape.gradient(y, x)


def test_custom_gradient_eager_and_in_functions():
    # TensorFlow's documented example: a numerically stable gradient of log(1 + e^x).
    @td.custom_gradient
    def log1pexp(x):
        e = td.exp(x)

        def grad(upstream):
            return upstream * (1 - 1 / (1 + e))
        return td.math.log(1 + e), grad

    y, g = _log1pexp_grad_check(log1pexp)
    assert np.isfinite(g.numpy()).all() and g.numpy().tolist() == [0.5, 1.0]

    @td.function
    def step(x):
        with td.GradientTape() as tape:
            tape.watch(x)
            y = log1pexp(x)
        return tape.gradient(y, x)

    assert step(td.constant([0.0, 100.0])).numpy().tolist() == [0.5, 1.0]
    # The gradient of a td.function's call, differentiated symbolically.
    y, g = _log1pexp_grad_check(td.function(log1pexp))
    assert g.numpy().tolist() == [0.5, 1.0]


def test_custom_gradient_with_two_inputs_and_outputs():
    @td.custom_gradient
    def scaled(x, y):
        def grad(da, db):
            return da * 10.0 + db, db * 100.0
        return (x * y, x + y), grad

    x, y = td.constant(2.0), td.constant(3.0)
    with td.GradientTape(persistent=True) as tape:
        tape.watch([x, y])
        a_, b_ = scaled(x, y)
        total = a_ + b_
    assert a_.numpy() == 6.0 and b_.numpy() == 5.0
    gx, gy = tape.gradient(total, [x, y])
    assert (gx.numpy(), gy.numpy()) == (11.0, 100.0)
    with pytest.raises(TypeError, match="gradient function"):
        td.custom_gradient(lambda x: (x, None))(x)


# ---------------------------------------------------------------- sorting

def test_top_k_sort_argsort():
    x = a(3, 5)
    values, indices = td.math.top_k(x, 2)
    order = np.argsort(-x, axis=1, kind="stable")[:, :2]
    np.testing.assert_array_equal(indices.numpy(), order)
    np.testing.assert_array_equal(values.numpy(), np.take_along_axis(x, order, 1))
    ties = td.math.top_k(td.constant([1, 3, 3, 2]), 3)
    assert ties.indices.numpy().tolist() == [1, 2, 3]  # equal values in index order
    np.testing.assert_array_equal(both(lambda t: td.sort(t), x), np.sort(x, axis=1))
    np.testing.assert_array_equal(td.sort(x, axis=0, direction="DESCENDING").numpy(), -np.sort(-x, axis=0))
    ints = np.array([5, -2**31, 7, 0], np.int32)
    np.testing.assert_array_equal(td.sort(ints).numpy(), np.sort(ints))  # no overflow at the minimum
    np.testing.assert_array_equal(td.argsort(x).numpy(), np.argsort(x, axis=1, kind="stable"))
    with pytest.raises(td.errors.InvalidArgumentError, match="at least k"):
        td.math.top_k(td.constant([1.0, 2.0]), 3)
    with pytest.raises(ValueError, match="direction"):
        td.sort(x, direction="UP")


# ---------------------------------------------------------------- random

def test_stateless_random_and_generator():
    u1 = td.random.stateless_uniform([4, 3], seed=[1, 2])
    u2 = td.random.stateless_uniform([4, 3], seed=[1, 2])
    np.testing.assert_array_equal(u1.numpy(), u2.numpy())  # a function of the seed
    assert not np.array_equal(u1.numpy(), td.random.stateless_uniform([4, 3], seed=[1, 3]).numpy())
    assert ((u1.numpy() >= 0) & (u1.numpy() < 1)).all()
    r = td.random.stateless_uniform([1000], seed=[3, 4], minval=-2.0, maxval=2.0, dtype=td.float64).numpy()
    assert r.dtype == np.float64 and -2 <= r.min() and r.max() < 2 and abs(r.mean()) < 0.2
    n = td.random.stateless_normal([20000], seed=[5, 6], mean=1.0, stddev=2.0).numpy()
    assert abs(n.mean() - 1.0) < 0.05 and abs(n.std() - 2.0) < 0.05
    f = td.function(lambda s: td.random.stateless_normal([3], seed=s))
    np.testing.assert_array_equal(f(td.constant([7, 8])).numpy(), f(td.constant([7, 8])).numpy())
    with pytest.raises(ValueError, match="shape \\[2\\]"):
        td.random.stateless_uniform([2], seed=[1, 2, 3])

    g = td.random.Generator.from_seed(42)
    a1, a2 = g.normal([3]).numpy(), g.normal([3]).numpy()
    assert not np.array_equal(a1, a2)  # the state advances
    g2 = td.random.Generator.from_seed(42)
    np.testing.assert_array_equal(g2.normal([3]).numpy(), a1)  # the same seed, the same draws
    draw = td.function(lambda: g2.uniform([2], minval=5.0, maxval=6.0))
    d1, d2 = draw().numpy(), draw().numpy()
    assert not np.array_equal(d1, d2) and ((d1 >= 5) & (d1 < 6)).all()


# ---------------------------------------------------------------- einsum

@pytest.mark.parametrize("equation,shapes", [
    ("ij,jk->ik", [(2, 3), (3, 4)]), ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]), ("bij,bjk,k->bi", [(2, 3, 4),
                                                                                                   (2, 4, 5), (5,)]),
    ("ijk->kji", [(2, 3, 4)]), ("ijk->", [(2, 3, 4)]), ("ij,ij->ij", [(2, 3), (2, 3)]), ("i,j->ij", [(3,), (4,)]),
    ("ij,jk", [(2, 3), (3, 4)]), ("abc,cd->da", [(2, 3, 4), (4, 5)]),
])
def test_einsum_against_numpy(equation, shapes):
    ops = [a(*s, dtype=np.float64) for s in shapes]
    np.testing.assert_allclose(both(lambda *t: td.einsum(equation, *t), *ops), np.einsum(equation, *ops),
                               rtol=1e-12)


def test_einsum_gradient_and_errors():
    x, y = a(2, 3, dtype=np.float64), a(3, 4, dtype=np.float64)
    tx, ty = td.constant(x), td.constant(y)
    with td.GradientTape() as tape:
        tape.watch([tx, ty])
        out = td.reduce_sum(td.einsum("ij,jk->ik", tx, ty) ** 2)
    gx, gy = tape.gradient(out, [tx, ty])
    np.testing.assert_allclose(gx.numpy(), 2 * (x @ y) @ y.T)
    np.testing.assert_allclose(gy.numpy(), 2 * x.T @ (x @ y))
    with pytest.raises(NotImplementedError, match="ellipsis"):
        td.einsum("...ij->...ji", tx)
    with pytest.raises(NotImplementedError, match="repeated"):
        td.einsum("ii->i", td.constant(np.eye(2)))
    with pytest.raises(ValueError, match="operands"):
        td.einsum("ij,jk->ik", tx)


def test_linalg_decompositions():
    m = a(2, 4, 4, dtype=np.float64) + 4 * np.eye(4)
    rhs = a(2, 4, 3, dtype=np.float64)
    np.testing.assert_allclose(both(td.linalg.inv, m), np.linalg.inv(m), rtol=1e-10)
    np.testing.assert_allclose(both(td.linalg.solve, m, rhs), np.linalg.solve(m, rhs), rtol=1e-10)
    np.testing.assert_allclose(td.linalg.solve(m, rhs, adjoint=True).numpy(),
                               np.linalg.solve(np.swapaxes(m, -1, -2), rhs), rtol=1e-10)
    np.testing.assert_allclose(both(td.linalg.det, m), np.linalg.det(m), rtol=1e-10)
    spd = m @ np.swapaxes(m, -1, -2)
    np.testing.assert_allclose(both(td.linalg.cholesky, spd), np.linalg.cholesky(spd), rtol=1e-10)
    f32 = td.linalg.inv(m[0].astype(np.float32))
    assert f32.dtype == td.float32
    np.testing.assert_allclose(f32.numpy(), np.linalg.inv(m[0]), rtol=1e-4)
    assert td.linalg.det(np.array([[1.0, 2.0], [2.0, 4.0]])).numpy() == 0.0
    with pytest.raises(td.errors.InvalidArgumentError, match="not invertible"):
        td.linalg.inv(np.array([[1.0, 2.0], [2.0, 4.0]]))
    with pytest.raises(td.errors.InvalidArgumentError, match="Cholesky"):
        td.linalg.cholesky(np.array([[1.0, 2.0], [2.0, 1.0]]))
    with pytest.raises((ValueError, td.errors.InvalidArgumentError), match="square"):
        td.linalg.det(np.ones((2, 3)))
