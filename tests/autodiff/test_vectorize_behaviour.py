"""td.vectorized_map beyond single ops: gradients through it (finite
differences), td.function calls inside fn, captured variables, variable
writes, random draws, effects that run once per example, the batched graph
of a TreeLSTM cell (one matmul, no loop, no tiled weight), and caching."""

import warnings

import numpy as np
import pytest

import treadle as td

from .gradcheck import GradCheck

rng = np.random.default_rng(5)


def u(*shape):
    return rng.uniform(-1.0, 1.0, size=shape)


# ---------------------------------------------------------------- gradients

@td.function
def _gated(x, w):
    return td.sigmoid(td.matmul(x[None], w)[0]) * td.tanh(x)


GRADIENT_CASES = {
    "matmul with a shared weight": (lambda x, w: td.vectorized_map(lambda r: td.matmul(r[None], w)[0] * r[0], x),
                                    [u(4, 3), u(3, 3)]),
    "gather of a shared table": (lambda p, i: td.vectorized_map(lambda k: td.gather(p, k), i),
                                 [u(5, 2), np.array([[0, 4], [2, 2], [1, 3]], np.int32)]),
    "per-example cond": (lambda x: td.vectorized_map(
        lambda r: td.cond(td.reduce_sum(r) > 0, lambda: td.tanh(r) * 2.0, lambda: r * r), x), [u(5, 3)]),
    "per-example while": (lambda x: td.vectorized_map(
        lambda r: td.while_loop(lambda v: td.reduce_sum(td.abs(v)) < 4.0, lambda v: v * 1.5, [r])[0], x),
        [u(4, 2) + np.sign(u(4, 2)) * 0.3]),
    "softmax and a reduction": (lambda x: td.vectorized_map(lambda r: td.reduce_max(td.nn.softmax(r), 1), x),
                                [u(3, 2, 4)]),
    "a td.function called inside": (lambda x, w: td.vectorized_map(lambda r: _gated(r, w) * r, x),
                                    [u(4, 3), u(3, 3)]),
}


@pytest.mark.parametrize("name", sorted(GRADIENT_CASES))
@pytest.mark.parametrize("in_function", [False, True])
def test_gradients_through_vectorized_map_match_finite_differences(name, in_function):
    fn, inputs = GRADIENT_CASES[name]
    GradCheck(fn, inputs).check_first(in_function=in_function)


# ---------------------------------------------------------------- functions and variables

@td.function
def _scaled_tanh(x, s):
    return td.tanh(x) * s


def test_a_td_function_called_inside_fn_is_vectorized_once_per_signature():
    x = u(6, 3)
    got = td.vectorized_map(lambda r: _scaled_tanh(r, 2.0) + 1.0, td.constant(x))
    np.testing.assert_allclose(got.numpy(), np.tanh(x) * 2.0 + 1.0, rtol=1e-12)

    @td.function
    def outer(v):
        return td.vectorized_map(lambda r: _scaled_tanh(r, 2.0), v)
    graph = outer.get_concrete_function(td.constant(x)).graph
    calls = [op for op in graph.operations if op.type == "PartitionedCall"]
    assert len(calls) == 1  # the callee's batched form, called once (no loop over examples)
    assert not [op for op in graph.operations if op.type in ("While", "StatelessWhile")]
    np.testing.assert_allclose(outer(td.constant(x)).numpy(), np.tanh(x) * 2.0, rtol=1e-12)


def test_a_captured_variable_stays_unbatched_and_gets_its_gradient():
    w = td.Variable(u(3, 2))
    x = td.constant(u(5, 3))

    def fn(r):
        return td.reduce_sum(td.tanh(td.matmul(r[None], w)))
    td.vectorized_map(fn, x)  # traced and kept before the tape records: the tape still sees w read
    with td.GradientTape() as tape:
        y = td.vectorized_map(fn, x)
        loss = td.reduce_sum(y * y)
    grad = tape.gradient(loss, w)
    want = np.tanh(x.numpy() @ w.numpy()).sum(1)
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-12)

    def numeric():
        base = w.numpy()
        g = np.zeros_like(base)
        for idx in np.ndindex(base.shape):
            for sign in (1, -1):
                p = base.copy()
                p[idx] += sign * 1e-6
                g[idx] += sign * np.sum(np.tanh(x.numpy() @ p).sum(1) ** 2) / 2e-6
        return g
    np.testing.assert_allclose(np.asarray(grad), numeric(), rtol=1e-5, atol=1e-7)


