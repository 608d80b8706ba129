"""The Weaver's rules: depths, pass-throughs (memoised), type checks,
max_depth, constants and batch inputs, serialisation and merging."""

import numpy as np
import pytest

import treadle as td
from loom_testlib import VEC3, BinaryLoomOp, vector_loom

NAMED, BATCH, CONSTANT = -1, -2, -3


class SplitOp(td.loom.LoomOp):
    """One vector in, two out (a multi-output op)."""

    def __init__(self):
        super().__init__([VEC3], [VEC3, VEC3])

    def instantiate_batch(self, inputs):
        return [inputs[0] * 2.0, inputs[0] - 1.0]


def info(weaver, r):
    depth, ts, op, output, position = weaver._result_info(r)
    return dict(depth=depth, ts=ts, op=op, output=output, position=position)


def test_depth_zero_results():
    loom, _, _ = vector_loom(batch_inputs={VEC3: np.zeros((4, 3))})
    w = loom.make_weaver()
    x, c, b = w.x, w(np.ones(3)), w.batch_input(VEC3, 2)
    assert [w.depth(r) for r in (x, c, b)] == [0, 0, 0]
    assert w.deepest == 0
    assert info(w, x)["op"] == NAMED and info(w, c)["op"] == CONSTANT and info(w, b)["op"] == BATCH
    assert info(w, b)["position"] == 2
    assert w.x == x and w.named_tensor("x") == x  # one result per named tensor
    assert w.get_type_shape(c) == VEC3


def test_op_depth_is_one_more_than_deepest_argument():
    loom, _, _ = vector_loom()
    w = loom.make_weaver()
    a = w.add(w.x, w.y)
    b = w.mul(a, a)
    c = w.add(b, a)
    assert (w.depth(a), w.depth(b), w.depth(c)) == (1, 2, 3)
    assert w.deepest == 3
    assert w.op("add", [w.x, w.y]) == [w.num_results - 1]  # op() returns a list


def test_pass_throughs_lift_shallow_arguments_once():
    loom, _, _ = vector_loom()
    w = loom.make_weaver()
    x = w.x
    a = w.add(x, x)            # depth 1
    b = w.mul(a, a)            # depth 2
    before = w.num_results
    c = w.add(b, x)            # x lifted to depth 1 then 2: two pass-throughs
    assert w.depth(c) == 3
    assert w.num_results == before + 3
    lifted = [r for r in range(w.num_results) if info(w, r)["op"] == 0]  # op 0: pass-through of VEC3
    assert [w.depth(r) for r in lifted] == [1, 2]
    before = w.num_results
    d = w.mul(b, x)            # memoised: x already lifted to depth 2
    assert w.num_results == before + 1 and w.depth(d) == 3
    # The chain serves shallower depths too.
    before = w.num_results
    w.add(a, x)
    assert w.num_results == before + 1


def test_positions_count_calls_per_op_and_depth():
    loom, _, _ = vector_loom()
    w = loom.make_weaver()
    r = [w.add(w.x, w.y) for _ in range(3)]
    m = w.mul(w.x, w.y)
    assert [info(w, q)["position"] for q in r] == [0, 1, 2]
    assert info(w, m)["position"] == 0


def test_multi_output_op():
    loom = td.loom.Loom(named_tensors={"x": np.array([1.0, 2.0, 3.0])}, named_ops={"split": SplitOp()})
    w = loom.make_weaver()
    a, b = w.split(w.x)
    assert b == a + 1 and info(w, b)["output"] == 1
    w.add_output(b)
    w.add_output(a)
    out = loom.output_tensor(VEC3, w).numpy()
    np.testing.assert_allclose(out, [[0.0, 1.0, 2.0], [2.0, 4.0, 6.0]])


def test_type_and_arity_checks():
    i32 = td.loom.TypeShape("int32", ())
    loom = td.loom.Loom(named_tensors={"x": np.ones(3), "k": np.int32(4)},
                        named_ops={"add": BinaryLoomOp(VEC3, td.add)})
    w = loom.make_weaver()
    with pytest.raises(TypeError, match=r"op 'add' argument 1 must be TypeShape\(float64, \(3,\)\), got a result "
                                        r"of TypeShape\(int32, \(\)\)"):
        w.add(w.x, w.k)
    with pytest.raises(TypeError, match="op 'add' takes 2 arguments, got 3"):
        w.add(w.x, w.x, w.x)
    with pytest.raises(ValueError, match="argument 0: 99 is not a result of this weaver"):
        w.add(99, w.x)
    with pytest.raises(TypeError, match="must be a result of this weaver"):
        w.add("x", w.x)
    with pytest.raises(ValueError, match="no op named 'sub'"):
        w.op("sub", [w.x, w.x])
    with pytest.raises(ValueError, match="not a result of this weaver"):
        w.depth(1234)
    with pytest.raises(ValueError, match="no batch input"):
        w.batch_input(i32, 0)
    with pytest.raises(ValueError, match="no batch input of TypeShape"):
        w.batch_input(td.loom.TypeShape("float32", (7,)), 0)
    # A failed call leaves the weaver unchanged.
    n = w.num_results
    with pytest.raises(TypeError):
        w.add(w.add(w.x, w.x), w.k)
    assert w.num_results == n + 1 and w.deepest == 1


