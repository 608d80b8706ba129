"""Gradients through td.cond, td.while_loop, TensorArrays in loops and nested
td.function calls, against central differences: eagerly (Python control
flow), inside one td.function (If/While gradients), and through a call of a
td.function from an eager tape (the function graph differentiated into a
backward function); first and second order."""

import numpy as np
import pytest

import treadle as td

from .gradcheck import GradCheck, traced_op_types

rng = np.random.default_rng(7)


def u(*shape, low=-1.5, high=1.5):
    return rng.uniform(low, high, size=shape)


def cond_both(x, y):
    # Branches differ by the sign of sum(x); the check point makes each taken in turn below.
    return td.cond(td.reduce_sum(x) > 0.0, lambda: td.tanh(x) * y + x * x, lambda: x * y * y - td.exp(x))


def cond_one_branch_uses_y(x, y):
    return td.cond(td.reduce_sum(x) > 0.0, lambda: x * y, lambda: x * 3.0)


def cond_nested(x, y):
    def outer():
        return td.cond(td.reduce_sum(y) > 0.0, lambda: td.sigmoid(x * y), lambda: x - y)
    return td.cond(td.reduce_sum(x) > 0.0, outer, lambda: td.square(y) * x)


def cond_tuple_outputs(x, y):
    a, b = td.cond(td.reduce_sum(x) > 0.0, lambda: (x * y, y * 2.0), lambda: (x + y, td.exp(y)))
    return [a, b]


def while_simple(x, y):
    _, out = td.while_loop(lambda i, v: i < 4, lambda i, v: (i + 1, td.tanh(v) * y + x), [0, x])
    return out


def _effect():
    """Zero, from a stateful op: a branch or body using it has effects, so the
    node is If/While rather than StatelessIf/StatelessWhile."""
    return td.random.uniform([], dtype=td.float64) * 0.0


def cond_with_effects(x, y):
    return td.cond(td.reduce_sum(x) > 0.0, lambda: td.tanh(x) * y + _effect(), lambda: x * y)


def while_with_effects(x, y):
    _, out = td.while_loop(lambda i, v: i < 3, lambda i, v: (i + 1, td.tanh(v) * y + x + _effect()), [0, x])
    return out


def while_no_iteration(x, y):
    return td.while_loop(lambda i, v: i < 0, lambda i, v: (i + 1, v * y), [0, x])[1] * y


def while_captures_matmul(x, w):
    # w is captured (a loop-invariant loop variable); x is carried.
    _, out = td.while_loop(lambda i, v: i < 3, lambda i, v: (i + 1, td.tanh(td.matmul(v, w))), [0, x])
    return out


def while_two_vars(x, y):
    def body(i, a, b):
        return i + 1, a * td.sigmoid(b), b + td.tanh(a)
    _, a, b = td.while_loop(lambda i, a, b: i < 3, body, [0, x, y])
    return [a, b]


def while_data_dependent(x):
    # The number of iterations depends on the values (fixed near the check point).
    def body(v, n):
        return v * 1.5, n + 1
    out, _ = td.while_loop(lambda v, n: td.reduce_sum(td.abs(v)) < 20.0, body, [x, 0])
    return out


def while_max_iterations(x):
    return td.while_loop(lambda v: True, lambda v: td.tanh(v) * 1.1, [x], maximum_iterations=3)[0]


def while_with_cond_inside(x, y):
    def body(i, v):
        return i + 1, td.cond(i % 2 == 0, lambda: v * y, lambda: td.tanh(v) + y)
    return td.while_loop(lambda i, v: i < 4, body, [0, x])[1]


def while_nested(x):
    def inner(v):
        return td.while_loop(lambda j, w: j < 2, lambda j, w: (j + 1, td.tanh(w) * v), [0, v])[1]
    return td.while_loop(lambda i, v: i < 2, lambda i, v: (i + 1, inner(v)), [0, x])[1]


def tensor_array_write_in_loop(x):
    n = 4
    ta = td.TensorArray(td.float64, size=n, element_shape=[2])

    def body(i, v, ta):
        v = td.tanh(v) * 1.3
        return i + 1, v, ta.write(i, v * v)
    _, _, ta = td.while_loop(lambda i, v, ta: i < n, body, [0, x, ta])
    return ta.stack()


def tensor_array_read_in_loop(x, y):
    ta = td.TensorArray(td.float64, size=3).unstack(x)

    def body(i, acc):
        return i + 1, acc * td.tanh(ta.read(i)) + y
    return td.while_loop(lambda i, acc: i < 3, body, [0, y])[1]