def test_variable_writes_accumulate_as_once_per_example():
    v = td.Variable(np.zeros(2))
    x = u(4, 2)

    def add(r):
        v.assign_add(r)
        return r * 1.0
    td.vectorized_map(add, td.constant(x))
    np.testing.assert_allclose(v.numpy(), x.sum(0), rtol=1e-12)

    def add_shared(r):
        v.assign_sub(td.constant([1.0, 2.0], td.float64))
        return r * 1.0
    td.vectorized_map(add_shared, td.constant(x))
    np.testing.assert_allclose(v.numpy(), x.sum(0) - 4 * np.array([1.0, 2.0]), rtol=1e-12)

    def assign(r):
        v.assign(r)
        return r * 1.0
    td.vectorized_map(assign, td.constant(x))
    np.testing.assert_allclose(v.numpy(), x[-1])  # the last example's write stays

    table = td.Variable(np.zeros((3, 2)))

    def scatter(r):
        table.scatter_add(td.IndexedSlices(r[None], td.constant([1])))
        table.scatter_sub(td.IndexedSlices(r[None] * 0.5, td.constant([2])))
        return r * 1.0
    td.vectorized_map(scatter, td.constant(x))
    np.testing.assert_allclose(table.numpy(), [[0, 0], x.sum(0), -0.5 * x.sum(0)], rtol=1e-12)


def test_random_draws_differ_per_example():
    x = td.constant(np.zeros((64, 3)))
    for draw in (lambda r: r + td.random.normal([3], dtype=td.float64),
                 lambda r: r + td.random.uniform([3], dtype=td.float64),
                 lambda r: r + td.cast(td.random.uniform([3], maxval=1000, dtype=td.int32), td.float64)):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            out = td.vectorized_map(draw, x).numpy()
        assert out.shape == (64, 3)
        assert len(np.unique(out[:, 0])) > 32  # not one draw repeated


def test_print_runs_once_per_example_with_a_warning(capfd):
    with pytest.warns(UserWarning, match="op Print .* will run once per example"):
        td.vectorized_map(lambda r: td.print("row", r) or r * 2.0, td.constant(np.arange(3.0)))
    assert capfd.readouterr().err.count("row") == 3


def test_a_cond_with_effects_and_a_per_example_condition_runs_per_example():
    v = td.Variable(0.0, dtype=td.float64)

    def fn(r):
        def bump():
            v.assign_add(td.constant(1.0, td.float64))
            return r * 2.0
        return td.cond(r > 0, bump, lambda: r)
    x = np.array([1.0, -1.0, 2.0, 3.0])
    with pytest.warns(UserWarning, match="op If .* will run once per example"):
        out = td.function(lambda e: td.vectorized_map(fn, e))(td.constant(x))
    np.testing.assert_allclose(out.numpy(), np.where(x > 0, 2 * x, x))
    assert v.numpy() == 3.0


# ---------------------------------------------------------------- the TreeLSTM cell

H = 8


def tree_lstm_cell(w, b):
    def cell(args):
        h_l, c_l, h_r, c_r = args
        z = td.matmul(td.concat([h_l, h_r], 0)[None], w)[0] + b
        i, f_l, f_r, o, g = td.split(z, 5, axis=0)
        c = td.sigmoid(i) * td.tanh(g) + td.sigmoid(f_l) * c_l + td.sigmoid(f_r) * c_r
        return td.sigmoid(o) * td.tanh(c), c
    return cell


def hand_batched(w, b, h_l, c_l, h_r, c_r):
    z = td.matmul(td.concat([h_l, h_r], 1), w) + b
    i, f_l, f_r, o, g = td.split(z, 5, axis=1)
    c = td.sigmoid(i) * td.tanh(g) + td.sigmoid(f_l) * c_l + td.sigmoid(f_r) * c_r
    return td.sigmoid(o) * td.tanh(c), c


