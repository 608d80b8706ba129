"""td.RaggedTensorSpec in input_signature and get_concrete_function, as
TensorFlow's RaggedTensorSpec (a TypeSpec)."""

import numpy as np
import pytest

import treadle as td


def test_ragged_spec_is_a_type_spec():
    spec = td.RaggedTensorSpec([None, None], td.int32)
    assert isinstance(spec, td.TypeSpec)
    assert spec.value_type is td.RaggedTensor


def test_input_signature_with_a_ragged_spec_traces_once_for_any_rows():
    @td.function(input_signature=[td.RaggedTensorSpec([None, None], td.int32)])
    def row_sums(x):
        return td.reduce_sum(x, axis=1)

    np.testing.assert_array_equal(row_sums(td.ragged.constant([[1, 2], [3]], dtype=td.int32)).numpy(), [3, 3])
    np.testing.assert_array_equal(row_sums(td.ragged.constant([[5], [6, 7, 8], []], dtype=td.int32)).numpy(),
                                  [5, 21, 0])
    assert row_sums.experimental_get_tracing_count() == 1


def test_input_signature_refuses_another_dtype():
    @td.function(input_signature=[td.RaggedTensorSpec([None, None], td.int32)])
    def identity(x):
        return x

    with pytest.raises(TypeError, match="Can not cast"):
        identity(td.ragged.constant([[1.0]]))


def test_two_ragged_dimensions_in_a_signature():
    @td.function(input_signature=[td.RaggedTensorSpec([None, None, None], td.int32)])
    def values(x):
        return x.flat_values

    rt = td.RaggedTensor.from_nested_row_lengths(td.constant([1, 2, 3, 4, 5], td.int32), [[2, 1], [1, 2, 2]])
    np.testing.assert_array_equal(values(rt).numpy(), [1, 2, 3, 4, 5])


def test_get_concrete_function_of_a_ragged_spec():
    spec = td.RaggedTensorSpec([None, None], td.float32)

    @td.function
    def row_sums(x):
        return td.reduce_sum(x, axis=1)

    conc = row_sums.get_concrete_function(spec)
    assert conc.structured_input_signature[0][0] == spec
    np.testing.assert_allclose(conc(td.ragged.constant([[1.0, 2.0], [3.0]])).numpy(), [3.0, 3.0])
    # the spec of the function's own signature, too
    signed = td.function(row_sums.python_function, input_signature=[spec])
    assert signed.get_concrete_function(spec) is signed.get_concrete_function()


def test_the_number_of_rows_keys_a_ragged_argument_trace():
    # TensorFlow's RaggedTensorSpec of a value has shape [nrows, None, ...]:
    # another number of rows (or ragged rank) traces again, new values do not.
    @td.function
    def identity(x):
        return x

    for i in range(3):
        identity(td.ragged.constant([[1, 2], [i]]))
        identity(td.ragged.constant([[1, 2], [], [3, 4, 5]]))
        identity(td.ragged.constant([[[1, 2], [3]], [[4, 5, 6]]]))
    assert identity.experimental_get_tracing_count() == 3


def test_reduce_retracing_relaxes_the_number_of_rows():
    @td.function(reduce_retracing=True)
    def nrows(x):
        return x.nrows()

    assert [nrows(td.ragged.constant([[1]] * n)).numpy() for n in (2, 3, 5)] == [2, 3, 5]
    assert nrows.experimental_get_tracing_count() == 2


def test_a_spec_with_rows_accepts_only_that_many():
    @td.function(input_signature=[td.RaggedTensorSpec([2, None], td.int32)])
    def identity(x):
        return x.flat_values

    np.testing.assert_array_equal(identity(td.ragged.constant([[1], [2, 3]], dtype=td.int32)).numpy(), [1, 2, 3])
    with pytest.raises(TypeError, match="Can not cast"):
        identity(td.ragged.constant([[1], [2], [3]], dtype=td.int32))


def test_a_misfit_names_the_component_that_does_not_fit():
    # TensorFlow: "Binding inputs ... failed ... dtype=tf.float32 ... to ... dtype=tf.int32"
    @td.function(input_signature=[td.RaggedTensorSpec([None, None], td.int32)])
    def identity(x):
        return x

    with pytest.raises(TypeError, match=r"Can not cast TensorSpec\(shape=\(1,\), dtype=td.float32, name=None\) "
                                        r"to TensorSpec\(shape=\(None,\), dtype=td.int32, name=None\)"):
        identity(td.ragged.constant([[1.0]]))