def tensor_array_read_write_same(x):
    # Reads what the previous iteration wrote (a list used twice per iteration).
    ta = td.TensorArray(td.float64, size=4, element_shape=[2]).write(0, x)

    def body(i, ta):
        return i + 1, ta.write(i, td.tanh(ta.read(i - 1)) * 2.0)
    _, ta = td.while_loop(lambda i, ta: i < 4, body, [1, ta])
    return ta.stack()


@td.function
def _inner_fn(x, y):
    return td.tanh(x) * y, td.cond(td.reduce_sum(x) > 0.0, lambda: x * y, lambda: y)


@td.function
def _middle_fn(x, y):
    a, b = _inner_fn(x * 2.0, y)
    return a * b + _inner_fn(b, x)[0]


def nested_functions(x, y):
    return _middle_fn(x, y)


def nested_function_in_loop(x, y):
    return td.while_loop(lambda i, v: i < 2, lambda i, v: (i + 1, _inner_fn(v, y)[0]), [0, x])[1]


@td.function
def _function_with_loop(x, y):
    return while_simple(x, y) + cond_both(x, y)


def call_of_function_with_control_flow(x, y):
    return _function_with_loop(x, y)


POS = np.abs(u(3)) + 0.2
NEG = -POS
CASES = [
    ("cond taken true", cond_both, [POS, u(3)]),
    ("cond taken false", cond_both, [NEG, u(3)]),
    ("cond y in one branch (true)", cond_one_branch_uses_y, [POS, u(3)]),
    ("cond y in one branch (false)", cond_one_branch_uses_y, [NEG, u(3)]),
    ("cond nested", cond_nested, [POS, np.abs(u(3)) + 0.1]),
    ("cond nested other", cond_nested, [POS, -np.abs(u(3)) - 0.1]),
    ("cond tuple outputs", cond_tuple_outputs, [POS, u(3)]),
    ("while", while_simple, [u(3), u(3)]),
    ("while with no iteration", while_no_iteration, [u(3), u(3)]),
    ("while captured matmul", while_captures_matmul, [u(2, 3), u(3, 3)]),
    ("while two vars", while_two_vars, [u(3), u(3)]),
    ("while data dependent", while_data_dependent, [np.array([1.1, -2.3, 0.7])]),
    ("while maximum_iterations", while_max_iterations, [u(3)]),
    ("while with cond inside", while_with_cond_inside, [u(3), u(3)]),
    ("while nested", while_nested, [u(2)]),
    ("tensor array written in loop", tensor_array_write_in_loop, [u(2)]),
    ("tensor array read in loop", tensor_array_read_in_loop, [u(3), u()]),
    ("tensor array read and written", tensor_array_read_write_same, [u(2)]),
    ("nested td.function calls", nested_functions, [POS, u(3)]),
    ("td.function in loop", nested_function_in_loop, [u(3), u(3)]),
    ("call of td.function with loop and cond", call_of_function_with_control_flow, [POS, u(3)]),
    ("cond with effects", cond_with_effects, [POS, u(3)]),
    ("while with effects", while_with_effects, [u(3), u(3)]),
]
IDS = [c[0] for c in CASES]


@pytest.mark.parametrize("name,fn,inputs", CASES, ids=IDS)
def test_first_order_eager(name, fn, inputs):
    GradCheck(fn, inputs).check_first()


@pytest.mark.parametrize("name,fn,inputs", CASES, ids=IDS)
def test_first_order_in_function(name, fn, inputs):
    GradCheck(fn, inputs).check_first(in_function=True)


@pytest.mark.parametrize("name,fn,inputs", CASES, ids=IDS)
def test_first_order_through_function_call(name, fn, inputs):
    # The eager tape records one call; its gradient comes from the function graph.
    GradCheck(td.function(fn), inputs).check_first()


@pytest.mark.parametrize("name,fn,inputs", CASES, ids=IDS)
def test_second_order_eager(name, fn, inputs):
    GradCheck(fn, inputs).check_second()


@pytest.mark.parametrize("name,fn,inputs", CASES, ids=IDS)
def test_second_order_in_function(name, fn, inputs):
    GradCheck(fn, inputs).check_second(in_function=True)


@pytest.mark.parametrize("name,fn,inputs", CASES, ids=IDS)
def test_second_order_through_function_call(name, fn, inputs):
    GradCheck(td.function(fn), inputs).check_second()


