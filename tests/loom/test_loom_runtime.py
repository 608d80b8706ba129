"""Running looms: Fold's example, outputs per type shape, batch inputs,
named variables read at run time, schedules inside td.function, and a
TreeLSTM equal to its per-tree computation."""

import numpy as np
import pytest

import treadle as td
from treadle.loom import trees as tree_utils
from loom_testlib import (VEC3, BinaryLoomOp, TreeLSTMWeights, random_tree, tree_depth, tree_lstm_loom,
                          tree_lstm_reference, vector_loom, weave_tree)


def fold_example():
    x_var = td.Variable(td.zeros(3, dtype=td.float64), name='x')
    y_var = td.Variable(td.zeros(3, dtype=td.float64), name='y')
    vec_3 = td.loom.TypeShape('float64', (3,))
    vec_loom = td.loom.Loom(named_tensors={'x': x_var, 'y': y_var},
                            named_ops={'add': BinaryLoomOp(vec_3, td.add),
                                       'mul': BinaryLoomOp(vec_3, td.multiply)})
    weaver = vec_loom.make_weaver()
    c = weaver(np.array([1, 5, 8], dtype='float64'))
    x_plus_c = weaver.add(weaver.x, c)
    weaver.add_output(x_plus_c)
    return vec_loom, weaver, vec_3, x_var


def test_fold_example_forward():
    vec_loom, weaver, vec_3, _ = fold_example()
    out = vec_loom.output_tensor(vec_3, weaver)
    assert out.dtype == td.float64
    np.testing.assert_array_equal(out.numpy(), [[1, 5, 8]])
    assert list(vec_loom(weaver)) == [vec_3]


@pytest.mark.skipif(not hasattr(td, "GradientTape"), reason="needs td.GradientTape (gradients branch)")
def test_fold_example_gradient():
    vec_loom, weaver, vec_3, x_var = fold_example()
    with td.GradientTape() as tape:
        loss = td.nn.l2_loss(vec_loom.output_tensor(vec_3, weaver))
    np.testing.assert_allclose(tape.gradient(loss, x_var).numpy(), [1, 5, 8])


def expected_vector_outputs(x, y):
    a = x + y
    return np.stack([a * y, a, x])


def weave_vector(w):
    a = w.add(w.x, w.y)
    w.add_output(w.mul(a, w.y))
    w.add_output(a)
    w.add_output(w.x)  # a depth-0 output
    return w


def test_outputs_in_order_added_and_variables_read_each_run():
    loom, x, y = vector_loom()
    w = weave_vector(loom.make_weaver())
    np.testing.assert_allclose(loom(w)[VEC3].numpy(), expected_vector_outputs(x.numpy(), y.numpy()))
    x.assign([0.0, 1.0, -1.0])
    np.testing.assert_allclose(loom(w)[VEC3].numpy(), expected_vector_outputs(x.numpy(), y.numpy()))


def test_empty_schedule_and_unused_type_shapes():
    f32 = td.loom.TypeShape("float32", (2,))
    loom = td.loom.Loom(named_ops={"add": BinaryLoomOp(VEC3, td.add)}, extra_type_shapes=[f32])
    outs = loom(loom.make_weaver())
    assert outs[VEC3].shape == (0, 3) and outs[f32].shape == (0, 2) and outs[f32].dtype == td.float32
    w = loom.make_weaver()
    w.add_output(w(np.array([1.0, 2.0], np.float32)))
    np.testing.assert_array_equal(loom.output_tensor(f32, w).numpy(), [[1.0, 2.0]])


def test_batch_inputs():
    table = np.arange(12.0).reshape(4, 3)
    loom = td.loom.Loom(named_ops={"mul": BinaryLoomOp(VEC3, td.multiply)}, batch_inputs={VEC3: table})
    w = loom.make_weaver()
    w.add_output(w.mul(w.batch_input(VEC3, 3), w.batch_input(VEC3, 1)))
    w.add_output(w.batch_input(VEC3, 0))
    np.testing.assert_allclose(loom.output_tensor(VEC3, w).numpy(), [table[3] * table[1], table[0]])
    with pytest.raises(IndexError, match="row 4 is out of range for the batch input .* which has 4 rows"):
        w.batch_input(VEC3, 4)  # refused when woven
    # A schedule woven against a larger table (elsewhere) is refused when run.
    larger = td.loom.Loom(named_ops={"mul": BinaryLoomOp(VEC3, td.multiply)},
                          batch_inputs={VEC3: np.zeros((8, 3))})
    elsewhere = larger.make_weaver()
    elsewhere.add_output(elsewhere.batch_input(VEC3, 4))
    with pytest.raises(td.errors.InvalidArgumentError, match="reads row 4 of the batch input .* which has 4 rows"):
        loom(elsewhere.serialize())


