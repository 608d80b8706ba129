"""Zero-input ops, result ids of any integer type, and the schedule fingerprint
covering what the ops compute."""

import numpy as np
import pytest

import treadle as td
from loom_testlib import VEC3, BinaryLoomOp, vector_loom
from treadle import loom_pb2
from treadle.loom.saving import check_loom_def


class ConstantOp(td.loom.LoomOp):
    """An op with no inputs: its body makes one row whatever the calls."""

    def __init__(self):
        super().__init__([], [VEC3])

    def instantiate_batch(self, inputs):
        return [td.constant([[1.0, 2.0, 3.0]], dtype="float64")]


def test_zero_input_op_is_rejected_at_loom_construction():
    with pytest.raises(ValueError, match="'bias' has no input type shapes"):
        td.loom.Loom(named_ops={"bias": ConstantOp(), "add": BinaryLoomOp(VEC3, td.add)})


def test_zero_input_op_in_metadata_is_rejected_by_the_core():
    loom, _, _ = vector_loom()
    md = loom_pb2.LoomMetadata()
    md.CopyFrom(loom._metadata)
    md.ops[-1].ClearField("input_type_shapes")
    with pytest.raises(td.errors.InvalidArgumentError, match="an op needs at least one input"):
        td._core.LoomSpec(md.SerializeToString())


@pytest.mark.parametrize("cast", [int, np.int32, np.int64, np.int16, np.uint32, np.intp])
def test_any_integer_type_is_a_result_id(cast):
    loom, x, y = vector_loom()
    w = loom.make_weaver()
    a, b = cast(w.x), cast(w.y)
    s = w.add(a, b)
    [p] = w.op("mul", [cast(s), b])
    w.add_output(cast(p))
    assert w.depth(cast(p)) == 2
    out = loom.output_tensor(VEC3, w).numpy()
    np.testing.assert_allclose(out, [(x.numpy() + y.numpy()) * y.numpy()])


def test_ids_returned_by_calls_are_accepted_everywhere():
    loom, x, y = vector_loom()
    w = loom.make_weaver()
    ids = w.calls("add", [[w.x, w.y], [w.y, w.y]])
    assert ids.dtype == np.int32
    s = w.mul(ids[0, 0], ids[1, 0])
    [t] = w.op("add", list(ids[:, 0]))
    w.add_output(s)
    w.add_output(ids[1, 0])
    w.add_output(t)
    out = loom.output_tensor(VEC3, w).numpy()
    xv, yv = x.numpy(), y.numpy()
    np.testing.assert_allclose(out, [(xv + yv) * (2 * yv), 2 * yv, xv + 3 * yv])


@pytest.mark.parametrize("bad", [True, False, np.bool_(True), 1.0, np.float32(0), "0", None])
def test_bool_float_and_other_objects_are_refused_as_result_ids(bad):
    loom, _, _ = vector_loom()
    w = loom.make_weaver()
    x = w.x
    with pytest.raises(TypeError, match="result"):
        w.add(x, bad)
    with pytest.raises(TypeError, match="result"):
        w.op("add", [bad, x])
    with pytest.raises(TypeError, match="result"):
        w.add_output(bad)
    with pytest.raises(TypeError, match="result"):
        w.depth(bad)


def test_batch_input_row_must_be_an_int():
    ts = td.loom.TypeShape("float64", (3,))
    loom = td.loom.Loom(named_ops={"add": BinaryLoomOp(ts, td.add)}, batch_inputs={ts: np.ones((4, 3))})
    w = loom.make_weaver()
    assert w.depth(w.batch_input(ts, np.int32(2))) == 0
    for bad in (True, 1.5, "1"):
        with pytest.raises(TypeError, match="batch_idx must be a non-negative int"):
            w.batch_input(ts, bad)


def _loom_with(op):
    return td.loom.Loom(named_tensors={"x": np.array([1.0, 2.0, 3.0]), "y": np.array([-1.0, 0.5, 2.0])},
                        named_ops={"combine": BinaryLoomOp(VEC3, op)})


def test_fingerprint_covers_op_bodies():
    add, add_again, sub = _loom_with(td.add), _loom_with(td.add), _loom_with(td.subtract)
    assert add.fingerprint == add_again.fingerprint  # traces of the same code agree
    assert add.fingerprint != sub.fingerprint
    w = add.make_weaver()
    w.add_output(w.combine(w.x, w.y))
    np.testing.assert_allclose(add_again.output_tensor(VEC3, w.serialize()).numpy(), [[0.0, 2.5, 5.0]])
    with pytest.raises(td.errors.InvalidArgumentError, match="another loom"):
        sub.output_tensor(VEC3, w.serialize())
    with pytest.raises(td.errors.InvalidArgumentError, match="another loom"):
        sub.deserialize_weaver(w.serialize())


def test_dry_run_loom_shares_the_fingerprint_of_the_loom_it_describes():
    dry = td.loom.Loom(named_tensors={"x": np.array([1.0, 2.0, 3.0]), "y": np.array([-1.0, 0.5, 2.0])},
                       named_ops={"combine": BinaryLoomOp(VEC3, td.subtract)}, dry_run=True)
    real = _loom_with(td.subtract)
    assert dry.fingerprint == real.fingerprint != _loom_with(td.add).fingerprint


def test_loom_def_with_a_wrong_body_fingerprint_is_rejected():
    loom = _loom_with(td.add)
    loom_def = loom.loom_def
    loom_def.metadata.ops[-1].body_fingerprint ^= 1
    with pytest.raises(td.errors.InvalidArgumentError, match="body fingerprint"):
        check_loom_def(loom_def)
