"""Ragged (variable-arity) loom arguments: a child-sum TreeLSTM as one node op
(leaves included: a leaf is a call with no children) against a NumPy
recursion, values and gradients (finite differences), per-node weaving,
messages, merges and the checks of ragged wiring."""

import numpy as np
import pytest

import treadle as td
from loom_testlib import VEC3, dense
from treadle import loom_pb2

H, E, V = 3, 4, 7


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


class ChildSumWeights:
    def __init__(self, seed=0):
        rng = np.random.default_rng(seed)
        self.embedding = td.Variable(rng.normal(0, 0.6, (V, E)), name="embedding")
        self.w = td.Variable(rng.normal(0, 0.5, (E, 4 * H)), name="w")      # x -> i, o, u, f
        self.u_iou = td.Variable(rng.normal(0, 0.5, (H, 3 * H)), name="u_iou")  # summed h -> i, o, u
        self.u_f = td.Variable(rng.normal(0, 0.5, (H, H)), name="u_f")        # each child's h -> its f
        self.b = td.Variable(rng.normal(0, 0.1, (4 * H,)), name="b")
        self.x_ts = td.loom.TypeShape("float64", (E,), "x")
        self.c_ts = td.loom.TypeShape("float64", (H,), "c")
        self.h_ts = td.loom.TypeShape("float64", (H,), "h")

    def variables(self):
        return [self.embedding, self.w, self.u_iou, self.u_f, self.b]


class ChildSumNode(td.loom.LoomOp):
    """Tai et al. 2015, section 3.1: one op for every node, leaves included."""

    def __init__(self, p):
        self.p = p
        super().__init__([p.x_ts, td.loom.Ragged(p.c_ts), td.loom.Ragged(p.h_ts)], [p.c_ts, p.h_ts])

    def instantiate_batch(self, inputs):
        x, c_kids, h_kids = inputs
        p = self.p
        gates = td.matmul(x, p.w) + p.b
        i, o, u, f_x = td.split(gates, 4, axis=1)
        iou = td.matmul(td.reduce_sum(h_kids, axis=1), p.u_iou)
        i_h, o_h, u_h = td.split(iou, 3, axis=1)
        # One forget gate per child: the parent's x part repeated per child.
        f = td.sigmoid(td.repeat(f_x, h_kids.row_lengths(), axis=0) + td.matmul(h_kids.values, p.u_f))
        kept = td.math.unsorted_segment_sum(f * c_kids.values, h_kids.value_rowids(), h_kids.nrows())
        c = td.sigmoid(i + i_h) * td.tanh(u + u_h) + kept
        return [c, td.sigmoid(o + o_h) * td.tanh(c)]


def child_sum_reference(p, tree):
    """(c, h) of a tree (token, [children]) by the recursion, in NumPy."""
    token, kids = tree
    states = [child_sum_reference(p, k) for k in kids]
    x = p.embedding.numpy()[token]
    i, o, u, f_x = np.split(x @ p.w.numpy() + p.b.numpy(), 4)
    h_sum = sum((h for _, h in states), np.zeros(H))
    i_h, o_h, u_h = np.split(h_sum @ p.u_iou.numpy(), 3)
    c = sigmoid(i + i_h) * np.tanh(u + u_h)
    for c_k, h_k in states:
        c = c + sigmoid(f_x + h_k @ p.u_f.numpy()) * c_k
    return c, sigmoid(o + o_h) * np.tanh(c)


def random_nary_tree(rng, size):
    if size == 1 or rng.random() < 0.2:
        return (int(rng.integers(V)), [])
    arity = int(rng.integers(1, min(4, size - 1) + 1)) if size > 1 else 0
    sizes = rng.multinomial(size - 1 - arity, [1 / arity] * arity) + 1 if arity else []
    return (int(rng.integers(V)), [random_nary_tree(rng, int(s)) for s in sizes])


TREES = [(3, []), (1, [(2, []), (4, []), (0, [])]), (5, [(6, [(1, []), (2, [])]), (0, [])])] + \
    [random_nary_tree(np.random.default_rng(s), 9) for s in range(4)]


def child_sum_loom(p, **kwargs):
    return td.loom.Loom(named_ops={"node": ChildSumNode(p)}, batch_inputs={p.x_ts: p.embedding}, **kwargs)


def weave(w, p, tree):
    token, kids = tree
    states = [weave(w, p, k) for k in kids]
    return w.node(w.batch_input(p.x_ts, token), [c for c, _ in states], [h for _, h in states])


