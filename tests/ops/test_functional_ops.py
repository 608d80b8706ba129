"""map_fn, scan, foldl/foldr, switch_case, case, control_dependencies, group
and td.debugging (issue 17), eagerly and in functions, against NumPy and
TensorFlow's documented results."""

import numpy as np
import pytest

import treadle as td


def both(fn, *args):
    eager = fn(*args)
    traced = td.function(fn)(*args)
    np.testing.assert_allclose(np.asarray(traced), np.asarray(eager), rtol=1e-6)
    return np.asarray(eager)


def test_map_fn():
    x = td.constant(np.arange(6, dtype=np.float32).reshape(3, 2))
    np.testing.assert_allclose(both(lambda e: td.map_fn(lambda r: r * r, e), x), x.numpy() ** 2)
    sums = both(lambda e: td.map_fn(lambda r: td.reduce_sum(r), e, fn_output_signature=td.float32), x)
    np.testing.assert_allclose(sums, x.numpy().sum(1))
    a, b = td.map_fn(lambda p: (p[0] + p[1], p[0] * p[1]), (td.constant([1, 2]), td.constant([3, 4])))
    assert a.numpy().tolist() == [4, 6] and b.numpy().tolist() == [3, 8]
    ints = td.map_fn(lambda r: td.argmax(r, output_type=td.int32), x, fn_output_signature=td.TensorSpec([], td.int32))
    assert ints.numpy().tolist() == [1, 1, 1]
    np.testing.assert_allclose(td.vectorized_map(lambda r: r + 1.0, x).numpy(), x.numpy() + 1)
    with pytest.raises(ValueError, match="rank >= 1"):
        td.map_fn(lambda r: r, td.constant(1.0))


def test_map_fn_gradient():
    x = td.constant([1.0, 2.0, 3.0])
    with td.GradientTape() as tape:
        tape.watch(x)
        y = td.reduce_sum(td.map_fn(lambda v: v * v * v, x))
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), 3 * x.numpy() ** 2)

    @td.function
    def grad(v):
        with td.GradientTape() as tape:
            tape.watch(v)
            y = td.reduce_sum(td.map_fn(td.tanh, v))
        return tape.gradient(y, v)

    np.testing.assert_allclose(grad(x).numpy(), 1 - np.tanh(x.numpy()) ** 2, rtol=1e-5)


def test_scan_and_folds():
    e = td.constant([1, 2, 3, 4])
    assert both(lambda v: td.scan(lambda a, x: a + x, v), e).tolist() == np.cumsum([1, 2, 3, 4]).tolist()
    assert both(lambda v: td.scan(lambda a, x: a + x, v, initializer=td.constant(10), reverse=True), e).tolist() \
        == [20, 19, 17, 14]
    assert both(lambda v: td.foldl(lambda a, x: a - x, v), e).tolist() == 1 - 2 - 3 - 4
    assert both(lambda v: td.foldr(lambda a, x: a - x, v), e).tolist() == ((4 - 3) - 2) - 1
    # TF's documented Fibonacci scan: a structure as accumulator.
    fib = td.scan(lambda a, _: (a[1], a[0] + a[1]), td.constant([1, 1, 1, 1, 1]),
                  initializer=(td.constant(0), td.constant(1)))
    assert fib[0].numpy().tolist() == [1, 1, 2, 3, 5]
    with pytest.raises(TypeError, match="structure of the accumulator"):
        td.scan(lambda a, x: (a, a), e)


