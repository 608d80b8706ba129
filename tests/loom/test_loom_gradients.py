"""Gradients through a loom: checked by finite differences, against the
per-tree TreeLSTM, eagerly (GradientTape) and inside td.function."""

import numpy as np
import pytest

import treadle as td
from loom_testlib import (VEC3, BinaryLoomOp, TreeLSTMWeights, dense, random_tree, tree_lstm_loom,
                          tree_lstm_reference, vector_loom, weave_tree)


def numeric_gradient(f, variable, eps=1e-6):
    """Central differences of scalar f() with respect to each element of variable."""
    base = variable.numpy().copy()
    grad = np.zeros_like(base)
    for i in np.ndindex(base.shape):
        for sign in (1, -1):
            v = base.copy()
            v[i] += sign * eps
            variable.assign(v)
            grad[i] += sign * float(f())
    variable.assign(base)
    return grad / (2 * eps)


def vector_weaver(loom):
    w = loom.make_weaver()
    a = w.add(w.x, w(np.array([0.5, -1.0, 2.0])))
    b = w.mul(a, w.y)
    c = w.mul(b, w.mul(w.x, w.x))   # x reaches depth 3 through pass-throughs and a mul at depth 1
    w.add_output(c)
    w.add_output(w.add(c, a))
    w.add_output(w.y)              # a depth-0 output
    return w