def test_the_tree_lstm_cell_vectorizes_to_the_hand_batched_graph():
    w = td.Variable(u(2 * H, 5 * H).astype(np.float32))
    b = td.Variable(u(5 * H).astype(np.float32))
    cell = tree_lstm_cell(w, b)
    inputs = [td.constant(u(16, H).astype(np.float32)) for _ in range(4)]
    fn = td.function(lambda *xs: td.vectorized_map(cell, xs))
    graph = fn.get_concrete_function(*[td.TensorSpec([None, H], td.float32)] * 4).graph
    types = [op.type for op in graph.operations]
    assert types.count("MatMul") == 1 and "BatchMatMulV2" not in types
    assert not {"While", "StatelessWhile", "Tile", "BroadcastTo", "PartitionedCall"} & set(types)
    got = fn(*inputs)
    want = hand_batched(w, b, *inputs)
    for g, h in zip(got, want):
        np.testing.assert_allclose(g.numpy(), h.numpy(), rtol=1e-5, atol=1e-6)


def test_a_td_function_cell_is_built_inline():
    w = td.Variable(u(2 * H, 5 * H).astype(np.float32))
    b = td.Variable(u(5 * H).astype(np.float32))
    cell = td.function(tree_lstm_cell(w, b))
    inputs = [td.constant(u(16, H).astype(np.float32)) for _ in range(4)]
    fn = td.function(lambda *xs: td.vectorized_map(cell, xs))
    types = [op.type for op in fn.get_concrete_function(*inputs).graph.operations]
    assert types.count("MatMul") == 1 and "PartitionedCall" not in types
    got, eager = fn(*inputs), td.vectorized_map(cell, tuple(inputs))
    want = hand_batched(w, b, *inputs)
    for g, e, h in zip(got, eager, want):
        np.testing.assert_allclose(g.numpy(), h.numpy(), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(e.numpy(), h.numpy(), rtol=1e-5, atol=1e-6)


def test_fn_is_traced_once_per_signature():
    traces = []

    def fn(r):
        traces.append(1)
        return r * 2.0
    for n in (3, 5, 3):
        td.vectorized_map(fn, td.constant(np.ones((n, 2))))
    assert len(traces) == 1
    td.vectorized_map(fn, td.constant(np.ones((3, 4))))
    assert len(traces) == 2


# ---------------------------------------------------------------- structures and errors

def test_structures_in_and_out_as_map_fn():
    x, y = u(4, 2), u(4)
    out = td.vectorized_map(lambda e: {"s": e[0] * e[1], "t": (e[1], 3)}, (td.constant(x), td.constant(y)))
    np.testing.assert_allclose(out["s"].numpy(), x * y[:, None])
    np.testing.assert_allclose(out["t"][0].numpy(), y)
    np.testing.assert_array_equal(out["t"][1].numpy(), [3, 3, 3, 3])  # an unbatched result, stacked


def test_bad_elems_raise():
    with pytest.raises(ValueError, match="rank >= 1"):
        td.vectorized_map(lambda r: r, td.constant(1.0))
    with pytest.raises(ValueError, match="same first dimension"):
        td.vectorized_map(lambda e: e[0], (td.constant(np.ones(3)), td.constant(np.ones(4))))
    with pytest.raises(ValueError, match="non-empty"):
        td.vectorized_map(lambda e: e, ())


# ---------------------------------------------------------------- loops inside fn

@pytest.mark.parametrize("in_function", [False, True])
def test_map_fn_scan_and_vectorized_map_inside_fn_are_batched_without_a_loop_over_examples(in_function):
    x = u(4, 3, 2)
    fns = {
        "vectorized_map": (lambda r: td.vectorized_map(lambda q: td.reduce_sum(q * q), r), (x * x).sum(-1)),
        "map_fn": (lambda r: td.map_fn(lambda q: td.reduce_sum(q * q), r), (x * x).sum(-1)),
        "scan": (lambda r: td.scan(lambda acc, q: acc + q, r), np.cumsum(x, 1)),
    }
    for name, (fn, want) in fns.items():
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no op runs once per example
            if in_function:
                got = td.function(lambda v, fn=fn: td.vectorized_map(fn, v))(td.constant(x))
            else:
                got = td.vectorized_map(fn, td.constant(x))
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, err_msg=name)


# ---------------------------------------------------------------- inside a LoomOp