def test_switch_case_and_case():
    def pick(i):
        return td.switch_case(i, [lambda: td.constant(10), lambda: td.constant(20), lambda: td.constant(30)])

    assert [int(both(pick, td.constant(k))) for k in (0, 1, 2, 7)] == [10, 20, 30, 30]  # out of range: last
    f = td.function(lambda i: td.switch_case(i, {1: lambda: td.constant(1.0), 4: lambda: td.constant(4.0)},
                                             default=lambda: td.constant(-1.0)))
    assert [float(f(td.constant(k))) for k in (1, 4, 2)] == [1.0, 4.0, -1.0]

    def which(x):
        return td.case([(x < 0, lambda: td.constant(-1)), (x > 0, lambda: td.constant(1))],
                       default=lambda: td.constant(0))

    assert [int(both(which, td.constant(v))) for v in (-5, 0, 5)] == [-1, 0, 1]
    no_default = td.function(lambda x: td.case([(x < 0, lambda: td.constant(-1)), (x > 0, lambda: td.constant(1))]))
    assert int(no_default(td.constant(3))) == 1
    with pytest.raises(td.errors.InvalidArgumentError, match="no predicate is true"):
        no_default(td.constant(0))
    with pytest.raises(td.errors.InvalidArgumentError, match="exclusive"):
        td.case([(td.constant(True), lambda: td.constant(1)), (td.constant(True), lambda: td.constant(2))],
                 default=lambda: td.constant(0), exclusive=True)


def test_control_dependencies_and_group(capfd):
    v = td.Variable(1.0)

    @td.function
    def f(x):
        update = v.assign_add(x)
        with td.control_dependencies([update]):
            y = td.identity(x) * 2.0
        g = td.group(update, y)
        return y, g is not None

    y, has_group = f(td.constant(3.0))
    assert y.numpy() == 6.0 and bool(has_group) and v.numpy() == 4.0
    graph = f.get_concrete_function(td.constant(3.0)).graph
    ident = next(op for op in graph.operations if op.type == "Identity" and op.inputs and op.inputs[0].op.type ==
                 "Placeholder")
    assert any(c.type.startswith("AssignAdd") for c in ident.control_inputs)
    assert any(op.type == "NoOp" for op in graph.operations)
    with td.control_dependencies([td.constant(1.0)]):  # eagerly: nothing to order
        assert td.group(td.constant(1.0)) is None


def test_debugging_asserts():
    td.debugging.assert_equal(td.constant([1, 2]), [1, 2])
    with pytest.raises(td.errors.InvalidArgumentError, match="x == y did not hold"):
        td.debugging.assert_equal(td.constant([1, 2]), [1, 3], message="values differ")
    td.debugging.assert_less(td.constant([1, 2]), 3)
    with pytest.raises(td.errors.InvalidArgumentError, match="values must be small"):
        td.debugging.assert_less(td.constant([1, 5]), 3, message="values must be small")
    with pytest.raises(ValueError, match="must have rank 2"):
        td.debugging.assert_rank(td.constant([1, 2]), 2)

    @td.function
    def checked(x):
        td.debugging.assert_rank(x, 1)
        td.Assert(td.reduce_all(x >= 0.0), ["x must not be negative:", x])
        return td.debugging.check_numerics(td.math.log(x), "log of x")

    f = checked.get_concrete_function(td.TensorSpec(None, td.float32))
    assert f(td.constant([1.0])).numpy().tolist() == [0.0]
    with pytest.raises(td.errors.InvalidArgumentError, match="must have rank"):
        f(td.constant([[1.0]]))
    with pytest.raises(td.errors.InvalidArgumentError, match="x must not be negative"):
        f(td.constant([-1.0]))
    with pytest.raises(td.errors.InvalidArgumentError, match="log of x : Tensor had Inf"):
        checked(td.constant([0.0]))


def test_enable_check_numerics():
    td.debugging.enable_check_numerics()
    try:
        with pytest.raises(td.errors.InvalidArgumentError, match="Detected Infinity or NaN.*RealDiv"):
            td.constant([1.0]) / td.constant([0.0])
        f = td.function(lambda x: td.math.log(x) * 2.0)
        with pytest.raises(td.errors.InvalidArgumentError, match="Log"):
            f(td.constant([0.0]))
        assert f(td.constant([1.0])).numpy().tolist() == [0.0]
    finally:
        td.debugging.disable_check_numerics()
    assert np.isinf((td.constant([1.0]) / td.constant([0.0])).numpy()).all()