def test_gradients_match_finite_differences():
    loom, x, y = vector_loom()
    weaver = vector_weaver(loom)
    weights = td.constant(np.random.default_rng(0).normal(size=(3, 3)))

    def loss():
        return td.reduce_sum(loom.output_tensor(VEC3, weaver) * weights)

    with td.GradientTape() as tape:
        value = loss()
    gx, gy = tape.gradient(value, [x, y])
    np.testing.assert_allclose(gx.numpy(), numeric_gradient(loss, x), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(gy.numpy(), numeric_gradient(loss, y), rtol=1e-6, atol=1e-8)


def test_gradients_inside_td_function_equal_eager():
    loom, x, y = vector_loom()
    msg = vector_weaver(loom).serialize()

    def step(schedule):
        with td.GradientTape() as tape:
            out = loom.output_tensor(VEC3, schedule)
            loss = td.reduce_sum(out * out)
        return tape.gradient(loss, [x, y])

    eager = step(msg)
    graph = td.function(step)(td.constant([msg, msg]))
    np.testing.assert_allclose(graph[0].numpy(), 2 * eager[0].numpy(), rtol=1e-12)
    np.testing.assert_allclose(graph[1].numpy(), 2 * eager[1].numpy(), rtol=1e-12)


def test_gradient_of_unused_outputs_is_zero_and_unwatched_inputs_get_none():
    loom, x, y = vector_loom()
    w = loom.make_weaver()
    w.add_output(w.add(w.x, w.x))
    with td.GradientTape() as tape:
        out = loom(w)[VEC3]
        loss = td.reduce_sum(out)
    gx, gy = tape.gradient(loss, [x, y])
    np.testing.assert_allclose(gx.numpy(), [2.0, 2.0, 2.0])
    assert gy is None or np.all(gy.numpy() == 0)


def test_batch_input_gradient_is_a_scatter_add():
    table = td.Variable(np.arange(12.0).reshape(4, 3))
    loom = td.loom.Loom(named_ops={"mul": BinaryLoomOp(VEC3, td.multiply)}, batch_inputs={VEC3: table})
    w = loom.make_weaver()
    w.add_output(w.mul(w.batch_input(VEC3, 1), w.batch_input(VEC3, 3)))
    w.add_output(w.batch_input(VEC3, 1))
    with td.GradientTape() as tape:
        loss = td.reduce_sum(loom.output_tensor(VEC3, w))
    g = tape.gradient(loss, table)
    # Sparse, as a gather's gradient: the rows the schedule read.
    assert isinstance(g, td.IndexedSlices)
    assert g.dense_shape.numpy().tolist() == [4, 3] and g.indices.dtype == td.int64
    assert sorted(g.indices.numpy().tolist()) == [1, 1, 3]  # row 1 is read twice
    t = table.numpy()
    want = np.zeros((4, 3))
    want[1] += t[3] + 1.0
    want[3] += t[1]
    np.testing.assert_allclose(td.convert_to_tensor(g).numpy(), want)


def _table_loom():
    """A loom over a batch input (a 4-row table) and a named tensor x."""
    table = td.Variable(np.arange(12.0).reshape(4, 3))
    x = td.Variable(np.array([0.5, -1.0, 2.0]))
    loom = td.loom.Loom(named_ops={"mul": BinaryLoomOp(VEC3, td.multiply)}, named_tensors={"x": x},
                        batch_inputs={VEC3: table})
    return loom, table, x


def _table_weaver(loom, rows=(2, 0, 2)):
    w = loom.make_weaver()
    for r in rows:
        w.add_output(w.mul(w.batch_input(VEC3, r), w.x))
    return w


def _table_gradients(loom, table, x, schedule):
    with td.GradientTape() as tape:
        loss = td.reduce_sum(loom.output_tensor(VEC3, schedule) ** 2)
    return tape.gradient(loss, [table, x])


def _table_reference(table, x, rows):
    t, xv = table.numpy(), x.numpy()
    g_table, g_x = np.zeros_like(t), np.zeros_like(xv)
    for r in rows:
        g_table[r] += 2 * t[r] * xv * xv
        g_x += 2 * t[r] * t[r] * xv
    return g_table, g_x


@pytest.mark.parametrize("in_function", [False, True], ids=["eager", "function"])
def test_batch_input_gradient_is_indexed_slices_named_tensors_stay_dense(in_function):
    loom, table, x = _table_loom()
    weaver = _table_weaver(loom)
    if in_function:
        g_table, g_x = td.function(lambda s: _table_gradients(loom, table, x, s))(td.constant(weaver.serialize()))
    else:
        g_table, g_x = _table_gradients(loom, table, x, weaver)
    assert isinstance(g_table, td.IndexedSlices) and not isinstance(g_x, td.IndexedSlices)
    assert g_table.dense_shape.numpy().tolist() == [4, 3]
    assert sorted(g_table.indices.numpy().tolist()) == [0, 2, 2]  # one per read of a row
    assert g_table.values.shape.as_list()[1:] == [3]
    want_table, want_x = _table_reference(table, x, (2, 0, 2))
    np.testing.assert_allclose(dense(g_table), want_table, rtol=1e-12)
    np.testing.assert_allclose(g_x.numpy(), want_x, rtol=1e-12)


def test_no_batch_rows_read_gives_empty_slices():
    loom, table, x = _table_loom()
    w = loom.make_weaver()
    w.add_output(w.mul(w.x, w.x))
    g_table, g_x = _table_gradients(loom, table, x, w)
    assert isinstance(g_table, td.IndexedSlices)
    assert g_table.values.shape.as_list() == [0, 3] and g_table.indices.shape.as_list() == [0]
    np.testing.assert_array_equal(dense(g_table), np.zeros((4, 3)))
    np.testing.assert_allclose(g_x.numpy(), 4 * x.numpy() ** 3)


def test_unrolled_mode_batch_input_gradient_stays_dense():
    table = td.Variable(np.arange(12.0).reshape(4, 3))
    x = td.Variable(np.array([0.5, -1.0, 2.0]))
    loom = td.loom.Loom(max_depth=2, named_ops={"mul": BinaryLoomOp(VEC3, td.multiply)}, named_tensors={"x": x},
                        batch_inputs={VEC3: table})
    g_table, _ = _table_gradients(loom, table, x, _table_weaver(loom))
    assert not isinstance(g_table, td.IndexedSlices)
    np.testing.assert_allclose(g_table.numpy(), _table_reference(table, x, (2, 0, 2))[0], rtol=1e-12)


def _sgd_step(loom, table, x, opt, sparse):
    # The variables are captured: passed as (default) arguments, a td.function
    # traces each as a variable of its own, as TensorFlow does.
    @td.function
    def step(s):
        g_table, g_x = _table_gradients(loom, table, x, s)
        if not sparse:
            g_table = td.convert_to_tensor(g_table)
        opt.apply_gradients([(g_table, table), (g_x, x)])
    return step


@pytest.mark.parametrize("momentum", [0.0, 0.9])
def test_sgd_on_a_batch_input_equals_the_dense_update(momentum):
    results = []
    for sparse in (True, False):
        loom, table, x = _table_loom()
        opt = td.optimizers.SGD(0.01, momentum=momentum)
        schedule = td.constant(_table_weaver(loom).serialize())

        step = _sgd_step(loom, table, x, opt, sparse)

        for _ in range(3):
            step(schedule)
        types = [op.type for op in step._concrete_functions[0].graph.operations]
        assert ("ResourceScatterSub" in types) == sparse
        results.append((table.numpy(), x.numpy()))
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-12)
    np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-12)


