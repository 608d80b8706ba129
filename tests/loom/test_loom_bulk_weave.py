"""Weaver.weave: n-ary forests and DAGs woven in one call, against weaving the
same nodes one Python call at a time (identical schedules, so identical
outputs and gradients), and its checks."""

import numpy as np
import pytest

import treadle as td
from loom_testlib import VEC3
from test_loom_ragged import (TREES, ChildSumWeights, child_sum_loom, child_sum_reference, ragged_sum_loom,
                              weave_forest)

W = td.loom.Weaver


def forest_arrays(trees):
    """The weave description of a child-sum forest: node i is (token, children),
    children numbered before parents; x from the batch input, c and h ragged."""
    node_op, splits, arg_input, arg_source, arg_value, arg_output, roots = [], [0], [], [], [], [], []

    def add(tree):
        token, kids = tree
        ids = [add(k) for k in kids]
        node_op.append(0)
        entries = [(0, W.BATCH_INPUT, token, 0)] + [(1, W.NODE, k, 0) for k in ids] + \
            [(2, W.NODE, k, 1) for k in ids]
        for a, s, v, o in entries:
            arg_input.append(a)
            arg_source.append(s)
            arg_value.append(v)
            arg_output.append(o)
        splits.append(len(arg_input))
        return len(node_op) - 1

    for t in trees:
        roots.append(add(t))
    return node_op, splits, arg_input, arg_source, arg_value, arg_output, roots


def test_nary_forest_bulk_equals_per_node():
    p = ChildSumWeights()
    loom = child_sum_loom(p)
    per_node = weave_forest(loom, p, TREES)
    bulk = loom.make_weaver()
    node_op, splits, ai, src, val, out, roots = forest_arrays(TREES)
    first = bulk.weave(["node"], node_op, splits, ai, src, val, out, outputs=roots,
                       output_index=np.ones(len(roots)))
    assert first.shape == (len(node_op),) and first.dtype == np.int32
    assert bulk.serialize() == per_node.serialize()
    expected = np.stack([child_sum_reference(p, t)[1] for t in TREES])
    np.testing.assert_allclose(loom.output_tensor(p.h_ts, bulk).numpy(), expected, rtol=1e-12)


def test_dag_shares_sub_results_and_matches_per_node():
    loom = ragged_sum_loom()
    per_node = loom.make_weaver()
    x = per_node.x
    a = per_node.add(x, x)                # node 0
    b = per_node.total([a, a, x])         # node 1: reads node 0 twice
    c = per_node.add(a, b)                # node 2: reads node 0 again
    d = per_node.total([])                # node 3
    e = per_node.total([c, b, d])         # node 4
    for r in (e, c):
        per_node.add_output(r)
    bulk = loom.make_weaver()
    T, NT = W.NODE, W.NAMED_TENSOR
    entries = [[(0, NT, 0), (1, NT, 0)],
               [(0, T, 0), (0, T, 0), (0, NT, 0)],
               [(0, T, 0), (1, T, 1)],
               [],
               [(0, T, 2), (0, T, 1), (0, T, 3)]]
    splits = np.cumsum([0] + [len(x) for x in entries])
    flat = [x for node in entries for x in node]
    first = bulk.weave(["add", "total"], [0, 1, 0, 1, 1], splits, [f[0] for f in flat], [f[1] for f in flat],
                       [f[2] for f in flat], outputs=np.array([4, 2], dtype=np.int32))
    assert bulk.serialize() == per_node.serialize()
    assert list(first) == [a, b, c, d, e]
    xv = np.array([1.0, 2.0, 3.0])
    bv = 2 * (2 * xv + 2 * xv + xv)
    cv = 2 * xv + bv
    np.testing.assert_allclose(loom.output_tensor(VEC3, bulk).numpy(), [2 * (cv + bv), cv])


def test_bulk_forest_gradients_equal_per_node():
    p = ChildSumWeights(seed=4)
    loom = child_sum_loom(p)
    node_op, splits, ai, src, val, out, roots = forest_arrays(TREES)
    bulk = loom.make_weaver()
    bulk.weave(["node"], node_op, splits, ai, src, val, out, outputs=roots, output_index=[1] * len(roots))
    grads = []
    for w in (bulk, weave_forest(loom, p, TREES)):
        with td.GradientTape() as tape:
            loss = td.reduce_sum(loom.output_tensor(p.h_ts, w) ** 2)
        grads.append([td.convert_to_tensor(g).numpy() for g in tape.gradient(loss, p.variables())])
    for g_bulk, g_node in zip(*grads):
        np.testing.assert_array_equal(g_bulk, g_node)


