"""td.IndexedSlices and sparse gradients: the gradient of a gather with
respect to its params stays IndexedSlices through the tape, variable reads,
function boundaries and td.function results, as in TensorFlow; anything that
needs a tensor densifies it (duplicates add up). Values are checked against
NumPy and finite differences."""

import numpy as np
import pytest

import treadle as td

rng = np.random.default_rng(5)


def dense(x):
    return td.convert_to_tensor(x).numpy()


def scatter_rows(shape, indices, values):
    """NumPy reference of densify: rows of values added at their indices."""
    out = np.zeros(shape, dtype=values.dtype)
    np.add.at(out, np.asarray(indices).reshape(-1), values.reshape((-1,) + tuple(shape[1:])))
    return out


def run(fn, in_function, *args):
    return td.function(fn, autograph=False)(*args) if in_function else fn(*args)


# ---------------------------------------------------------------- the value

def test_properties_and_repr():
    values = td.constant(np.arange(6.0).reshape(2, 3))
    s = td.IndexedSlices(values, td.constant([3, 0]), td.constant([4, 3]))
    assert s.values is values
    assert s.indices.numpy().tolist() == [3, 0]
    assert s.dense_shape.numpy().tolist() == [4, 3]
    assert s.dtype == td.float64
    assert s.shape == td.TensorShape([4, 3])
    text = repr(s)
    assert text.startswith("IndexedSlices(indices=") and "values=" in text and "dense_shape=" in text
    neg = -s
    assert isinstance(neg, td.IndexedSlices)
    np.testing.assert_array_equal(neg.values.numpy(), -values.numpy())
    assert neg.indices is s.indices and neg.dense_shape is s.dense_shape
    no_shape = td.IndexedSlices(values, td.constant([1, 2]))
    assert no_shape.dense_shape is None and no_shape.shape.rank is None
    assert "dense_shape" not in repr(no_shape)


def test_numpy_and_python_components_are_converted():
    s = td.IndexedSlices(np.ones((2, 2), np.float32), [0, 1], [3, 2])
    assert isinstance(s.values, td.Tensor) and s.values.dtype == td.float32
    assert s.indices.dtype in (td.int32, td.int64)
    np.testing.assert_array_equal(dense(s), [[1, 1], [1, 1], [0, 0]])


def test_bad_components():
    with pytest.raises(TypeError, match="indices must be int32 or int64"):
        td.IndexedSlices(td.constant([[1.0]]), td.constant([0.5]))
    with pytest.raises(TypeError, match="dense_shape must be int32 or int64"):
        td.IndexedSlices(td.constant([[1.0]]), td.constant([0]), td.constant([1.0, 1.0]))
    with pytest.raises(ValueError, match="without dense_shape"):
        td.convert_to_tensor(td.IndexedSlices(td.constant([[1.0]]), td.constant([0])))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
@pytest.mark.parametrize("dense_shape,indices", [((5,), [4, 0, 4, 2]), ((4, 3), [1, 1, 3]), ((3, 2, 2), [2, 0])])
@pytest.mark.parametrize("in_function", [False, True], ids=["eager", "function"])
def test_convert_to_tensor_sums_duplicates(dtype, dense_shape, indices, in_function):
    values = (rng.normal(size=(len(indices),) + dense_shape[1:]) * 10).astype(dtype)

    def f(v, i):
        return td.convert_to_tensor(td.IndexedSlices(v, i, td.constant(dense_shape)))

    got = run(f, in_function, td.constant(values), td.constant(np.array(indices, np.int64)))
    assert got.dtype == td.as_dtype(dtype)
    np.testing.assert_array_equal(got.numpy(), scatter_rows(dense_shape, indices, values))


def test_convert_to_tensor_with_dense_shape_known_only_when_running():
    @td.function(input_signature=[td.TensorSpec([None, 2], td.float64), td.TensorSpec([None], td.int32),
                                  td.TensorSpec([2], td.int64)])
    def f(v, i, shape):
        s = td.IndexedSlices(v, i, shape)
        assert s.shape.as_list() == [None, 2]
        return td.convert_to_tensor(s)

    got = f(td.constant(np.array([[1.0, 2.0], [3.0, 4.0]])), td.constant([2, 2]),
            td.constant(np.array([3, 2], np.int64)))
    np.testing.assert_array_equal(got.numpy(), [[0, 0], [0, 0], [4, 6]])


def test_conversion_dtype_mismatch_is_an_error():
    s = td.IndexedSlices(td.constant(np.array([[1.0]])), td.constant([0]), td.constant([1, 1]))
    with pytest.raises(ValueError, match="requested dtype float32"):
        td.convert_to_tensor(s, dtype=td.float32)