def weave_forest(loom, p, trees):
    w = loom.make_weaver()
    for t in trees:
        w.add_output(weave(w, p, t)[1])
    return w


def test_child_sum_tree_lstm_matches_the_recursion():
    p = ChildSumWeights()
    loom = child_sum_loom(p)
    w = weave_forest(loom, p, TREES)
    out = loom.output_tensor(p.h_ts, w).numpy()
    expected = np.stack([child_sum_reference(p, t)[1] for t in TREES])
    np.testing.assert_allclose(out, expected, rtol=1e-12, atol=1e-12)


def test_child_sum_tree_lstm_unrolled_and_in_function():
    p = ChildSumWeights()
    expected = np.stack([child_sum_reference(p, t)[1] for t in TREES])
    unrolled = child_sum_loom(p, max_depth=8)
    np.testing.assert_allclose(unrolled.output_tensor(p.h_ts, weave_forest(unrolled, p, TREES)).numpy(), expected,
                               rtol=1e-12)
    loom = child_sum_loom(p)
    msg = weave_forest(loom, p, TREES).serialize()
    run = td.function(lambda s: loom.output_tensor(p.h_ts, s))
    np.testing.assert_allclose(run(td.constant([msg])).numpy(), expected, rtol=1e-12)


def numeric_gradient(f, variable, entries, eps=1e-6):
    base = variable.numpy().copy()
    out = []
    for i in entries:
        total = 0.0
        for sign in (1, -1):
            v = base.copy()
            v[i] += sign * eps
            variable.assign(v)
            total += sign * float(f())
        out.append(total / (2 * eps))
    variable.assign(base)
    return np.array(out)


@pytest.mark.parametrize("max_depth", [None, 8])
def test_child_sum_gradients_match_finite_differences(max_depth):
    p = ChildSumWeights(seed=1)
    loom = child_sum_loom(p, max_depth=max_depth)
    w = weave_forest(loom, p, TREES)
    weights = td.constant(np.random.default_rng(5).normal(size=(len(TREES), H)))

    def loss():
        return td.reduce_sum(loom.output_tensor(p.h_ts, w) * weights)

    with td.GradientTape() as tape:
        value = loss()
    grads = tape.gradient(value, p.variables())
    rng = np.random.default_rng(2)
    for var, g in zip(p.variables(), grads):
        entries = [tuple(rng.integers(0, d) for d in var.shape.as_list()) for _ in range(6)]
        g = dense(g)
        np.testing.assert_allclose([g[i] for i in entries], numeric_gradient(loss, var, entries),
                                   rtol=1e-6, atol=1e-9)


class RaggedSum(td.loom.LoomOp):
    """sum of a list of vectors, times a scale: a leaf is an empty list (0)."""

    def __init__(self):
        super().__init__([td.loom.Ragged(VEC3)], [VEC3])

    def instantiate_batch(self, inputs):
        return [td.reduce_sum(inputs[0], axis=1) * 2.0]


def ragged_sum_loom(**kwargs):
    return td.loom.Loom(named_tensors={"x": np.array([1.0, 2.0, 3.0])},
                        named_ops={"total": RaggedSum(), "add": _Add()}, **kwargs)


class _Add(td.loom.LoomOp):
    def __init__(self):
        super().__init__([VEC3, VEC3], [VEC3])

    def instantiate_batch(self, inputs):
        return [inputs[0] + inputs[1]]


def test_ragged_weaving_depths_lifts_and_empty_lists():
    loom = ragged_sum_loom()
    w = loom.make_weaver()
    x = w.x
    empty = w.total([])
    assert w.depth(empty) == 1   # no arguments: depth 1
    deep = w.add(w.add(x, x), x)  # depth 2
    mixed = w.total((x, deep, empty))  # x and empty are lifted to depth 2
    assert w.depth(mixed) == 3
    [again] = w.op("total", [[np.int64(mixed), x]])
    for r in (empty, mixed, again):
        w.add_output(r)
    out = loom.output_tensor(VEC3, w).numpy()
    xv = np.array([1.0, 2.0, 3.0])
    m = 2 * (xv + 3 * xv)
    np.testing.assert_allclose(out, [np.zeros(3), m, 2 * (m + xv)])


