"""td.loom.autobatch's plain-op fast path: an op (`a + b`, `a * b`,
td.tanh, td.matmul with attributes) on per-example values whose signatures
were seen is recorded from a cache of (op name, attributes, signature
numbers). It must give the values and gradients of the general path, and
fall back to it for new signatures, eager-tensor inputs, unhashable
attributes and values of other examples."""

import numpy as np
import pytest

import treadle as td
from autobatch_models import finite_difference_gradient
from treadle.loom.autobatch import CrossExampleError

RNG = np.random.default_rng(23)
EMBEDDING = RNG.uniform(-1, 1, (7, 3))
W = RNG.uniform(-1, 1, (3, 3))
TREES = [(1, (2, 3)), ((4, 5), 6), 0, ((1, 2), (3, (4, 5))), (6, 6)]
SCALE = np.array([0.5, -1.0, 2.0])


def _model():
    """A recursion of plain ops only (no td.function) and td.constants made inside it."""
    emb, w = td.Variable(EMBEDDING), td.Variable(W)

    def visit(tree):
        if isinstance(tree, int):
            return td.gather(emb, tree) * td.constant(SCALE)
        a, b = visit(tree[0]), visit(tree[1])
        h = td.tanh(td.linalg.matvec(w, a + b, transpose_a=True))
        return h + a * b - td.constant(0.25, td.float64) * h
    return emb, w, visit


def _numpy(tree, emb=EMBEDDING, w=W):
    if isinstance(tree, int):
        return emb[tree] * SCALE
    a, b = _numpy(tree[0], emb, w), _numpy(tree[1], emb, w)
    h = np.tanh((a + b) @ w)
    return h + a * b - 0.25 * h


def _dense(g):
    return np.asarray(td.convert_to_tensor(g)) if isinstance(g, td.IndexedSlices) else np.asarray(g)