def test_constants_and_batch_inputs_in_bulk():
    ts = td.loom.TypeShape("int64", ())
    vec = td.loom.TypeShape("float64", (2,))

    class Embed(td.loom.LoomOp):
        def __init__(self):
            super().__init__([ts], [vec])

        def instantiate_batch(self, inputs):
            return [td.gather(td.constant([[1.0, 0.0], [0.0, 1.0], [2.0, 2.0]], dtype="float64"), inputs[0])]

    loom = td.loom.Loom(named_ops={"embed": Embed()})
    bulk = loom.make_weaver()
    bulk.weave(["embed"], [0, 0], [0, 1, 2], [0, 0], [W.CONSTANT, W.CONSTANT], [2, 1], outputs=[0, 1])
    by_node = loom.make_weaver()
    for v in (2, 1):
        by_node.add_output(by_node.embed(by_node(np.int64(v))))
    assert bulk.serialize() == by_node.serialize()
    np.testing.assert_array_equal(loom.output_tensor(vec, bulk).numpy(), [[2.0, 2.0], [0.0, 1.0]])


@pytest.mark.parametrize("change,error,match", [
    (dict(arg_value=[0, 0, 0, 0, 0, 5]), ValueError, "children must be earlier nodes"),
    (dict(arg_input=[0, 1, 0, 1, 1, 0]), ValueError, "in order"),
    (dict(arg_source=[3, 3, 0, 0, 0, 7]), ValueError, "has source 7"),
    (dict(arg_output=[0, 0, 0, 0, 0, 2]), ValueError, "takes output 2"),
    (dict(node_op=[0, 0, 0]), TypeError, "node 1 gives 3 arguments for input 0"),
    (dict(outputs=[3]), ValueError, "output 0 is node 3"),
    (dict(arg_splits=[0, 2, 1, 6]), ValueError, "decreases"),
    # Beyond int32 (2**32 + 3 wrapped around to source 3, a node), and not integers at all.
    (dict(arg_source=[3, 3, 0, 0, 2 ** 32 + 3, 0]), ValueError, r"arg_source\[4\] = 4294967299 does not fit"),
    (dict(arg_output=[0, 0, 0, 0, 0, -2 ** 40]), ValueError, r"arg_output\[5\] = .* does not fit"),
    (dict(arg_input=[0, 1, 0, 0, 0, 2 ** 31]), ValueError, r"arg_input\[5\] = 2147483648 does not fit"),
    (dict(arg_value=[0, 0, 0, 0, 0, 1.5]), ValueError, "arg_value must hold integers, got float64 with a fraction"),
    (dict(arg_value=[0, 0, 0, 0, 0, "1"]), ValueError, "arg_value must hold integers, got <U"),
])
def test_weave_checks_everything_before_weaving(change, error, match):
    loom = ragged_sum_loom()
    w = loom.make_weaver()
    args = dict(node_op=[0, 1, 1], arg_splits=[0, 2, 5, 6], arg_input=[0, 1, 0, 0, 0, 0],
                arg_source=[3, 3, 0, 0, 3, 0], arg_value=[0, 0, 0, 0, 0, 1], arg_output=[0, 0, 0, 0, 0, 0],
                outputs=[2])
    w.weave(["add", "total"], **args)  # the unchanged description weaves
    fresh = loom.make_weaver()
    args.update(change)
    with pytest.raises(error, match=match):
        fresh.weave(["add", "total"], **args)
    assert fresh.num_results == 0


def test_weave_refuses_an_output_index_beyond_int32():
    loom = ragged_sum_loom()
    w = loom.make_weaver()
    with pytest.raises(ValueError, match=r"output_index\[0\] = 4294967296 does not fit"):
        w.weave(["add", "total"], node_op=[0, 1, 1], arg_splits=[0, 2, 5, 6], arg_input=[0, 1, 0, 0, 0, 0],
                arg_source=[3, 3, 0, 0, 3, 0], arg_value=[0, 0, 0, 0, 0, 1], outputs=[2], output_index=[2 ** 32])
    assert w.num_results == 0


def test_weave_respects_max_depth():
    loom = ragged_sum_loom(max_depth=2)
    w = loom.make_weaver()
    with pytest.raises(ValueError, match="node 2 needs depth 3, beyond the loom's max_depth of 2"):
        w.weave(["total"], [0, 0, 0], [0, 1, 2, 3], [0, 0, 0], [3, 0, 0], [0, 0, 1])
    assert w.num_results == 0
