"""Mistakes a new user makes while weaving, each refused where it is made,
with a message that says what was wrong: a batch_input row out of range (the
weaver stays usable), a LoomOp whose __init__ skips super().__init__, a
schedule of the wrong kind; and ragged arguments given as the NumPy arrays
weaver.calls returns."""

import numpy as np
import pytest

import treadle as td

VEC = td.loom.TypeShape(td.float32, (2,), "vec")


class Add(td.loom.LoomOp):
    def __init__(self):
        super().__init__([VEC, VEC], [VEC])

    def instantiate_batch(self, inputs):
        return [inputs[0] + inputs[1]]


class Sum(td.loom.LoomOp):
    def __init__(self):
        super().__init__([td.loom.Ragged(VEC)], [VEC])

    def instantiate_batch(self, inputs):
        return [td.reduce_sum(inputs[0], axis=1)]


TABLE = np.arange(10, dtype=np.float32).reshape(5, 2)


@pytest.fixture(scope="module")
def loom():
    return td.loom.Loom(named_ops={"add": Add(), "sum": Sum()}, batch_inputs={VEC: td.Variable(TABLE)})


@pytest.mark.parametrize("row", [5, 99, -1])
def test_batch_input_row_out_of_range_is_refused_when_woven(loom, row):
    weaver = loom.make_weaver()
    if row < 0:
        with pytest.raises(TypeError, match="batch_idx must be a non-negative int, got -1"):
            weaver.batch_input(VEC, row)
    else:
        with pytest.raises(IndexError, match=rf"batch_input: row {row} is out of range for the batch input of "
                                             r"TypeShape\(dtype='float32', shape=\(2,\), tag='vec'\), which has 5 "
                                             r"rows"):
            weaver.batch_input(VEC, row)
    # Nothing was added: the same weaver still weaves and runs.
    assert weaver.num_results == 0
    last = weaver.batch_input(VEC, 4)
    weaver.add_output(weaver.add(last, last))
    np.testing.assert_array_equal(loom.output_tensor(VEC, weaver).numpy(), [2 * TABLE[4]])
    np.testing.assert_array_equal(loom.output_tensor(VEC, weaver).numpy(), [2 * TABLE[4]])  # and again


def test_ragged_arguments_take_the_arrays_weaver_calls_returns(loom):
    weaver = loom.make_weaver()
    rows = [weaver.batch_input(VEC, i) for i in range(3)]
    sums = weaver.calls("add", np.array([[rows[0], rows[1]], [rows[1], rows[2]]]))  # int32 array [2, 1]
    assert isinstance(sums, np.ndarray)
    weaver.add_output(weaver.sum(sums[:, 0]))
    weaver.add_output(weaver.op("sum", [sums[:, 0]])[0])
    want = (TABLE[0] + TABLE[1]) + (TABLE[1] + TABLE[2])
    np.testing.assert_array_equal(loom.output_tensor(VEC, weaver).numpy(), [want, want])


def test_a_loom_op_that_skips_super_init_is_named():
    class Forgetful(td.loom.LoomOp):
        def __init__(self):
            self.width = 2  # no super().__init__(...)

        def instantiate_batch(self, inputs):
            return inputs

    with pytest.raises(TypeError, match=r"named op 'f' \(Forgetful\) was not initialized as a LoomOp: its __init__ "
                                        r"must call super\(\).__init__\(input_type_shapes, output_type_shapes\)"):
        td.loom.Loom(named_ops={"f": Forgetful()})


def test_output_tensor_says_what_a_schedule_may_be(loom):
    with pytest.raises(TypeError, match="a loom schedule must be a Weaver, a td.loom.Schedule, serialized "
                                        "WeaverMessage bytes, or a list of those; element 0 of the list is a list"):
        loom.output_tensor(VEC, [[1, 2], 3])
