"""Gradients of td.function calls: the recorded call runs the forward
function once (its intermediates are extra outputs, nothing is recomputed),
and backward_function(concrete_fn), the library form of a function's
backward pass."""

import numpy as np
import pytest

import treadle as td
from treadle import _core
from treadle.autodiff import backward_function, function_gradient

rng = np.random.default_rng(5)


def test_recorded_call_runs_the_forward_once():
    calls = []

    def count(x):
        calls.append(1)
        return x

    @td.function
    def f(x):
        y = td.py_function(count, [x], td.float32)
        y.set_shape(x.shape)
        return td.tanh(x) * td.exp(y)

    x = td.constant([0.5, -1.0])
    f(x)
    calls.clear()
    with td.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    g = tape.gradient(y, x)
    assert len(calls) == 1  # the gradient used the forward run's intermediates
    t = np.tanh([0.5, -1.0])
    np.testing.assert_allclose(g.numpy(), (1 - t * t) * np.exp([0.5, -1.0]), rtol=1e-5)


def test_forward_function_outputs_intermediates():
    @td.function
    def f(x, y):
        return td.reduce_sum(td.tanh(x) * y)

    concrete = f.get_concrete_function(td.TensorSpec([3]), td.TensorSpec([3]))
    info = function_gradient(concrete)
    assert len(info.forward.outputs) == 1 + len(info.hidden) and info.hidden
    assert info.forward.graph is concrete.graph  # the same graph, more outputs


def test_backward_function_signature_and_values():
    w = td.Variable(rng.normal(size=(3, 2)).astype(np.float32))

    @td.function
    def f(x, n):
        h = td.tanh(td.matmul(x, w))
        return td.reduce_sum(h * h), td.cast(n, td.float32) * x, n + 1

    concrete = f.get_concrete_function(td.TensorSpec([4, 3]), td.TensorSpec([], td.int32))
    bwd = backward_function(concrete)
    assert bwd is backward_function(concrete)  # cached
    # inputs: x, n, the captured variable handle; then dy for the two float outputs
    assert [t.dtype for t in bwd.graph.inputs] == [td.float32, td.int32, td.resource, td.float32, td.float32]
    assert bwd.output_gradient_indices == [0, 1]
    assert bwd.input_gradient_indices == [0, 2]  # x and the variable; not the integer n
    x = td.constant(rng.normal(size=(4, 3)).astype(np.float32))
    n = td.constant(3)
    dy0, dy1 = td.constant(1.5), td.constant(rng.normal(size=(4, 3)).astype(np.float32))
    gx, gw = bwd(x, n, w.handle, dy0, dy1)
    with td.GradientTape(persistent=True) as tape:
        tape.watch(x)
        a, b, _ = f(x, n)
    ex, ew = tape.gradient([a, b], [x, w], output_gradients=[dy0, dy1])
    np.testing.assert_allclose(gx.numpy(), ex.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(gw.numpy(), ew.numpy(), rtol=1e-5, atol=1e-6)
    # The same function from its serialized library, run by the C++ executor.
    exe = _core.Executable.from_function(bwd.library_graph_def().SerializeToString(), bwd.name)
    gx2, gw2 = exe.run([x, n, w.handle, dy0, dy1])
    np.testing.assert_allclose(gx2.numpy(), gx.numpy())
    np.testing.assert_allclose(gw2.numpy(), gw.numpy())


def test_backward_function_of_a_loop():
    @td.function
    def f(x):
        return td.while_loop(lambda i, v: i < 3, lambda i, v: (i + 1, td.sin(v) if hasattr(td, "sin") else
                                                               td.tanh(v) * 2.0), [0, x])[1]

    concrete = f.get_concrete_function(td.TensorSpec([None], td.float64))
    bwd = backward_function(concrete)
    x = td.constant(rng.normal(size=5))
    (g,) = bwd(x, td.ones_like(x))
    v = x.numpy()
    d = np.ones_like(v)
    for _ in range(3):
        d = d * 2.0 * (1 - np.tanh(v) ** 2)
        v = np.tanh(v) * 2.0
    np.testing.assert_allclose(g.numpy(), d, rtol=1e-10)


def test_backward_function_with_no_connected_input():
    @td.function
    def f(n):
        return td.cast(n, td.float32) * 2.0

    bwd = backward_function(f.get_concrete_function(td.TensorSpec([], td.int32)))
    assert bwd.input_gradient_indices == []
    assert bwd(td.constant(3), td.constant(1.0)) == []


def test_gradient_of_function_with_non_differentiable_op_raises_lookup_error():
    from treadle.autodiff import registry
    registry._RULES.pop("Tanh")
    try:
        @td.function
        def f(x):
            return td.tanh(x)
        x = td.constant(1.0)
        with td.GradientTape() as tape:
            tape.watch(x)
            y = f(x)
        with pytest.raises(LookupError, match="No gradient defined for operation of type 'Tanh'"):
            tape.gradient(y, x)
    finally:
        from treadle.autodiff import math_grad
        registry._RULES["Tanh"] = math_grad._tanh_grad
