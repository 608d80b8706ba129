"""Regression tests of the third reliability audit: the core items (buffers,
slicing, tensor protos). Each test is named test_itemNN_... after the audit's
item it checks."""

import threading

import numpy as np
import pytest

import treadle as td
from treadle import tensor_pb2
from treadle.framework import tensor_util


def _fail_an_allocation():
    # 2^39 float64 is 4 TiB: no allocator grants it, and the shape is within the op's limits.
    with pytest.raises(MemoryError):
        td.zeros([1 << 39], td.float64)


def _small_outputs_work():
    np.testing.assert_array_equal((td.constant([1.0, 2.0]) + 1.0).numpy(), [2.0, 3.0])
    np.testing.assert_array_equal(td.constant(7, td.int8).numpy(), 7)
    np.testing.assert_array_equal(td.zeros([8], td.float64).numpy(), np.zeros(8))  # exactly 64 bytes
    np.testing.assert_array_equal(td.zeros([0], td.float32).numpy(), np.zeros(0))


def test_item02_small_buffers_work_after_a_failed_allocation():
    for _ in range(3):
        _fail_an_allocation()
        _small_outputs_work()


def test_item02_other_threads_too():
    errors = []

    def body():
        try:
            _fail_an_allocation()
            _small_outputs_work()
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    t = threading.Thread(target=body)
    t.start()
    t.join()
    assert not errors, errors
    _small_outputs_work()


def test_item09_two_ellipsis_bits_are_refused_whatever_the_spec_length():
    t = td.zeros([2, 3])
    one = td.constant([0])
    for mask in (3, 5, 2 | (1 << 40)):
        with pytest.raises(td.errors.InvalidArgumentError, match="multiple ellipses"):
            td.raw_ops.StridedSlice(input=t, begin=one, end=one, strides=td.constant([1]), ellipsis_mask=mask)
    # One bit, past the spec's end or not, is still an ellipsis (TensorFlow accepts both).
    td.raw_ops.StridedSlice(input=t, begin=one, end=one, strides=td.constant([1]), ellipsis_mask=1)
    td.raw_ops.StridedSlice(input=t, begin=one, end=one, strides=td.constant([1]), ellipsis_mask=2)


def test_item22_string_tensor_with_tensor_content_names_it():
    proto = tensor_pb2.TensorProto()
    proto.dtype = td.string.as_datatype_enum
    proto.string_val.append(b"a")
    proto.tensor_content = b"xyz"
    with pytest.raises(td.errors.InvalidArgumentError, match="tensor_content") as e:
        tensor_util.make_ndarray(proto)
    assert "needs 1 string_val entries, got 1" not in str(e.value)


def test_item22_numeric_tensor_with_string_val_names_it():
    proto = tensor_pb2.TensorProto()
    proto.dtype = td.float32.as_datatype_enum
    proto.tensor_content = np.float32(1).tobytes()
    proto.string_val.append(b"a")
    with pytest.raises(td.errors.InvalidArgumentError, match="string_val"):
        tensor_util.make_ndarray(proto)
