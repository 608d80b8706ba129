"""Bad schedules never reach a kernel: each is a clear exception naming the
problem, whether the message comes as bytes, in a list, or inside a graph."""

import numpy as np
import pytest

import treadle as td
from treadle import loom_pb2
from loom_testlib import VEC3, BinaryLoomOp, vector_loom

InvalidArgument = td.errors.InvalidArgumentError


@pytest.fixture(scope="module")
def loom():
    return vector_loom()[0]


def good_message(loom):
    w = loom.make_weaver()
    c = w(np.array([1.0, 2.0, 3.0]))
    a = w.add(w.x, c)
    w.add_output(w.mul(a, w.y))  # y lifted to depth 1 by a pass-through
    return loom_pb2.WeaverMessage.FromString(w.serialize())


def wiring(msg, depth, op, arg):
    return next(x for x in msg.wiring if (x.depth, x.op, x.arg) == (depth, op, arg))


def check_rejected(loom, msg, pattern, error=InvalidArgument):
    data = msg.SerializeToString() if hasattr(msg, "SerializeToString") else msg
    with pytest.raises(error, match=pattern):
        loom(data)
    with pytest.raises(error, match=pattern):
        loom.deserialize_weaver(data)

    @td.function
    def run(s):
        return loom.output_tensor(VEC3, s)

    with pytest.raises(error, match=pattern):
        run(td.constant([data]))


def test_good_message_runs(loom):
    out = loom.output_tensor(VEC3, good_message(loom).SerializeToString()).numpy()
    x, y = loom.named_tensors["x"].numpy(), loom.named_tensors["y"].numpy()
    np.testing.assert_allclose(out, [(x + [1, 2, 3]) * y])


def test_index_out_of_range(loom):
    msg = good_message(loom)
    wiring(msg, 1, loom._op_index("add"), 1).results[0] = 999
    check_rejected(loom, msg, "argument 1 of call 0 of op 'add' at depth 1 is result 999, out of range")
    msg = good_message(loom)
    msg.outputs[0] = -4
    check_rejected(loom, msg, "output 0 is result -4, out of range")
    msg = good_message(loom)
    msg.result_position[0] = 7  # the first result is the constant: there is one
    check_rejected(loom, msg, r"result 0 is constant 7 of .*out of range \[0, 1\)")
    msg = good_message(loom)
    msg.result_type_shape[0] = 5
    check_rejected(loom, msg, "result 0 has type shape index 5, out of range")


def test_wrong_type_shape(loom):
    i32 = td.loom.TypeShape("int32", ())
    other = td.loom.Loom(named_tensors={"x": np.ones(3), "y": np.ones(3), "k": np.int32(1)},
                         named_ops={"add": BinaryLoomOp(VEC3, td.add)})
    w = other.make_weaver()
    w.add_output(w.add(w.x, w.y))
    msg = loom_pb2.WeaverMessage.FromString(w.serialize())
    k = w.k
    full = loom_pb2.WeaverMessage.FromString(w.serialize())
    wiring(full, 1, other._op_index("add"), 0).results[0] = k
    check_rejected(other, full, r"argument 0 of op 'add' must be TypeShape\(float64, \(3,\)\) but call 0 at depth 1 "
                                r"passes result \d+ of TypeShape\(int32, \(\)\)")
    assert i32 in other.type_shapes and msg.outputs


def test_depth_inconsistent_with_arguments(loom):
    msg = good_message(loom)
    mul = wiring(msg, 2, loom._op_index("mul"), 1)
    y = list(msg.result_op).index(-1, 2)  # the named tensor y (x is the second result)
    mul.results[0] = y  # y itself (depth 0) instead of its pass-through (depth 1)
    check_rejected(loom, msg, "depth mismatch: call 0 of op 'mul' at depth 2 takes result .* of depth 0")


def test_cycle(loom):
    msg = good_message(loom)
    add = wiring(msg, 1, loom._op_index("add"), 0)
    add_result = [i for i, op in enumerate(msg.result_op) if op == loom._op_index("add")][0]
    add.results[0] = add_result  # the add takes its own result
    check_rejected(loom, msg, "cycle: call 0 of op 'add' at depth 1 takes result .* as argument 0")


def test_message_from_another_loom(loom):
    other = td.loom.Loom(named_tensors={"x": np.ones(3), "y": np.ones(3)},
                         named_ops={"add": BinaryLoomOp(VEC3, td.add)})
    w = other.make_weaver()
    w.add_output(w.add(w.x, w.y))
    check_rejected(loom, loom_pb2.WeaverMessage.FromString(w.serialize()), "made for another loom")
    with pytest.raises(InvalidArgument, match="another loom"):
        loom(w)


def test_truncated_and_corrupt_bytes(loom):
    data = good_message(loom).SerializeToString()
    # Cut inside the last wiring entry (cutting a whole trailing field leaves a valid message:
    # record files carry checksums for that).
    check_rejected(loom, data[:-5], "not a serialized WeaverMessage", td.errors.DataLossError)
    check_rejected(loom, b"\xff" * 20, "not a serialized WeaverMessage", td.errors.DataLossError)


def test_inconsistent_columns_and_positions(loom):
    msg = good_message(loom)
    del msg.result_op[-1]
    check_rejected(loom, msg, "result columns differ in length")
    msg = good_message(loom)
    i = [i for i, op in enumerate(msg.result_op) if op == loom._op_index("mul")][0]
    msg.result_position[i] = 1  # the only mul call claims position 1: position 0 is missing
    check_rejected(loom, msg, "positions|missing|wired for")
    msg = good_message(loom)
    msg.result_output[i] = 1
    check_rejected(loom, msg, "is output 1 of op 'mul', which has 1")
    msg = good_message(loom)
    del msg.wiring[0]
    check_rejected(loom, msg, "has no wiring")
    msg = good_message(loom)
    msg.wiring.add().CopyFrom(msg.wiring[0])
    check_rejected(loom, msg, "is wired twice")


def test_bad_constants(loom):
    msg = good_message(loom)
    c = msg.constants[0]
    c.tensor_content = c.tensor_content[:-8]
    check_rejected(loom, msg, "needs 24 bytes of content")
    msg = good_message(loom)
    msg.constants[0].dtype = 1  # float32 where the type shape is float64
    msg.constants[0].tensor_content = b"\0" * 12
    check_rejected(loom, msg, r"constants of TypeShape\(float64, \(3,\)\) are a")


def test_too_large(loom):
    msg = good_message(loom)
    msg.result_depth[0] = 1 << 19
    check_rejected(loom, msg, "has depth 524288 but a depth needs a result at every depth below it")
    msg = good_message(loom)
    msg.result_depth[0] = 1 << 25
    check_rejected(loom, msg, "has depth 33554432, beyond")
    small = vector_loom(max_depth=1)[0]
    check_rejected(small, good_message(small) if False else loom_pb2.WeaverMessage(
        loom_fingerprint=small.fingerprint, result_depth=[2], result_type_shape=[0], result_op=[0],
        result_output=[0], result_position=[0]), "beyond the loom's max_depth of 1")