def test_max_depth_is_enforced():
    loom, _, _ = vector_loom(max_depth=2)
    w = loom.make_weaver()
    a = w.mul(w.add(w.x, w.y), w.x)
    assert w.depth(a) == 2
    with pytest.raises(ValueError, match="depth 3, beyond the loom's max_depth of 2"):
        w.add(a, w.x)


def test_constants_pick_their_type_shape():
    f32 = td.loom.TypeShape("float32", ())
    tagged = td.loom.TypeShape("float64", (3,), "t")
    loom = td.loom.Loom(named_ops={"add": BinaryLoomOp(VEC3, td.add)}, extra_type_shapes=[f32, tagged])
    w = loom.make_weaver()
    assert w.get_type_shape(w(1.5)) == f32          # a Python float fits the one float scalar type shape
    assert w.get_type_shape(w([1, 2, 3])) == VEC3   # Python ints fit a float vector
    assert w.get_type_shape(w.constant(np.zeros(3), tag="t")) == tagged
    with pytest.raises(TypeError, match="matches no type shape"):
        w(np.zeros(3, np.float32))                  # an array keeps its exact dtype
    with pytest.raises(TypeError, match="matches no type shape"):
        w(np.zeros(4))
    rs = w.constants(np.arange(6.0).reshape(2, 3), VEC3)
    w.add_output(rs[1])
    w.add_output(w.add(rs[0], rs[1]))
    np.testing.assert_allclose(loom.output_tensor(VEC3, w).numpy(), [[3, 4, 5], [3, 5, 7]])


def test_reserved_and_duplicate_names():
    with pytest.raises(ValueError, match="reserved"):
        td.loom.Loom(named_ops={"add_output": BinaryLoomOp(VEC3, td.add)})
    with pytest.raises(ValueError, match="reserved"):
        td.loom.Loom(named_tensors={"_x": np.ones(3)})
    with pytest.raises(ValueError, match="names both"):
        td.loom.Loom(named_tensors={"a": np.ones(3)}, named_ops={"a": BinaryLoomOp(VEC3, td.add)})
    with pytest.raises(TypeError, match="LoomOp"):
        td.loom.Loom(named_ops={"a": td.add})


def test_serialize_round_trip_and_continue_weaving():
    loom, _, _ = vector_loom()
    w = loom.make_weaver()
    a = w.add(w.x, w(np.array([1.0, 1.0, 1.0])))
    b = w.mul(a, w.y)
    w.add_output(b)
    msg = w.serialize()
    w2 = loom.deserialize_weaver(msg)
    assert w2.serialize() == msg
    assert w2.num_results == w.num_results and w2.deepest == 2
    # The pass-through memo survives: b's call lifted y to depth 1, so lifting
    # y to depth 2 now adds one pass-through (and the add itself).
    n = w2.num_results
    w2.add(b, w2.y)
    assert w2.num_results == n + 2
    np.testing.assert_allclose(loom.output_tensor(VEC3, msg).numpy(),
                               loom.output_tensor(VEC3, w).numpy())


def test_merge_offsets_positions_constants_and_outputs():
    loom, _, _ = vector_loom()
    w1 = loom.make_weaver()
    c1 = w1(np.array([1.0, 2.0, 3.0]))
    w1.add_output(w1.add(w1.x, c1))
    w2 = loom.make_weaver()
    c2 = w2(np.array([10.0, 20.0, 30.0]))
    c3 = w2(np.array([0.5, 0.5, 0.5]))
    w2.add_output(w2.mul(w2.add(c2, c3), w2.y))
    w2.add_output(c3)
    merged = loom.deserialize_weaver(loom.merge_schedules([w1, w2.serialize()]))
    n1 = w1.num_results
    assert merged.num_results == n1 + w2.num_results
    # w2's first constant is constant 1 of the merged schedule; its add is the second add call at depth 1.
    assert info(merged, n1 + c2)["position"] == 1
    add2 = next(r for r in range(n1, merged.num_results) if info(merged, r)["op"] == loom._op_index("add"))
    assert info(merged, add2)["position"] == 1
    assert merged._outputs() == [o for o in w1._outputs()] + [o + n1 for o in w2._outputs()]
    want = np.concatenate([loom.output_tensor(VEC3, w1).numpy(), loom.output_tensor(VEC3, w2).numpy()])
    np.testing.assert_allclose(loom.output_tensor(VEC3, merged).numpy(), want)
    np.testing.assert_allclose(loom.output_tensor(VEC3, [w1, w2]).numpy(), want)


def test_bulk_calls_match_single_calls():
    loom, _, _ = vector_loom()
    w1, w2 = loom.make_weaver(), loom.make_weaver()
    for w in (w1, w2):
        w.x, w.y  # noqa: B018 - make the named results in the same order
    singles = [w1.add(w1.x, w1.y) for _ in range(3)]
    bulk = w2.calls("add", np.array([[w2.x, w2.y]] * 3))
    assert bulk.shape == (3, 1) and list(bulk[:, 0]) == singles
    assert w1.serialize() == w2.serialize()