def test_ops_capturing_constants_and_integer_type_shapes():
    table = np.random.default_rng(1).normal(size=(10, 3))
    token = td.loom.TypeShape("int32", ())

    class Embed(td.loom.LoomOp):
        def __init__(self):
            super().__init__([token], [VEC3])

        def instantiate_batch(self, inputs):
            return [td.gather(td.constant(table), inputs[0]) * 2.0]

    loom = td.loom.Loom(named_ops={"embed": Embed(), "add": BinaryLoomOp(VEC3, td.add)})
    w = loom.make_weaver()
    w.add_output(w.add(w.embed(w(np.int32(7))), w.embed(w(2))))
    np.testing.assert_allclose(loom.output_tensor(VEC3, w).numpy(), [2 * (table[7] + table[2])])


def test_schedules_inside_td_function():
    loom, x, y = vector_loom()
    msg = weave_vector(loom.make_weaver()).serialize()
    want = expected_vector_outputs(x.numpy(), y.numpy())

    @td.function
    def run(schedule):
        return loom.output_tensor(VEC3, schedule) * 1.0

    np.testing.assert_allclose(run(td.constant(msg)).numpy(), want)
    np.testing.assert_allclose(run(td.constant([msg, msg])).numpy(), np.concatenate([want, want]))
    x.assign([5.0, 5.0, 5.0])  # the variable is read when the function runs
    np.testing.assert_allclose(run(td.constant(msg)).numpy(), expected_vector_outputs(x.numpy(), y.numpy()))

    @td.function
    def run_weaver():
        return loom.output_tensor(VEC3, loom.deserialize_weaver(msg))

    np.testing.assert_allclose(run_weaver().numpy(), expected_vector_outputs(x.numpy(), y.numpy()))


def test_dry_run_makes_schedules_but_does_not_run():
    loom, x, y = vector_loom(dry_run=True)
    msg = weave_vector(loom.make_weaver()).serialize()
    with pytest.raises(ValueError, match="dry_run"):
        loom(msg)
    real, _, _ = vector_loom()
    np.testing.assert_allclose(real.output_tensor(VEC3, msg).numpy(), expected_vector_outputs(x.numpy(), y.numpy()))


def test_op_errors_name_the_op_and_depth():
    class WrongShape(td.loom.LoomOp):
        def __init__(self):
            super().__init__([VEC3], [VEC3])

        def instantiate_batch(self, inputs):
            return [td.reshape(inputs[0], [3, -1])]  # statically (3, None): only a run can tell

    loom = td.loom.Loom(named_tensors={"x": np.ones(3)}, named_ops={"w": WrongShape()})
    w = loom.make_weaver()
    w.add_output(w.w(w.x))
    w.add_output(w.w(w(np.zeros(3))))
    with pytest.raises(td.errors.InvalidArgumentError, match=r"(?s)loom op 'w' returned .* for a batch of 2 calls.*"
                                                             r"at depth 1"):
        loom(w)

    class Wider(td.loom.LoomOp):
        def __init__(self):
            super().__init__([VEC3], [VEC3])

        def instantiate_batch(self, inputs):
            return [td.concat([inputs[0], inputs[0]], axis=1)]

    with pytest.raises(ValueError, match=r"LoomOp 'w': output 0 has shape .* not a batch of"):
        td.loom.Loom(named_ops={"w": Wider()})

    class WrongCount(td.loom.LoomOp):
        def __init__(self):
            super().__init__([VEC3], [VEC3])

        def instantiate_batch(self, inputs):
            return [inputs[0], inputs[0]]

    with pytest.raises(ValueError, match="returned 2 tensors"):
        td.loom.Loom(named_ops={"w": WrongCount()})


