"""td.Variable arguments of a td.function are traced as TensorFlow's
VariableSpec (dtype, shape, trainable); each call uses the variable passed."""

import numpy as np
import pytest

import treadle as td


def test_variables_of_one_dtype_and_shape_share_a_trace_and_each_is_updated():
    v1, v2, v3 = td.Variable(1.0), td.Variable(2.0), td.Variable(4, dtype=td.int32)

    @td.function
    def double(x):
        x.assign_add(x.read_value())

    double(v1)
    assert v1.numpy() == 2.0
    double(v2)
    assert double.experimental_get_tracing_count() == 1
    assert v2.numpy() == 4.0 and v1.numpy() == 2.0  # the variable passed, not the traced one
    double(v3)  # another dtype
    assert double.experimental_get_tracing_count() == 2
    assert v3.numpy() == 8


def test_trainability_is_part_of_the_trace_type():
    @td.function
    def read(x):
        return x.read_value()

    read(td.Variable(1.0))
    read(td.Variable(1.0, trainable=False))
    assert read.experimental_get_tracing_count() == 2


def test_concrete_function_of_a_variable_takes_any_like_variable():
    a, b = td.Variable([1.0, 2.0]), td.Variable([3.0, 4.0])

    @td.function
    def total(x):
        return td.reduce_sum(x)

    conc = total.get_concrete_function(a)
    assert repr(conc.structured_input_signature[0][0]) == \
        "VariableSpec(shape=(2,), dtype=td.float32, trainable=True)"
    assert conc(b).numpy() == 7.0
    with pytest.raises((TypeError, ValueError)):
        conc(td.Variable([1.0, 2.0, 3.0]))


def test_gradient_flows_to_the_variable_passed():
    w = td.Variable([1.0, 2.0])

    @td.function
    def square_sum(x):
        return td.reduce_sum(x * x)

    square_sum(td.Variable([0.0, 0.0]))  # traced with another variable
    with td.GradientTape() as tape:
        y = square_sum(w)
    np.testing.assert_allclose(tape.gradient(y, w).numpy(), [2.0, 4.0])


def test_nested_function_updates_the_outer_argument():
    v = td.Variable([1.0, 2.0])

    @td.function
    def inner(x):
        x.assign_add([2.0, 2.0])
        return x.read_value()

    @td.function
    def outer(x):
        x.assign_add([1.0, 1.0])
        return inner(x)

    np.testing.assert_allclose(outer(v).numpy(), [4.0, 5.0])
    np.testing.assert_allclose(v.numpy(), [4.0, 5.0])