def test_loom_run_grad_checks_its_input_counts():
    from treadle.framework.op_execution import execute
    loom, table, x = _table_loom()
    inputs = [v.read_value() if isinstance(v, td.Variable) else v for v in loom._input_sources]
    with td.GradientTape() as tape:  # a run no tape watches saves nothing for LoomRunGrad
        tape.watch(inputs)
        outs = execute("LoomRun", [loom._schedule_tensor(_table_weaver(loom))] + inputs, loom._run_attrs)
    grads = [td.ones_like(o) for o in outs[:-1]]
    attrs = {"Tgrads": [g.dtype for g in grads], "Tinputs": loom._input_dtypes, "input_shapes": loom._input_shapes}
    with pytest.raises(td.errors.InvalidArgumentError, match="LoomRunGrad: the record is of a loom with 1 named"):
        execute("LoomRunGrad", [outs[-1]] + grads, dict(attrs, num_named_tensors=0, num_batch_inputs=2))
    with pytest.raises(td.errors.InvalidArgumentError, match="LoomRunGrad: num_named_tensors"):
        execute("LoomRunGrad", [outs[-1]] + grads, dict(attrs, num_named_tensors=2, num_batch_inputs=1))
    got = execute("LoomRunGrad", [outs[-1]] + grads, dict(attrs, num_named_tensors=1, num_batch_inputs=1))
    assert [t.dtype for t in got] == [td.float64, td.float64, td.int64]


def tree_loss(w, h, labels):
    logits = td.matmul(h, w.w_out) + w.b_out
    logp = logits - td.math.log(td.reduce_sum(td.exp(logits), axis=1, keepdims=True))
    return -td.reduce_sum(logp * td.one_hot(labels, 3, dtype=w.dtype))


# 90 trees: layers of more than 64 calls, which the runtime splits into
# chunks run by several threads (where the machine has several cores).
@pytest.mark.parametrize("graph, n_trees", [(False, 9), (True, 9), (False, 90), (True, 90)])
def test_tree_lstm_gradients_equal_per_tree_computation(graph, n_trees):
    w = TreeLSTMWeights()
    loom = tree_lstm_loom(w)
    rng = np.random.default_rng(7)
    trees = [random_tree(rng, int(rng.integers(1, 8)), 50) for _ in range(n_trees)]
    labels = rng.integers(0, 3, len(trees))
    weaver = loom.make_weaver()
    for t in trees:
        weaver.add_output(weave_tree(weaver, w, t)[1])

    def loom_grads(schedule):
        with td.GradientTape() as tape:
            loss = tree_loss(w, loom.output_tensor(w.h_ts, schedule), labels)
        return [loss] + tape.gradient(loss, w.variables())

    with td.GradientTape() as tape:
        h = td.concat([tree_lstm_reference(w, t)[1] for t in trees], axis=0)
        ref_loss = tree_loss(w, h, labels)
    ref = [ref_loss] + tape.gradient(ref_loss, w.variables())
    got = td.function(loom_grads)(td.constant(weaver.serialize())) if graph else loom_grads(weaver)
    for name, a, b in zip(["loss", "embedding", "w_leaf", "b_leaf", "w_node", "b_node", "w_out", "b_out"],
                          got, ref):
        np.testing.assert_allclose(dense(a), dense(b), rtol=1e-10, atol=1e-12, err_msg=name)