def test_ops_may_not_assign_variables():
    v = td.Variable(np.zeros(3))

    class Assigns(td.loom.LoomOp):
        def __init__(self):
            super().__init__([VEC3], [VEC3])

        def instantiate_batch(self, inputs):
            v.assign_add(np.ones(3))
            return [inputs[0]]

    with pytest.raises(ValueError, match="may read variables but not assign"):
        td.loom.Loom(named_ops={"a": Assigns()})


# ------------------------------------------------------------------ TreeLSTM

def sample_trees(n, seed=0, vocab=50):
    rng = np.random.default_rng(seed)
    return [random_tree(rng, int(rng.integers(1, 9)), vocab) for _ in range(n)]


def reference_outputs(w, trees):
    cs, hs = zip(*(tree_lstm_reference(w, t) for t in trees))
    return np.concatenate([c.numpy() for c in cs]), np.concatenate([h.numpy() for h in hs])


# 100 trees: layers of more than 64 calls, split into chunks that several
# threads run (where the machine has several cores).
@pytest.mark.parametrize("dtype, n_trees", [(np.float64, 12), (np.float32, 12), (np.float64, 100), (np.float32, 100)])
def test_tree_lstm_matches_per_tree_computation(dtype, n_trees):
    w = TreeLSTMWeights(dtype=dtype)
    loom = tree_lstm_loom(w)
    trees = sample_trees(n_trees)
    weaver = loom.make_weaver()
    for t in trees:
        c, h = weave_tree(weaver, w, t)
        weaver.add_output(c)
        weaver.add_output(h)
    assert weaver.deepest == max(tree_depth(t) for t in trees)
    outs = loom(weaver)
    want_c, want_h = reference_outputs(w, trees)
    tol = 1e-12 if dtype == np.float64 else 1e-5
    np.testing.assert_allclose(outs[w.c_ts].numpy(), want_c, rtol=tol, atol=tol)
    np.testing.assert_allclose(outs[w.h_ts].numpy(), want_h, rtol=tol, atol=tol)


def test_weave_trees_equals_weaving_node_by_node():
    w = TreeLSTMWeights()
    loom = tree_lstm_loom(w)
    trees = sample_trees(20, seed=3)
    by_node = loom.make_weaver()
    for t in trees:
        c, h = weave_tree(by_node, w, t)
        by_node.add_output(h)
    bulk = loom.make_weaver()
    left, right, values, roots = tree_utils.tree_arrays(trees)
    first = bulk.weave_trees(left, right, values, roots, "leaf", "node", w.embed_ts, root_outputs=[1])
    assert first.shape == (len(left),)
    assert bulk.serialize() == by_node.serialize()
    _, want_h = reference_outputs(w, trees)
    np.testing.assert_allclose(loom.output_tensor(w.h_ts, bulk).numpy(), want_h, rtol=1e-12)


def test_weave_trees_checks_its_description():
    w = TreeLSTMWeights()
    loom = tree_lstm_loom(w, max_depth=3)
    weaver = loom.make_weaver()
    left, right, values, roots = tree_utils.tree_arrays([((1, 2), 3)])
    with pytest.raises(ValueError, match="children must be earlier nodes"):
        weaver.weave_trees(right[::-1].copy(), left[::-1].copy(), values, roots, "leaf", "node", w.embed_ts)
    with pytest.raises(TypeError, match="leaf op"):
        weaver.weave_trees(left, right, values, roots, "node", "leaf", w.embed_ts)
    deep = tree_utils.tree_arrays([(((1, 2), 3), 4)])
    with pytest.raises(ValueError, match="depth 4, beyond the loom's max_depth of 3"):
        weaver.weave_trees(*deep, "leaf", "node", w.embed_ts)
    # Values that NumPy's int64 cast would truncate or wrap around are refused.
    with pytest.raises(ValueError, match=r"weave_trees: leaf_values must hold integers, got float64 with a fraction"):
        weaver.weave_trees(left, right, values + 0.5, roots, "leaf", "node", w.embed_ts)
    with pytest.raises(ValueError, match=r"weave_trees: left\[0\] = 18446744073709551615 does not fit in int64"):
        weaver.weave_trees(left.astype(np.uint64), right, values, roots, "leaf", "node", w.embed_ts)
    assert weaver.num_results == 0  # nothing was woven


