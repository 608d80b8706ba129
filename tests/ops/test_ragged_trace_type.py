"""A td.RaggedTensor argument of a td.function traces once per spec (dtype,
ragged rank, row-splits dtype, number of rows, inner shape of its flat
values, as TensorFlow's RaggedTensorSpec), not once per object, and reaches
the function as its components."""

import numpy as np
import pytest

import treadle as td
from treadle.ragged.ragged_tensor import RaggedTensorType


def rt(rows, dtype=np.float32, splits_dtype=td.int64):
    values = np.concatenate([np.asarray(r, dtype=dtype).reshape(-1, *np.shape(r)[1:]) for r in rows]) \
        if rows else np.zeros((0,), dtype)
    lengths = [len(r) for r in rows]
    return td.RaggedTensor.from_row_lengths(values, td.constant(lengths, dtype=splits_dtype))


def test_no_retrace_across_ragged_tensors_of_one_spec():
    calls = []

    @td.function
    def row_sums(x):
        calls.append(1)
        return td.reduce_sum(x, axis=1)

    for rows in ([[1.0, 2.0], [3.0]], [[4.0], [5.0, 6.0, 7.0]], [[8.0, 9.0], []]):
        got = row_sums(rt(rows))
        np.testing.assert_allclose(got.numpy(), [sum(r) for r in rows])
    assert len(calls) == 1 and row_sums.experimental_get_tracing_count() == 1


def test_retrace_on_another_dtype_or_inner_shape():
    @td.function
    def total(x):
        return td.reduce_sum(x.flat_values)

    total(rt([[1.0], [2.0, 3.0]]))
    total(rt([[1.0, 2.0], []]))
    assert total.experimental_get_tracing_count() == 1
    assert total(rt([[1, 2], [3]], dtype=np.int32)).numpy() == 6
    assert total.experimental_get_tracing_count() == 2
    assert total(rt([[[1.0, 2.0]], [[3.0, 4.0], [5.0, 6.0]]])).numpy() == 21.0  # flat values of shape [3, 2]
    assert total.experimental_get_tracing_count() == 3
    total(rt([[1.0]], splits_dtype=td.int32))
    assert total.experimental_get_tracing_count() == 4


def test_the_function_sees_a_ragged_tensor_of_its_components():
    @td.function
    def describe(x):
        assert isinstance(x, td.RaggedTensor)
        return x.row_lengths(), x.to_tensor(default_value=-1.0)

    lengths, dense = describe(rt([[1.0, 2.0], [], [3.0]]))
    np.testing.assert_array_equal(lengths.numpy(), [2, 0, 1])
    np.testing.assert_array_equal(dense.numpy(), [[1.0, 2.0], [-1.0, -1.0], [3.0, -1.0]])
    lengths, dense = describe(rt([[4.0], [5.0, 6.0, 7.0], []]))
    np.testing.assert_array_equal(dense.numpy(), [[4.0, -1.0, -1.0], [5.0, 6.0, 7.0], [-1.0, -1.0, -1.0]])
    assert describe.experimental_get_tracing_count() == 1


def test_gradients_reach_the_values_through_the_argument():
    values = td.Variable(np.array([1.0, 2.0, 3.0], dtype=np.float32))

    @td.function
    def grad(splits):
        with td.GradientTape() as tape:
            x = td.RaggedTensor.from_row_splits(values, splits)
            loss = td.reduce_sum(td.reduce_sum(x, axis=1) ** 2)
        return tape.gradient(loss, values)

    np.testing.assert_allclose(grad(td.constant([0, 2, 3], dtype=td.int64)).numpy(), [6.0, 6.0, 6.0])


def test_trace_type_rules():
    a = RaggedTensorType(td.float32, [5, 2])
    assert a == RaggedTensorType(td.float32, [9, 2]) and hash(a) == hash(RaggedTensorType(td.float32, [None, 2]))
    assert a != RaggedTensorType(td.float64, [5, 2]) and a != RaggedTensorType(td.float32, [5, 3])
    general = RaggedTensorType(td.float32, [None, None])
    assert a.is_subtype_of(general) and not general.is_subtype_of(a)
    assert a.most_specific_common_supertype([RaggedTensorType(td.float32, [1, 3])]) == general
    assert a.most_specific_common_supertype([RaggedTensorType(td.int32, [1, 2])]) is None
    assert "ragged_rank=1" in repr(a)
    with pytest.raises(ValueError, match="rank >= 1"):
        RaggedTensorType(td.float32, [])