def test_ops_densify_operands():
    s = td.IndexedSlices(td.constant([[1.0, 2.0], [3.0, 4.0]]), td.constant([1, 1]), td.constant([3, 2]))
    np.testing.assert_array_equal(td.add(s, 1.0).numpy(), [[1, 1], [5, 7], [1, 1]])
    np.testing.assert_array_equal(td.reduce_sum(s).numpy(), 10.0)


def test_td_function_takes_and_returns_indexed_slices():
    @td.function
    def twice(s):
        return td.IndexedSlices(s.values * 2.0, s.indices, s.dense_shape)

    s = td.IndexedSlices(td.constant([[1.0, 2.0]]), td.constant([2]), td.constant([3, 2]))
    out = twice(s)
    assert isinstance(out, td.IndexedSlices)
    np.testing.assert_array_equal(out.values.numpy(), [[2.0, 4.0]])
    np.testing.assert_array_equal(out.indices.numpy(), [2])
    np.testing.assert_array_equal(dense(out), [[0, 0], [0, 0], [2, 4]])
    twice(td.IndexedSlices(td.constant([[5.0, 6.0]]), td.constant([0]), td.constant([3, 2])))
    assert len(twice._concrete_functions) == 1  # same types: no retrace
    assert "IndexedSlices[" in str(twice._concrete_functions[0])


# ---------------------------------------------------------------- gather gradients

CASES = [
    ("repeated", (5, 3), [0, 2, 2, 4, 0]),
    ("2-D indices", (4, 2), [[1, 3], [3, 3], [0, 1]]),
    ("3-D params", (3, 2, 2), [2, 0, 2]),
    ("vector params", (6,), [5, 1, 5]),
]