def test_tree_lstm_gradient_by_finite_differences():
    w = TreeLSTMWeights(vocab=8, embed=3, hidden=2)
    loom = tree_lstm_loom(w)
    weaver = loom.make_weaver()
    for t in [((1, 2), (3, (4, 5))), 6, (7, 0)]:
        weaver.add_output(weave_tree(weaver, w, t)[1])

    def loss():
        return tree_loss(w, loom.output_tensor(w.h_ts, weaver), np.array([0, 2, 1]))

    with td.GradientTape() as tape:
        value = loss()
    grads = tape.gradient(value, [w.w_node, w.embedding])
    np.testing.assert_allclose(grads[0].numpy(), numeric_gradient(loss, w.w_node), rtol=1e-5, atol=1e-8)
    assert isinstance(grads[1], td.IndexedSlices)
    np.testing.assert_allclose(dense(grads[1]), numeric_gradient(loss, w.embedding), rtol=1e-5, atol=1e-8)


# ------------------------------------------------------------------ the two runtime modes

@pytest.mark.parametrize("graph", [False, True])
def test_unrolled_mode_equals_the_loop_outputs_and_gradients(graph):
    w = TreeLSTMWeights()
    loop = tree_lstm_loom(w)
    rng = np.random.default_rng(11)
    trees = [random_tree(rng, int(rng.integers(1, 7)), 50) for _ in range(7)]
    labels = rng.integers(0, 3, len(trees))
    depth = None
    weaver = loop.make_weaver()
    for t in trees:
        c, h = weave_tree(weaver, w, t)
        weaver.add_output(h)
        weaver.add_output(c)
        depth = max(depth or 0, weaver.depth(h))
    msg = weaver.serialize()
    results = []
    for loom in (loop, tree_lstm_loom(w, max_depth=depth + 2)):  # unrolled, with two empty layers
        def step(schedule, loom=loom):
            with td.GradientTape() as tape:
                outs = loom(schedule)
                loss = tree_loss(w, outs[w.h_ts], labels) + td.reduce_sum(outs[w.c_ts] * outs[w.c_ts])
            return [outs[w.h_ts], outs[w.c_ts], loss] + tape.gradient(loss, w.variables())
        results.append(td.function(step)(td.constant(msg)) if graph else step(msg))
    for a, b in zip(*results):
        np.testing.assert_allclose(dense(a), dense(b), rtol=1e-12, atol=1e-14)


def test_unrolled_mode_rejects_deeper_schedules():
    loop, _, _ = vector_loom()
    unrolled, _, _ = vector_loom(max_depth=1)
    w = loop.make_weaver()
    w.add_output(w.add(w.add(w.x, w.y), w.x))
    with pytest.raises(td.errors.InvalidArgumentError, match="beyond the loom's max_depth of 1"):
        unrolled(w.serialize())


def test_a_batch_input_of_a_type_shape_the_schedule_never_holds_gets_empty_slices():
    # No depth-0 row of the batch input's type shape at all: its gradient is
    # an empty IndexedSlices, not a missing value.
    vec2 = td.loom.TypeShape("float64", (2,))
    table = td.Variable(np.ones((4, 2)))
    x = td.Variable(np.array([0.5, -1.0, 2.0]))
    loom = td.loom.Loom(named_ops={"mul": BinaryLoomOp(VEC3, td.multiply)}, named_tensors={"x": x},
                        batch_inputs={vec2: table})
    w = loom.make_weaver()
    w.add_output(w.mul(w.x, w.x))
    with td.GradientTape() as tape:
        loss = td.reduce_sum(loom.output_tensor(VEC3, w))
    g_table, g_x = tape.gradient(loss, [table, x])
    assert isinstance(g_table, td.IndexedSlices)
    assert g_table.values.shape.as_list() == [0, 2] and g_table.indices.shape.as_list() == [0]
    np.testing.assert_array_equal(dense(g_table), np.zeros((4, 2)))
    np.testing.assert_allclose(g_x.numpy(), 2 * x.numpy())