def test_a_loom_op_batching_a_per_node_cell_matches_the_hand_batched_op():
    h = 4
    vec = td.loom.TypeShape("float64", (h,))
    w = td.Variable(u(2 * h, h))

    @td.function
    def node(args):
        a, b = args
        return td.tanh(td.matmul(td.concat([a, b], 0)[None], w)[0])

    class Vectorized(td.loom.LoomOp):
        def __init__(self):
            super().__init__([vec, vec], [vec])

        def instantiate_batch(self, inputs):
            return [td.vectorized_map(node, list(inputs))]

    class Hand(Vectorized):
        def instantiate_batch(self, inputs):
            return [td.tanh(td.matmul(td.concat(list(inputs), 1), w))]

    leaves = [u(h) for _ in range(4)]
    results = []
    for op in (Vectorized(), Hand()):
        loom = td.loom.Loom(named_ops={"node": op})
        weaver = loom.make_weaver()
        t = [weaver(v) for v in leaves]
        weaver.add_output(weaver.node(weaver.node(t[0], t[1]), weaver.node(t[2], t[3])))
        with td.GradientTape() as tape:
            out = loom.output_tensor(vec, weaver.serialize())
            loss = td.reduce_sum(out * out)
        results.append((out.numpy(), np.asarray(tape.gradient(loss, w))))
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-12)
    np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-10)


def test_a_custom_gradient_inside_fn_runs_fn_per_example_and_keeps_its_gradient():
    @td.custom_gradient
    def clipped(x):
        return x * 1.0, lambda dy: td.clip_by_value(dy, -0.1, 0.1)

    x = td.constant(u(4, 3))
    grads = {}
    for name, mapper in (("vectorized_map", td.vectorized_map), ("map_fn", td.map_fn)):
        with td.GradientTape() as tape:
            tape.watch(x)
            if name == "vectorized_map":
                with pytest.warns(UserWarning, match="custom gradient .* whole function will run once per example"):
                    y = mapper(lambda r: clipped(r * 3.0), x)
            else:
                y = mapper(lambda r: clipped(r * 3.0), x)
            loss = td.reduce_sum(y * y)
        grads[name] = tape.gradient(loss, x).numpy()
    np.testing.assert_allclose(grads["vectorized_map"], np.full((4, 3), 0.3) * np.sign(x.numpy()), rtol=1e-12)
    np.testing.assert_allclose(grads["vectorized_map"], grads["map_fn"], rtol=1e-12)


# ---------------------------------------------------------------- a condition per example

def test_each_example_computes_only_the_branch_it_takes():
    table = td.constant(np.arange(6.0).reshape(3, 2))
    rows = td.constant(np.array([0, 5, 2, -1, 1], np.int32))  # 5 and -1 would be out of range for the gather

    def lookup(i):
        return td.cond(td.logical_and(i >= 0, i < 3), lambda: td.gather(table, i), lambda: td.zeros([2], td.float64))
    got = td.vectorized_map(lookup, rows)
    np.testing.assert_array_equal(got.numpy(), [[0, 1], [0, 0], [4, 5], [0, 0], [2, 3]])

    x = td.constant(np.array([4.0, -1.0, 9.0, -4.0]))
    with td.GradientTape() as tape:
        tape.watch(x)
        y = td.reduce_sum(td.vectorized_map(lambda v: td.cond(v > 0, lambda: td.sqrt(v), lambda: v * 0.0), x))
    grad = td.convert_to_tensor(tape.gradient(y, x))  # the rows of each branch: IndexedSlices
    np.testing.assert_allclose(grad.numpy(), [0.25, 0.0, 1.0 / 6.0, 0.0])  # no NaN from sqrt(-1)


@pytest.mark.parametrize("values", [[1.0, 2.0, 3.0], [-1.0, -2.0, -3.0]])
def test_a_condition_that_every_example_takes_alike(values):
    x = td.constant(np.array(values))
    got = td.function(lambda v: td.vectorized_map(lambda r: td.cond(r > 0, lambda: r * 2.0, lambda: r - 1.0), v))(x)
    np.testing.assert_allclose(got.numpy(), np.where(np.array(values) > 0, np.array(values) * 2, np.array(values) - 1))


def test_a_loop_runs_each_iteration_on_the_examples_still_running():
    table = td.constant(np.array([1.0, 10.0, 100.0]))
    limits = td.constant(np.array([1, 3, 2, 0], np.int32))

    def total(limit):
        # A finished example's next read would be out of range: it must not run again.
        _, acc = td.while_loop(lambda i, acc: i < limit, lambda i, acc: (i + 1, acc + td.gather(table, i)),
                               [td.constant(0), td.constant(0.0, td.float64)])
        return acc
    for run in (lambda: td.vectorized_map(total, limits),
                lambda: td.function(lambda v: td.vectorized_map(total, v))(limits)):
        np.testing.assert_allclose(run().numpy(), [1.0, 111.0, 11.0, 0.0])