@pytest.mark.parametrize("name,shape,indices", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("in_function", [False, True], ids=["eager", "function"])
def test_gather_gradient_of_a_variable_is_indexed_slices(name, shape, indices, index_dtype, in_function):
    var = td.Variable(rng.normal(size=shape))
    weights = rng.normal(size=np.shape(indices) + shape[1:])
    ids = np.array(indices, index_dtype)

    def grad(i):
        with td.GradientTape() as tape:
            loss = td.reduce_sum(td.gather(var, i) * td.constant(weights))
        return tape.gradient(loss, var)

    g = run(grad, in_function, td.constant(ids))
    assert isinstance(g, td.IndexedSlices)
    # As TensorFlow: flat indices, values of shape [n] + params.shape[1:], dense_shape params' shape.
    np.testing.assert_array_equal(g.indices.numpy(), ids.reshape(-1))
    assert g.indices.dtype == td.as_dtype(index_dtype)
    np.testing.assert_allclose(g.values.numpy(), weights.reshape((-1,) + shape[1:]))
    assert g.dense_shape.numpy().tolist() == list(shape)
    np.testing.assert_allclose(dense(g), scatter_rows(shape, ids, weights), rtol=1e-12)


@pytest.mark.parametrize("in_function", [False, True], ids=["eager", "function"])
def test_gather_gradient_of_a_watched_tensor(in_function):
    x = rng.normal(size=(4, 2))

    def grad(t):
        with td.GradientTape() as tape:
            tape.watch(t)
            loss = td.reduce_sum(td.gather(t, [3, 3, 1]) ** 2)
        return tape.gradient(loss, t)

    g = run(grad, in_function, td.constant(x))
    assert isinstance(g, td.IndexedSlices)
    want = np.zeros_like(x)
    want[3] = 4 * x[3]
    want[1] = 2 * x[1]
    np.testing.assert_allclose(dense(g), want, rtol=1e-12)


def test_gather_gradient_matches_finite_differences():
    x0 = rng.normal(size=(5, 2))
    ids = np.array([[4, 0], [4, 1]])
    var = td.Variable(x0)
    with td.GradientTape() as tape:
        value = td.reduce_sum(td.tanh(td.gather(var, ids)))
    g = dense(tape.gradient(value, var))
    eps, numeric = 1e-6, np.zeros_like(x0)
    for idx in np.ndindex(x0.shape):
        for sign in (1, -1):
            x = x0.copy()
            x[idx] += sign * eps
            numeric[idx] += sign * np.sum(np.tanh(x[ids])) / (2 * eps)
    np.testing.assert_allclose(g, numeric, rtol=1e-6, atol=1e-9)


def test_gather_on_another_axis_stays_dense():
    var = td.Variable(rng.normal(size=(3, 4)))
    with td.GradientTape() as tape:
        loss = td.reduce_sum(td.gather(var, [3, 0, 3], axis=1))
    g = tape.gradient(loss, var)
    assert not isinstance(g, td.IndexedSlices)
    np.testing.assert_array_equal(g.numpy(), np.tile([1.0, 0.0, 0.0, 2.0], (3, 1)))


@pytest.mark.parametrize("in_function", [False, True], ids=["eager", "function"])
def test_several_gathers_aggregate_by_concatenation(in_function):
    var = td.Variable(rng.normal(size=(5, 2)))

    def grad(a, b):
        with td.GradientTape() as tape:
            loss = td.reduce_sum(td.gather(var, a)) + 3.0 * td.reduce_sum(td.gather(var, b))
        return tape.gradient(loss, var)

    a, b = np.array([1, 4], np.int32), np.array([4, 0, 0], np.int64)
    g = run(grad, in_function, td.constant(a), td.constant(b))
    assert isinstance(g, td.IndexedSlices)
    assert g.indices.dtype == td.int64  # int32 and int64 parts: int64, as TensorFlow does
    assert sorted(g.indices.numpy().tolist()) == [0, 0, 1, 4, 4]
    want = np.zeros((5, 2))
    want[[1, 4]] += 1
    np.add.at(want, b, 3.0)
    np.testing.assert_allclose(dense(g), want)


@pytest.mark.parametrize("in_function", [False, True], ids=["eager", "function"])
def test_gather_mixed_with_a_dense_use_gives_a_dense_sum(in_function):
    x = rng.normal(size=(4, 2))
    var = td.Variable(x)

    def grad():
        with td.GradientTape() as tape:
            loss = td.reduce_sum(td.gather(var, [2, 2, 0])) + td.reduce_sum(var * var)
        return tape.gradient(loss, var)

    g = run(grad, in_function)
    assert not isinstance(g, td.IndexedSlices)
    want = 2 * x
    want[2] += 2
    want[0] += 1
    np.testing.assert_allclose(g.numpy(), want, rtol=1e-12)


@pytest.mark.parametrize("in_function", [False, True], ids=["eager", "function"])
def test_unconnected_variables(in_function):
    used, unused = td.Variable(np.ones((3, 2))), td.Variable(np.ones((4, 2)))

    def grads(mode):
        with td.GradientTape() as tape:
            tape.watch(unused)
            loss = td.reduce_sum(td.gather(used, [1]))
        return tape.gradient(loss, [used, unused], unconnected_gradients=mode)

    g_used, g_none = run(lambda: grads(td.UnconnectedGradients.NONE), in_function)
    assert isinstance(g_used, td.IndexedSlices) and g_none is None
    g_used, g_zero = run(lambda: grads(td.UnconnectedGradients.ZERO), in_function)
    assert isinstance(g_used, td.IndexedSlices)
    np.testing.assert_array_equal(g_zero.numpy(), np.zeros((4, 2)))


def test_persistent_tape_and_output_gradients():
    var = td.Variable(rng.normal(size=(3, 2)))
    with td.GradientTape(persistent=True) as tape:
        y = td.gather(var, [2, 1, 2])
    up = rng.normal(size=(3, 2))
    g1 = tape.gradient(y, var, output_gradients=td.constant(up))
    g2 = tape.gradient(y, var)
    np.testing.assert_allclose(dense(g1), scatter_rows((3, 2), [2, 1, 2], up))
    np.testing.assert_allclose(dense(g2), scatter_rows((3, 2), [2, 1, 2], np.ones((3, 2))))


def test_an_indexed_slices_target_stands_for_its_dense_tensor():
    x = td.constant(rng.normal(size=(3, 2)))
    up = rng.normal(size=(4, 2))
    with td.GradientTape(persistent=True) as tape:
        tape.watch(x)
        s = td.IndexedSlices(x * 2.0, td.constant([0, 0, 3]), td.constant([4, 2]))
    np.testing.assert_allclose(tape.gradient(s, x).numpy(), np.full((3, 2), 2.0))
    # With an output gradient: row i of x lands on dense row indices[i].
    g = tape.gradient(s, x, output_gradients=td.constant(up))
    np.testing.assert_allclose(g.numpy(), 2.0 * up[[0, 0, 3]])


@pytest.mark.parametrize("in_function", [False, True], ids=["eager", "function"])
def test_second_order_through_gather(in_function):
    x = rng.normal(size=(4, 2))
    ids = np.array([3, 1, 3])
    w = rng.normal(size=(4, 2))
    counts = np.bincount(ids, minlength=4)[:, None]

    def hessian_vector():
        t = td.constant(x)
        with td.GradientTape() as outer:
            outer.watch(t)
            with td.GradientTape() as inner:
                inner.watch(t)
                loss = td.reduce_sum(td.gather(t, ids) ** 3)
            g = inner.gradient(loss, t)  # IndexedSlices; 3 * count * x**2 once densified
            projected = td.reduce_sum(td.convert_to_tensor(g) * td.constant(w))
        return g, outer.gradient(projected, t)

    g, h = run(hessian_vector, in_function)
    assert isinstance(g, td.IndexedSlices)
    np.testing.assert_allclose(dense(g), 3 * counts * x ** 2, rtol=1e-12)
    np.testing.assert_allclose(dense(h), 6 * counts * x * w, rtol=1e-12)


def test_gradient_inside_control_flow_is_dense_and_right():
    var = td.Variable(rng.normal(size=(4, 2)))

    @td.function
    def grad(flag):
        with td.GradientTape() as tape:
            y = td.cond(flag, lambda: td.reduce_sum(td.gather(var, [1, 1])), lambda: td.reduce_sum(var))
            _, acc = td.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, a + td.reduce_sum(td.gather(var, [i]))),
                                   [td.constant(0), td.constant(0.0, td.float64)])
            loss = y + acc
        return td.convert_to_tensor(tape.gradient(loss, var))

    loop = np.zeros((4, 2))
    loop[:3] = 1  # rows 0, 1, 2 gathered once each by the loop
    then_branch = np.zeros((4, 2))
    then_branch[1] = 2
    np.testing.assert_allclose(grad(td.constant(True)).numpy(), then_branch + loop)
    np.testing.assert_allclose(grad(td.constant(False)).numpy(), np.ones((4, 2)) + loop)


