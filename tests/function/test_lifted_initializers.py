"""A td.Variable made on a td.function's first call may take its initial value
from the call's arguments: as TensorFlow lifts the initializer, the value is
computed by that call, and later calls use the variable as it is."""

import numpy as np
import pytest

import treadle as td


def test_initial_value_from_the_first_call_arguments():
    state = []

    @td.function
    def scaled(x):
        if not state:
            state.append(td.Variable(2.0 * x))
        return state[0] * x

    assert scaled(td.constant(1.0)).numpy() == 2.0
    assert scaled(td.constant(3.0)).numpy() == 6.0  # the variable keeps the first call's 2.0
    assert state[0].numpy() == 2.0


def test_a_method_variable_initialized_from_its_argument():
    class Accumulator:
        def __init__(self):
            self.total = None

        @td.function
        def add(self, x):
            if self.total is None:
                self.total = td.Variable(td.zeros_like(x) + x)
            else:
                self.total.assign_add(x)
            return self.total.read_value()

    acc = Accumulator()
    # As in TensorFlow: the first call runs the trace that made the variable
    # (the `if` branch); later calls the one made once it exists.
    np.testing.assert_allclose(acc.add(td.constant([1.0, 2.0])).numpy(), [1.0, 2.0])
    np.testing.assert_allclose(acc.add(td.constant([1.0, 1.0])).numpy(), [2.0, 3.0])


def test_the_first_call_runs_its_effects_once():
    counter = td.Variable(0)
    state = []

    @td.function
    def f(x):
        counter.assign_add(1)
        if not state:
            state.append(td.Variable(x + 1.0))
        return state[0].read_value()

    assert f(td.constant(4.0)).numpy() == 5.0
    assert counter.numpy() == 1  # TensorFlow's count too
    assert f(td.constant(9.0)).numpy() == 5.0 and counter.numpy() == 2


def test_get_concrete_function_cannot_compute_an_argument_dependent_initial_value():
    state = []

    @td.function
    def f(x):
        if not state:
            state.append(td.Variable(2.0 * x))
        return state[0] * x

    with pytest.raises(ValueError, match="cannot take its initial value from a tensor computed in that function"):
        f.get_concrete_function(td.TensorSpec([], td.float32))


def test_a_dtype_that_contradicts_the_traced_initial_value_is_refused():
    @td.function
    def f(x):
        return td.Variable(x, dtype=td.int32)

    with pytest.raises(ValueError, match="initial value of dtype float32 is not of the variable's dtype int32"):
        f(td.constant(1.0))