def test_cases_build_if_and_while_ops():
    # As in TensorFlow: StatelessIf/StatelessWhile unless a branch or the body has effects.
    assert "StatelessIf" in traced_op_types(cond_both, [POS, u(3)])
    assert "If" in traced_op_types(cond_with_effects, [POS, u(3)])
    types = traced_op_types(while_simple, [u(3), u(3)])
    assert "StatelessWhile" in types and "TensorListSetItem" in types  # the loop collects what the gradient needs
    assert "While" in traced_op_types(while_with_effects, [u(3), u(3)])


def test_while_gradient_collects_per_iteration_values():
    """The forward While keeps what the backward loop needs: the gradient loop
    runs the iterations backwards (one While forward, one backward)."""
    x = td.constant(u(3))
    y = td.constant(u(3))

    @td.function
    def step(x, y):
        with td.GradientTape() as tape:
            tape.watch(x)
            out = while_simple(x, y)
        return tape.gradient(out, x)

    graph = step.get_concrete_function(x, y).graph
    whiles = [op for op in graph.operations if op.type in ("While", "StatelessWhile")]
    assert len(whiles) == 2
    forward = whiles[0]
    assert len(forward.outputs) > 2  # loop variables + iteration counter + collected values


# ---------------------------------------------------------------- variables read inside control flow

def _variable_loss_fns(w):
    def in_cond(x):
        return td.reduce_sum(td.cond(td.reduce_sum(x) > 0.0, lambda: td.tanh(x * w), lambda: x * 2.0))

    def in_loop(x):
        body = lambda i, v: (i + 1, td.tanh(v * w) + w)  # noqa: E731
        return td.reduce_sum(td.while_loop(lambda i, v: i < 3, body, [0, x])[1])

    def in_loop_cond(x):
        def body(i, v):
            return i + 1, td.cond(i % 2 == 0, lambda: v * w, lambda: td.sigmoid(v + w))
        return td.reduce_sum(td.while_loop(lambda i, v: i < 3, body, [0, x])[1])

    return {"cond": in_cond, "while": in_loop, "while with cond": in_loop_cond}


def _numeric_variable_gradient(loss, w, x, eps=1e-6):
    base = w.numpy()
    g = np.zeros_like(base)
    for idx in np.ndindex(base.shape):
        for sign in (1, -1):
            pert = base.copy()
            pert[idx] += sign * eps
            w.assign(pert)
            g[idx] += sign * float(loss(x).numpy()) / (2 * eps)
    w.assign(base)
    return g


@pytest.mark.parametrize("kind", ["cond", "while", "while with cond"])
@pytest.mark.parametrize("mode", ["eager", "function", "function call"])
def test_variable_read_inside_control_flow(kind, mode):
    w = td.Variable(u(3))
    loss = _variable_loss_fns(w)[kind]
    x = td.constant(np.abs(u(3)) + 0.1)

    def grad(x):
        with td.GradientTape() as tape:
            value = loss(x)
        return tape.gradient(value, w)

    if mode == "function":
        grad = td.function(grad)
    elif mode == "function call":
        traced = td.function(loss)

        def grad(x):  # noqa: F811 (the eager tape records one call of the traced loss)
            with td.GradientTape() as tape:
                value = traced(x)
            return tape.gradient(value, w)
    got = grad(x)
    np.testing.assert_allclose(got.numpy(), _numeric_variable_gradient(loss, w, x), rtol=1e-5, atol=1e-7)


def test_autograph_loops_and_branches_differentiate():
    """Python while/if on tensors, converted by AutoGraph into While/If, inside one td.function."""
    @td.function
    def grad(x):
        with td.GradientTape() as tape:
            tape.watch(x)
            y = x
            while td.reduce_sum(td.abs(y)) < 10.0:
                y = y * 1.5 + 0.1
            if td.reduce_sum(x) > 0:
                z = y * y
            else:
                z = y
            total = td.reduce_sum(z)
        return tape.gradient(total, x)

    def numeric(x, eps=1e-6):
        def f(x):
            y = x
            while np.abs(y).sum() < 10:
                y = y * 1.5 + 0.1
            return (y * y).sum() if x.sum() > 0 else y.sum()
        return np.array([(f(x + eps * e) - f(x - eps * e)) / (2 * eps) for e in np.eye(len(x))])

    for x in (np.array([1.0, 2.0]), np.array([-1.0, 0.5])):
        np.testing.assert_allclose(grad(td.constant(x)).numpy(), numeric(x), rtol=1e-6)