# ---------------------------------------------------------------- function boundaries

def _embedding_model():
    table = td.Variable(rng.normal(size=(6, 3)))
    w = td.Variable(rng.normal(size=(3,)))

    @td.function
    def lookup(ids):
        return td.gather(table, ids)

    @td.function
    def score(ids):
        return td.reduce_sum(lookup(ids) * w)

    return table, w, lookup, score


def test_eager_tape_over_nested_functions_keeps_slices():
    table, w, _, score = _embedding_model()
    ids = np.array([5, 0, 5, 2])
    with td.GradientTape() as tape:
        loss = score(td.constant(ids))
    g_table, g_w = tape.gradient(loss, [table, w])
    assert isinstance(g_table, td.IndexedSlices) and not isinstance(g_w, td.IndexedSlices)
    np.testing.assert_allclose(dense(g_table), scatter_rows((6, 3), ids, np.tile(w.numpy(), (4, 1))))
    np.testing.assert_allclose(g_w.numpy(), table.numpy()[ids].sum(axis=0))


def test_tape_inside_a_function_over_nested_functions_keeps_slices():
    table, w, _, score = _embedding_model()
    ids = np.array([1, 1, 4])

    @td.function
    def step(i):
        with td.GradientTape() as tape:
            loss = score(i)
        g = tape.gradient(loss, table)
        assert isinstance(g, td.IndexedSlices)
        return g

    g = step(td.constant(ids))
    assert isinstance(g, td.IndexedSlices)
    np.testing.assert_allclose(dense(g), scatter_rows((6, 3), ids, np.tile(w.numpy(), (3, 1))))
    # Nothing densified the table's gradient on the way.
    graph_ops = [op.type for op in step._concrete_functions[0].graph.operations]
    assert "UnsortedSegmentSum" not in graph_ops


def test_training_step_in_a_function_applies_a_sparse_update():
    table, w, _, score = _embedding_model()
    start = table.numpy()
    opt = td.optimizers.SGD(0.5)
    ids = np.array([3, 0, 3])

    @td.function
    def train(i):
        with td.GradientTape() as tape:
            loss = score(i)
        grads = tape.gradient(loss, [table])
        opt.apply_gradients(zip(grads, [table]))

    train(td.constant(ids))
    types = [op.type for op in train._concrete_functions[0].graph.operations]
    assert "ResourceScatterSub" in types and "UnsortedSegmentSum" not in types
    np.testing.assert_allclose(table.numpy(), start - 0.5 * scatter_rows((6, 3), ids, np.tile(w.numpy(), (3, 1))),
                               rtol=1e-12)


def test_backward_function_densifies():
    table, _, lookup, _ = _embedding_model()
    concrete = lookup.get_concrete_function(td.TensorSpec([2], td.int32))
    bwd = td.autodiff.backward_function(concrete)
    outputs = bwd(td.constant([4, 4]), table.handle, td.constant(np.ones((2, 3))))
    outputs = outputs if isinstance(outputs, (list, tuple)) else [outputs]
    assert len(outputs) == 1 and isinstance(outputs[0], td.Tensor)
    want = np.zeros((6, 3))
    want[4] = 2
    np.testing.assert_allclose(outputs[0].numpy(), want)