def test_plain_ops_and_constants_give_numpy_values_and_finite_difference_gradients():
    emb, w, visit = _model()
    batched = td.loom.autobatch(visit)
    weights = RNG.uniform(-1, 1, (len(TREES), 3))
    with td.GradientTape() as tape:
        out = batched(TREES)
        loss = td.reduce_sum(out * weights)
    np.testing.assert_allclose(out.numpy(), np.stack([_numpy(t) for t in TREES]), rtol=1e-12, atol=1e-12)
    assert batched._registry.fast_ops  # the ops after the first of each signature came from the cache
    g_emb, g_w = (_dense(g) for g in tape.gradient(loss, [emb, w]))

    def numpy_loss():
        e, m = np.asarray(emb.read_value()), np.asarray(w.read_value())
        return float(np.sum(np.stack([_numpy(t, e, m) for t in TREES]) * weights))
    np.testing.assert_allclose(g_w, finite_difference_gradient(numpy_loss, w), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(g_emb, finite_difference_gradient(numpy_loss, emb), rtol=1e-5, atol=1e-7)


def test_cached_ops_give_the_values_and_gradients_of_the_general_path():
    emb, w, visit = _model()
    batched = td.loom.autobatch(visit)
    results = []
    for clear in (False, True):
        with td.GradientTape() as tape:
            if clear:  # every op by the general path: the cache is emptied before each recorded op
                original = batched._registry.fast_ops
                batched._registry.fast_ops = _Forgetful()
            out = batched(TREES)
            loss = td.reduce_sum(td.square(out))
        if clear:
            batched._registry.fast_ops = original
        results.append([out.numpy()] + [_dense(g) for g in tape.gradient(loss, [emb, w])])
    for cached, general in zip(*results):
        np.testing.assert_allclose(cached, general, rtol=1e-12, atol=1e-12)


class _Forgetful(dict):
    """A cache that never answers."""

    def get(self, key, default=None):
        return default


def test_the_cache_is_keyed_by_op_attributes_and_signatures():
    emb, w, visit = _model()
    batched = td.loom.autobatch(visit)
    batched(TREES)
    keys = set(batched._registry.fast_ops)
    names = {key[0] for key in keys}
    assert {"AddV2", "Mul", "Tanh"} <= names
    ops = len(batched._registry.ops)
    batched(TREES[:2])  # the same signatures: no new op, no new entry
    assert set(batched._registry.fast_ops) == keys and len(batched._registry.ops) == ops


def test_a_new_signature_or_attribute_falls_back_and_gets_its_own_op():
    m = RNG.uniform(-1, 1, (2, 2))
    emb3, emb2 = td.Variable(EMBEDDING), td.Variable(m)

    def fn(example):
        table, row, transpose = example
        v = td.gather(emb3 if table == 3 else emb2, row)
        outer = td.reshape(v, [-1, 1]) * td.reshape(v * v, [1, -1])  # [n, n], not symmetric
        return td.reduce_sum(td.matmul(outer, outer, transpose_a=transpose) + outer)
    examples = [(3, 1, False), (2, 0, True), (3, 5, True), (2, 1, False), (3, 2, False)]
    out = td.loom.autobatch(fn)(examples).numpy()

    def expected(table, row, transpose):
        v = (EMBEDDING if table == 3 else m)[row]
        outer = np.outer(v, v * v)
        return ((outer.T if transpose else outer) @ outer + outer).sum()
    np.testing.assert_allclose(out, [expected(*e) for e in examples], rtol=1e-12)


def test_values_of_earlier_rounds_take_the_fast_path():
    emb = td.Variable(EMBEDDING)

    def fn(row):
        a = td.gather(emb, row)
        b = a * a
        for _ in range(4):  # reading b suspends the example: b and a are stored rows afterwards
            if float(td.reduce_sum(b)) > 1.0:
                break
            b = b * a + b
        return b

    def numpy_fn(row):
        a = EMBEDDING[row]
        b = a * a
        for _ in range(4):
            if b.sum() > 1.0:
                break
            b = b * a + b
        return b
    rows = [0, 3, 6, 2]
    batched = td.loom.autobatch(fn)
    np.testing.assert_allclose(batched(rows).numpy(), [numpy_fn(r) for r in rows], rtol=1e-12)
    assert len(batched.last_stats) > 1  # more than one round ran


def test_a_value_of_another_example_is_refused_on_the_fast_path():
    emb = td.Variable(EMBEDDING)
    kept = []

    def fn(row):
        v = td.gather(emb, row) * 2.0
        w = v + v  # AddV2 on two [3] values: cached after the first example
        if kept:
            return w + kept[0]  # the same op and signatures, with example 0's value
        kept.append(w)
        return w
    with pytest.raises(CrossExampleError, match="example 0"):
        td.loom.autobatch(fn)([0, 1])


def test_operators_on_two_values_are_recorded_without_the_general_path(monkeypatch):
    # `a + b`, `a - b` and `a * b` of two values whose op and signatures
    # were recorded once are recorded in C (Value's operators): td.Tensor's
    # operator is not called again, and the values are the general path's.
    emb = td.Variable(EMBEDDING)
    calls = []
    for name in ("__add__", "__sub__", "__mul__"):
        general = getattr(td.Tensor, name)
        monkeypatch.setattr(td.Tensor, name, lambda x, y, g=general, n=name: calls.append(n) or g(x, y))

    def fn(row):
        a, b = td.gather(emb, row), td.gather(emb, row + 1) * 2.0
        return (a + b) * (a - b) + a * b

    rows = [0, 2, 4, 1]
    out = td.loom.autobatch(fn)(rows).numpy()
    a, b = EMBEDDING[rows], EMBEDDING[[r + 1 for r in rows]] * 2.0
    np.testing.assert_allclose(out, (a + b) * (a - b) + a * b, rtol=1e-12)
    # `* 2.0` always takes the general path (a Python number); example 0's
    # first Add, Sub and Mul of two values too, and nothing else does
    assert sorted(calls) == sorted(["__mul__"] * (len(rows) + 1) + ["__add__", "__sub__"])


def test_operators_are_refused_across_examples_and_after_the_call():
    emb = td.Variable(EMBEDDING)
    kept = []

    def fn(row):
        v = td.gather(emb, row) * 2.0
        if kept:
            return v * kept[0]  # Mul of two [3] values, cached by example 0, with example 0's value
        kept.append(v * v)
        return kept[0]
    with pytest.raises(CrossExampleError, match="example 0"):
        td.loom.autobatch(fn)([0, 1])
    with pytest.raises(ValueError, match="after the autobatched call returned"):
        kept[0] + kept[0]


# -------------------------------------------------- td.constant inside an example

def test_constants_made_inside_an_example_behave_as_td_constant():
    emb = td.Variable(EMBEDDING)

    @td.function
    def cell(x, c):
        return x * c

    seen = []

    def fn(row):
        source = np.array([1.0, 2.0, 3.0]) * row
        c = td.constant(source)          # float64 [3], copied: the change below must not reach it
        source[:] = -100.0
        seen.append((type(c).__name__, c.dtype, float(td.constant(1.5) * 2.0)))
        half = td.constant(0.5)          # a Python float: float32, as in TensorFlow
        shaped = td.reshape(td.gather(emb, row), td.constant([3, 1]))  # an int constant: a shape, as before
        scaled = cell(td.gather(emb, row), c) + cell(td.gather(emb, row), c)  # twice: the cell's fast path too
        return scaled, td.cast(half, td.float64) * td.reshape(shaped, [3]), c, td.constant(np.float64(row))
    rows = [0, 2, 5]
    scaled, halves, consts, scalars = td.loom.autobatch(fn)(rows)
    np.testing.assert_allclose(scaled.numpy(), [2 * EMBEDDING[r] * np.array([1.0, 2.0, 3.0]) * r for r in rows],
                               rtol=1e-12)
    np.testing.assert_allclose(halves.numpy(), [0.5 * EMBEDDING[r] for r in rows], rtol=1e-12)
    np.testing.assert_allclose(consts.numpy(), [np.array([1.0, 2.0, 3.0]) * r for r in rows], rtol=1e-12)
    np.testing.assert_allclose(scalars.numpy(), rows)
    assert seen == [("Value", td.float64, 3.0)] * len(rows)  # no eager tensor made; its value readable at once


def test_constants_outside_examples_stay_eager_tensors():
    made = []

    @td.function
    def traced(x):
        made.append(type(td.constant(2.0)).__name__)  # while tracing: a graph constant, as usual
        return x * 2.0

    def fn(row):
        return traced(td.constant(float(row)))
    batched = td.loom.autobatch(fn)
    np.testing.assert_allclose(batched([1, 2]).numpy(), [2.0, 4.0])
    assert "Value" not in made
    assert type(td.constant(1.0)).__name__ == "EagerTensor"  # after the call


def test_a_constant_of_one_example_is_refused_in_another():
    kept = []

    def fn(row):
        c = td.constant(float(row))
        if kept:
            return c + kept[0]
        kept.append(c)
        return c * 1.0
    with pytest.raises(CrossExampleError, match="example 0"):
        td.loom.autobatch(fn)([0, 1])


# -------------------------------------------------- Python numbers beside per-example values

def test_python_numbers_beside_values_give_numpy_values_and_gradients():
    emb = td.Variable(EMBEDDING)

    def fn(row):
        v = td.gather(emb, row)
        w = 0.5 * v - 1 + v * 2.0      # reflected, int and float literals: constant rows of the round
        return w / 4.0 + 3.0 ** 1.0 * w ** 2
    rows = [1, 4, 4, 6]
    batched = td.loom.autobatch(fn)
    weights = RNG.uniform(-1, 1, (len(rows), 3))
    with td.GradientTape() as tape:
        out = batched(rows)
        loss = td.reduce_sum(out * weights)

    def numpy_fn(e, row):
        w = 0.5 * e[row] - 1 + e[row] * 2.0
        return w / 4.0 + 3.0 * w ** 2
    np.testing.assert_allclose(out.numpy(), [numpy_fn(EMBEDDING, r) for r in rows], rtol=1e-12)
    assert any(key[0] == "Mul" for key in batched._registry.fast_ops)
    grad = _dense(tape.gradient(loss, emb))

    def numpy_loss():
        e = np.asarray(emb.read_value())
        return float(np.sum(np.stack([numpy_fn(e, r) for r in rows]) * weights))
    np.testing.assert_allclose(grad, finite_difference_gradient(numpy_loss, emb), rtol=1e-5, atol=1e-7)


def test_numbers_beside_eager_tensors_variables_and_integers_convert_as_before():
    emb = td.Variable(EMBEDDING)
    kinds = []

    def fn(row):
        eager = td.ones([3], td.float64) * 2.0           # shared: runs eagerly, as before
        shared = emb * 2.0                               # a variable read: runs eagerly, as before
        count = td.reduce_sum(td.cast(td.gather(emb, row) > 0.0, td.int32)) * 2  # an integer value
        kinds.append((type(eager).__name__, type(shared).__name__))
        return td.gather(emb, row) * eager + td.gather(shared, row), td.cast(count, td.float64)
    rows = [0, 3]
    values, counts = td.loom.autobatch(fn)(rows)
    np.testing.assert_allclose(values.numpy(), [4.0 * EMBEDDING[r] for r in rows], rtol=1e-12)
    np.testing.assert_allclose(counts.numpy(), [2 * (EMBEDDING[r] > 0).sum() for r in rows])
    assert kinds == [("EagerTensor", "EagerTensor")] * len(rows)


def test_ops_reading_a_variable_whole_take_the_fast_path_one_op_per_variable():
    emb, w1, w2 = td.Variable(EMBEDDING), td.Variable(W), td.Variable(W.T * 2.0)  # same shape and dtype

    def fn(example):
        row, which = example
        return td.matmul(td.reshape(td.gather(emb, row), [1, -1]), w1 if which == 1 else w2)
    examples = [(1, 1), (2, 2), (3, 1), (4, 2), (5, 2), (0, 1)]
    batched = td.loom.autobatch(fn)
    batched(examples)
    variable_keys = [key for key in batched._registry.fast_ops if key[0] == "MatMul"]
    assert sorted(key[3] for key in variable_keys) == sorted([("v", id(w1)), ("v", id(w2))])
    ops = len(batched._registry.ops)
    weights = RNG.uniform(-1, 1, (len(examples), 1, 3))
    with td.GradientTape() as tape:
        out = batched(examples)  # every MatMul now from the cache
        loss = td.reduce_sum(out * weights)
    assert len(batched._registry.ops) == ops

    def numpy_out(e, m1, m2):
        return np.stack([e[row][None] @ (m1 if which == 1 else m2) for row, which in examples])
    np.testing.assert_allclose(out.numpy(), numpy_out(EMBEDDING, W, W.T * 2.0), rtol=1e-12)

    def numpy_loss():
        return float(np.sum(numpy_out(*(np.asarray(v.read_value()) for v in (emb, w1, w2))) * weights))
    for var, g in zip((emb, w1, w2), tape.gradient(loss, [emb, w1, w2])):
        np.testing.assert_allclose(_dense(g), finite_difference_gradient(numpy_loss, var), rtol=1e-5, atol=1e-7)
