"""td.SparseTensorSpec in an input_signature and in get_concrete_function,
as TensorFlow's: the spec is a TypeSpec; calls with a SparseTensor of the
spec run the one trace; mismatches say which component does not fit."""

import re

import numpy as np
import pytest

import treadle as td

SPEC = td.SparseTensorSpec([None, 4], td.float32)


def _sparse(indices, values, dense_shape):
    return td.SparseTensor(indices, values, dense_shape)


def _total(s):
    return td.sparse.reduce_sum(s)


def test_the_spec_is_a_type_spec_with_tensorflows_repr():
    assert isinstance(SPEC, td.TypeSpec)
    assert repr(SPEC) == "SparseTensorSpec(TensorShape([None, 4]), td.float32)"


def test_a_sparse_input_signature_traces_once_for_every_matching_call():
    f = td.function(_total, input_signature=[SPEC])
    assert f(_sparse([[0, 1], [2, 3]], [1.0, 2.0], [3, 4])).numpy() == 3.0
    assert f(_sparse([[5, 0]], [4.0], [6, 4])).numpy() == 4.0  # other rows and entries: same trace
    assert f.experimental_get_tracing_count() == 1
    concrete = f.get_concrete_function()
    assert concrete is f.get_concrete_function(SPEC)
    assert concrete is f.get_concrete_function(td.SparseTensorSpec([3, 4], td.float32))  # a subtype
    assert concrete.structured_input_signature == ((SPEC,), {})


def test_get_concrete_function_of_a_spec_then_called_with_a_sparse_tensor():
    f = td.function(_total)
    concrete = f.get_concrete_function(SPEC)
    assert concrete.structured_input_signature == ((SPEC,), {})
    assert concrete(_sparse([[0, 1], [2, 3]], [1.0, 2.0], [3, 4])).numpy() == 3.0
    assert f(_sparse([[1, 1]], [5.0], [2, 4])).numpy() == 5.0
    assert f.experimental_get_tracing_count() == 1


def test_nested_and_var_positional_signatures():
    @td.function(input_signature=[{"a": SPEC, "b": td.TensorSpec([], td.float32)}])
    def in_dict(x):
        return td.sparse.reduce_sum(x["a"]) + x["b"]

    @td.function(input_signature=[SPEC, SPEC])
    def many(*args):
        return td.sparse.reduce_sum(args[0]) + td.sparse.reduce_sum(args[1])

    sp = _sparse([[0, 1], [2, 3]], [1.0, 2.0], [3, 4])
    assert in_dict({"a": sp, "b": td.constant(1.0)}).numpy() == 4.0
    assert many(sp, sp).numpy() == 6.0


def test_the_traced_function_sees_the_specs_static_shape():
    @td.function(input_signature=[SPEC])
    def dense(s):
        assert s.shape.as_list() == [None, 4] and s.dtype == td.float32
        return td.sparse.to_dense(s)

    np.testing.assert_array_equal(dense(_sparse([[0, 1]], [2.0], [2, 4])).numpy(), [[0, 2, 0, 0], [0, 0, 0, 0]])


def _binding_error(name, reason):
    return re.escape(f"Binding inputs to td.function `{name}` failed due to `{reason}`")


@pytest.mark.parametrize("through", ["signature", "concrete function"])
def test_mismatches_name_the_component_that_does_not_fit(through):
    if through == "signature":
        call, name = td.function(_total, input_signature=[SPEC]), "_total"
    else:
        call, name = td.function(_total).get_concrete_function(SPEC), "_total"
    with pytest.raises(TypeError, match=_binding_error(
            name, "Can not cast TensorSpec(shape=(1,), dtype=td.int32, name=None) to "
                  "TensorSpec(shape=(None,), dtype=td.float32, name=None)")):
        call(_sparse([[0, 1]], [1], [3, 4]))  # int32 values
    with pytest.raises(TypeError, match=_binding_error(
            name, "Can not cast TensorSpec(shape=(1, 3), dtype=td.int64, name=None) to "
                  "TensorSpec(shape=(None, 2), dtype=td.int64, name=None)")):
        call(_sparse([[0, 1, 1]], [1.0], [3, 4, 5]))  # rank 3
    with pytest.raises(TypeError, match=_binding_error(
            name, "Can not cast SparseTensorSpec(TensorShape([3, 5]), td.float32) to "
                  "SparseTensorSpec(TensorShape([None, 4]), td.float32)")):
        call(_sparse([[0, 1]], [1.0], [3, 5]))  # a known dense shape the spec rules out
    with pytest.raises(TypeError, match="(?s)Can not cast <td.Tensor.* to SparseTensorSpec"):
        call(td.constant([[1.0, 2.0, 3.0, 4.0]]))


def test_get_concrete_function_with_another_spec_is_refused():
    f = td.function(_total, input_signature=[SPEC])
    with pytest.raises(TypeError, match=_binding_error(
            "_total", "Can not cast SparseTensorSpec(TensorShape([None, 4]), td.int32) to "
                      "SparseTensorSpec(TensorShape([None, 4]), td.float32)")):
        f.get_concrete_function(td.SparseTensorSpec([None, 4], td.int32))
    with pytest.raises(TypeError, match=_binding_error(
            "_total", "Can not cast SparseTensorSpec(TensorShape(None), td.float32) to "
                      "SparseTensorSpec(TensorShape([None, 4]), td.float32)")):
        f.get_concrete_function(td.SparseTensorSpec(None, td.float32))
