"""Python numbers beside tensors while tracing (`x * 0.5`): each graph converts
a literal once and keeps converting it exactly as convert_to_tensor does
(TensorFlow's rules: the dtype of the tensor beside it, or the literal's own)."""

import numpy as np
import pytest

import treadle as td


def _graph(fn, *args):
    return td.function(fn).get_concrete_function(*args).graph


def _consts(graph):
    return [op for op in graph.get_operations() if op.type == "Const"]


X32 = td.constant(np.array([[1.0, -2.0], [3.0, 0.5]], np.float32))
I32 = td.constant(np.array([1, -2, 3], np.int32))


def test_a_literal_repeated_in_a_trace_is_one_node():
    def f(x):
        for _ in range(20):
            x = td.tanh(x) * 0.5 + 0.1
        return x

    graph = _graph(f, X32)
    values = sorted(float(op.value.numpy()) for op in _consts(graph))
    assert values == pytest.approx([0.1, 0.5])
    expected = X32.numpy()
    for _ in range(20):
        expected = np.tanh(expected) * np.float32(0.5) + np.float32(0.1)
    np.testing.assert_allclose(td.function(f)(X32).numpy(), expected, rtol=1e-6)


def test_literals_take_the_dtype_of_the_tensor_beside_them():
    def f(x, i):
        return x * 2, 2 * x, i * 2, i + 2, x * 2.0

    graph = _graph(f, X32, I32)
    dtypes = sorted((op.outputs[0].dtype.name, float(op.value.numpy())) for op in _consts(graph))
    assert dtypes == [("float32", 2.0), ("int32", 2.0)]
    out = td.function(f)(X32, I32)
    np.testing.assert_array_equal(out[2].numpy(), I32.numpy() * 2)
    assert out[2].dtype == td.int32 and out[0].dtype == td.float32


def test_a_float_literal_beside_an_int_tensor_fails_as_in_tensorflow():
    # The literal converts on its own (float32), so the op sees two dtypes;
    # the same call with the same literal fails the same way the second time.
    def f(i):
        return i * 1.5

    for _ in range(2):
        with pytest.raises(TypeError):
            _graph(f, I32)


def test_zero_and_negative_zero_stay_distinct_constants():
    def f(x):
        return x * 0.0, x * -0.0

    pos, neg = td.function(f)(X32)
    assert not np.signbit(pos.numpy()[0, 0]) and np.signbit(neg.numpy()[0, 0])
    assert np.signbit(neg.numpy()[0, 1]) == False  # noqa: E712 (-2.0 * -0.0 is +0.0)


def test_equal_literals_of_different_types_are_not_confused():
    # 1 == 1.0 == True in Python; each converts by its own type.
    def f(x, i, b):
        return i + 1, x + 1.0, x + 1, b & True, b | False

    a, c, d, e, g = td.function(f)(X32, I32, td.constant([True, False]))
    assert (a.dtype, c.dtype, d.dtype, e.dtype) == (td.int32, td.float32, td.float32, td.bool)
    np.testing.assert_array_equal(a.numpy(), I32.numpy() + 1)
    np.testing.assert_array_equal(d.numpy(), X32.numpy() + 1)
    np.testing.assert_array_equal(e.numpy(), [True, False])
    np.testing.assert_array_equal(g.numpy(), [True, False])


def test_a_conversion_function_registered_for_numbers_is_used_while_tracing():
    class Number(float):
        pass

    seen = []

    def convert(value, dtype=None, name=None):
        seen.append(value)
        return td.constant(float(value) * 10, dtype=dtype or td.float32)

    td.register_tensor_conversion_function(Number, convert)

    def f(x):
        return x * Number(1.5), x * 1.5

    scaled, plain = td.function(f)(X32)
    assert seen  # a float subclass never takes the cached-literal path
    np.testing.assert_allclose(scaled.numpy(), X32.numpy() * 15, rtol=1e-6)
    np.testing.assert_allclose(plain.numpy(), X32.numpy() * 1.5, rtol=1e-6)


def test_a_conversion_function_for_python_floats_takes_them_over(monkeypatch):
    import numbers

    from treadle.framework import tensor as tensor_module
    # Registration is global: work on copies of the registry's state.
    monkeypatch.setattr(tensor_module, "_conversion_functions", list(tensor_module._conversion_functions))
    monkeypatch.setattr(tensor_module, "_literal_types", set(tensor_module._literal_types))

    def convert(value, dtype=None, name=None):
        return td.constant(float(value) + 100, dtype=dtype or td.float32)

    td.register_tensor_conversion_function(numbers.Real, convert)

    def f(x):
        return x * 1.5, x + 1

    scaled, shifted = td.function(f)(X32)
    np.testing.assert_allclose(scaled.numpy(), X32.numpy() * 101.5, rtol=1e-6)
    np.testing.assert_allclose(shifted.numpy(), X32.numpy() + 101, rtol=1e-6)