def test_ragged_schedules_travel_in_messages_files_and_merges(tmp_path):
    loom = ragged_sum_loom()
    a, b = loom.make_weaver(), loom.make_weaver()
    a.add_output(a.total([a.x, a.x]))
    b.add_output(b.total([]))
    b.add_output(b.total([b.total([b.x]), b.x, b.x]))
    expected = [[4.0, 8.0, 12.0], [0.0, 0.0, 0.0], [8.0, 16.0, 24.0]]
    np.testing.assert_allclose(loom.output_tensor(VEC3, [a.serialize(), b.serialize()]).numpy(), expected)
    merged = loom.merge_schedules([a, b])
    np.testing.assert_allclose(loom.output_tensor(VEC3, merged).numpy(), expected)
    again = loom.deserialize_weaver(b.serialize())
    again.add_output(again.total([again.x]))
    np.testing.assert_allclose(loom.output_tensor(VEC3, again).numpy(), expected[1:] + [[2.0, 4.0, 6.0]])
    path = str(tmp_path / "ragged.tfrecord")
    td.loom.write_schedules(path, [a.serialize(), b.serialize()])
    np.testing.assert_allclose(loom.output_tensor(VEC3, td.loom.read_schedules(path)).numpy(), expected)


def test_ragged_arguments_are_checked():
    loom = ragged_sum_loom()
    w = loom.make_weaver()
    with pytest.raises(TypeError, match="ragged: it takes a list or tuple"):
        w.total(w.x)
    with pytest.raises(TypeError, match="item 1 must be a result"):
        w.total([w.x, True])
    with pytest.raises(TypeError, match="takes 1 arguments"):
        w.total([w.x], [w.x])
    with pytest.raises(TypeError, match="takes a list of results"):
        w.calls("total", [[w.x]])
    with pytest.raises(ValueError, match="not a result"):
        w.total([w.x, 999])


def _message_with(loom, edit):
    w = loom.make_weaver()
    w.add_output(w.total([w.x, w.x]))
    m = loom_pb2.WeaverMessage.FromString(w.serialize())
    edit(m)
    return m.SerializeToString()


@pytest.mark.parametrize("edit,match", [
    (lambda m: m.wiring[0].row_lengths.append(1), "row lengths for 2 calls"),
    (lambda m: m.wiring[0].row_lengths.__setitem__(0, 3), "summing to 3 but 2 results"),
    (lambda m: m.wiring[0].row_lengths.__setitem__(0, -1), "negative row length"),
    (lambda m: m.wiring[0].ClearField("row_lengths"), "row lengths for 0 calls"),
])
def test_bad_ragged_wiring_in_a_message_is_refused(edit, match):
    loom = ragged_sum_loom()
    with pytest.raises(td.errors.InvalidArgumentError, match=match):
        loom.deserialize_weaver(_message_with(loom, edit))


def test_row_lengths_on_a_dense_argument_are_refused():
    loom = ragged_sum_loom()
    w = loom.make_weaver()
    w.add_output(w.add(w.x, w.x))
    m = loom_pb2.WeaverMessage.FromString(w.serialize())
    m.wiring[0].row_lengths.append(1)
    with pytest.raises(td.errors.InvalidArgumentError, match="not ragged"):
        loom.deserialize_weaver(m.SerializeToString())


def test_ragged_inputs_are_part_of_the_fingerprint():
    class DenseSum(td.loom.LoomOp):
        def __init__(self):
            super().__init__([VEC3], [VEC3])

        def instantiate_batch(self, inputs):
            return [inputs[0] * 2.0]

    a = td.loom.Loom(named_ops={"total": RaggedSum()}, extra_type_shapes=[VEC3])
    b = td.loom.Loom(named_ops={"total": DenseSum()}, extra_type_shapes=[VEC3])
    assert a.fingerprint != b.fingerprint
    assert td.loom.Ragged(VEC3) == td.loom.Ragged(VEC3) != VEC3
    with pytest.raises(TypeError, match="td.loom.Ragged takes a TypeShape"):
        td.loom.Ragged("float64")


def test_saved_child_sum_loom_weaves_and_runs_ragged_calls(tmp_path):
    p = ChildSumWeights(seed=3)
    loom = child_sum_loom(p)
    path = str(tmp_path / "child_sum.loom")
    td.save(loom, path)
    restored = td.load(path)
    assert restored.fingerprint == loom.fingerprint
    out = restored.output_tensor(p.h_ts, weave_forest(restored, p, TREES)).numpy()
    np.testing.assert_allclose(out, np.stack([child_sum_reference(p, t)[1] for t in TREES]), rtol=1e-12)