def test_tree_parsing():
    assert tree_utils.parse_tree("((1 2) (3 (4 5)))") == ((1, 2), (3, (4, 5)))
    assert tree_utils.parse_tree("7") == 7
    for bad in ["(1 2", "(1 2 3)", "1 2", "(1)"]:
        with pytest.raises(ValueError):
            tree_utils.parse_tree(bad)
    left, right, values, roots = tree_utils.tree_arrays([(1, (2, 3)), 4])
    assert list(left) == [-1, -1, -1, 1, 0, -1] and list(right) == [-1, -1, -1, 2, 3, -1]
    assert list(values[[0, 1, 2, 5]]) == [1, 2, 3, 4] and list(roots) == [4, 5]


def test_list_of_schedules_inside_td_function_and_threads():
    import threading
    loom, x, y = vector_loom()
    w = weave_vector(loom.make_weaver())
    want = expected_vector_outputs(x.numpy(), y.numpy())

    @td.function
    def run():
        return loom.output_tensor(VEC3, [w, w.serialize()])

    np.testing.assert_allclose(run().numpy(), np.concatenate([want, want]))
    # Runs release the GIL and share the loom's runtime: threads get the same answers.
    results = [None] * 4

    def work(i):
        results[i] = loom.output_tensor(VEC3, [w] * (i + 1)).numpy()

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i, r in enumerate(results):
        np.testing.assert_allclose(r, np.concatenate([want] * (i + 1)))


def _run_in_forked_child(loom, h_ts, schedule, queue):
    queue.put(loom.output_tensor(h_ts, schedule).numpy())


def test_a_forked_child_runs_looms_after_its_parent():
    # The parent's worker threads do not exist in a forked child: the child
    # must make its own rather than wait for them.
    import multiprocessing
    w = TreeLSTMWeights()
    loom = tree_lstm_loom(w)
    weaver = loom.make_weaver()
    for t in sample_trees(100):
        weaver.add_output(weave_tree(weaver, w, t)[1])
    schedule = weaver.serialize()
    want = loom.output_tensor(w.h_ts, schedule).numpy()  # the parent's pool is running now
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=_run_in_forked_child, args=(loom, w.h_ts, schedule, queue))
    child.start()
    got = queue.get(timeout=60)
    child.join(timeout=60)
    assert child.exitcode == 0
    np.testing.assert_array_equal(got, want)


class _LookupOp(td.loom.LoomOp):
    """Rows of a table picked by each argument's first element: an index out of
    range fails inside the op's function, at run time."""

    def __init__(self, table):
        self.table = table
        super().__init__([VEC3], [VEC3])

    def instantiate_batch(self, inputs):
        return [td.gather(self.table, td.cast(inputs[0][:, 0], td.int32))]


@pytest.mark.parametrize("bad_call", [3, 97])
def test_an_error_in_any_chunk_of_a_layer_is_raised(bad_call):
    # 100 calls in one layer run as chunks on several threads (where the
    # machine has several cores); the failing call may be in any of them.
    table = td.Variable(np.arange(15.0).reshape(5, 3))
    rows = np.zeros((100, 3))
    rows[:, 0] = np.arange(100) % 5
    rows[bad_call, 0] = 7
    loom = td.loom.Loom(named_ops={"pick": _LookupOp(table)}, batch_inputs={VEC3: td.Variable(rows)})
    w = loom.make_weaver()
    for i in range(100):
        w.add_output(w.pick(w.batch_input(VEC3, i)))
    with pytest.raises(td.errors.InvalidArgumentError, match=r"(?s)7.*\[\[in loom op 'pick' at depth 1\]\]"):
        loom.output_tensor(VEC3, w)
    rows[bad_call, 0] = 2  # the same loom runs once the input is fixed
    loom = td.loom.Loom(named_ops={"pick": _LookupOp(table)}, batch_inputs={VEC3: td.Variable(rows)})
    w = loom.make_weaver()
    for i in range(100):
        w.add_output(w.pick(w.batch_input(VEC3, i)))
    want = np.arange(15.0).reshape(5, 3)[rows[:, 0].astype(int)]
    np.testing.assert_array_equal(loom.output_tensor(VEC3, w).numpy(), want)
