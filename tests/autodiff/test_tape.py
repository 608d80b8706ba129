"""td.GradientTape's rules, eagerly and inside td.function: watching,
persistence, accessed variables, unconnected and integer sources, nested
structures, output gradients, nested tapes, function calls."""

import numpy as np
import pytest

import treadle as td


def assert_close(t, expected, rtol=1e-6):
    assert t is not None
    np.testing.assert_allclose(np.asarray(t), expected, rtol=rtol, atol=1e-7)


MODES = ["eager", "function"]


def run(mode, fn, *args):
    return td.function(fn)(*args) if mode == "function" else fn(*args)


def test_seed_example_variable_through_function_call():
    v = td.Variable(1.0)

    @td.function
    def add(a, b):
        return a + b

    with td.GradientTape() as tape:
        result = add(v, 1.0)
    assert_close(tape.gradient(result, v), 1.0)


@pytest.mark.parametrize("mode", MODES)
def test_watch_and_gradient(mode):
    def fn(x):
        with td.GradientTape() as tape:
            tape.watch(x)
            y = x * x * x
        return tape.gradient(y, x)
    assert_close(run(mode, fn, td.constant([1.0, 2.0])), [3.0, 12.0])


@pytest.mark.parametrize("mode", MODES)
def test_unwatched_constant_gives_none(mode):
    def fn(x):
        with td.GradientTape() as tape:
            y = x * 2.0
        g = tape.gradient(y, x)
        return td.constant(g is None)
    assert bool(run(mode, fn, td.constant([1.0])))


def test_non_persistent_tape_second_call_raises():
    x = td.constant(3.0)
    with td.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    tape.gradient(y, x)
    with pytest.raises(RuntimeError, match="non-persistent GradientTape can only be used to compute one set"):
        tape.gradient(y, x)


def test_non_persistent_second_call_raises_while_tracing():
    @td.function
    def fn(x):
        with td.GradientTape() as tape:
            tape.watch(x)
            y = x * x
        tape.gradient(y, x)
        return tape.gradient(y, x)
    with pytest.raises(RuntimeError, match="non-persistent"):
        fn(td.constant(1.0))


@pytest.mark.parametrize("mode", MODES)
def test_persistent_tape(mode):
    def fn(x):
        with td.GradientTape(persistent=True) as tape:
            tape.watch(x)
            y = x * x
            z = y * y
        return tape.gradient(z, x), tape.gradient(y, x), tape.gradient(z, y)
    dz_dx, dy_dx, dz_dy = run(mode, fn, td.constant(3.0))
    assert_close(dz_dx, 108.0)
    assert_close(dy_dx, 6.0)
    assert_close(dz_dy, 18.0)


@pytest.mark.parametrize("mode", MODES)
def test_trainable_variables_are_watched_when_read(mode):
    w = td.Variable([1.0, 2.0])
    frozen = td.Variable([5.0, 5.0], trainable=False)

    def fn():
        with td.GradientTape() as tape:
            y = td.reduce_sum(w * frozen * w)
        gw, gf = tape.gradient(y, [w, frozen])
        return gw, td.constant(gf is None)
    gw, frozen_is_none = run(mode, fn)
    assert_close(gw, [10.0, 20.0])
    assert bool(frozen_is_none)


@pytest.mark.parametrize("mode", MODES)
def test_watch_accessed_variables_false(mode):
    a = td.Variable(2.0)
    b = td.Variable(3.0)

    def fn():
        with td.GradientTape(watch_accessed_variables=False) as tape:
            tape.watch(b)
            y = a * b
        ga, gb = tape.gradient(y, [a, b])
        return td.constant(ga is None), gb
    a_none, gb = run(mode, fn)
    assert bool(a_none)
    assert_close(gb, 2.0)


def test_watched_variables_and_reset():
    a, b = td.Variable(1.0), td.Variable(2.0)
    with td.GradientTape(persistent=True) as tape:
        _ = a * 2.0
        _ = b + a
    assert tape.watched_variables() == (a, b)
    tape.reset()
    assert tape.watched_variables() == ()


@pytest.mark.parametrize("mode", MODES)
def test_unconnected_none_and_zero(mode):
    w = td.Variable([1.0, 1.0])

    def fn(x, z):
        with td.GradientTape(persistent=True) as tape:
            tape.watch([x, z])
            y = x * 3.0
        none_x, none_z, none_w = tape.gradient(y, [x, z, w])
        gx, gz, gw = tape.gradient(y, [x, z, w], unconnected_gradients=td.UnconnectedGradients.ZERO)
        return td.constant([none_z is None, none_w is None]), gx, gz, gw
    flags, gx, gz, gw = run(mode, fn, td.constant(2.0), td.constant([4.0, 5.0]))
    assert list(np.asarray(flags)) == [True, True]
    assert_close(gx, 3.0)
    assert_close(gz, [0.0, 0.0])
    assert_close(gw, [0.0, 0.0])


def test_unknown_unconnected_option():
    x = td.constant(1.0)
    with td.GradientTape() as tape:
        tape.watch(x)
        y = x * 2.0
    with pytest.raises(ValueError, match="unconnected_gradients"):
        tape.gradient(y, x, unconnected_gradients="ones")


@pytest.mark.parametrize("mode", MODES)
def test_nested_structures_of_sources_and_targets(mode):
    a = td.Variable(2.0)

    def fn(x, y):
        with td.GradientTape() as tape:
            tape.watch([x, y])
            t1 = x * y
            t2 = a * x
        return tape.gradient({"first": t1, "second": [t2]}, {"x": x, "pair": (y, [a])})
    grads = run(mode, fn, td.constant(3.0), td.constant(5.0))
    assert set(grads) == {"x", "pair"}
    assert_close(grads["x"], 5.0 + 2.0)
    assert_close(grads["pair"][0], 3.0)
    assert_close(grads["pair"][1][0], 3.0)


@pytest.mark.parametrize("mode", MODES)
def test_integer_sources_give_none(mode):
    def fn(i, x):
        with td.GradientTape() as tape:
            tape.watch([i, x])
            y = td.cast(i, td.float32) * x
        gi, gx = tape.gradient(y, [i, x])
        return td.constant(gi is None), gx
    i_none, gx = run(mode, fn, td.constant(3), td.constant(2.0))
    assert bool(i_none)
    assert_close(gx, 3.0)


@pytest.mark.parametrize("mode", MODES)
def test_integer_paths_stop_gradients(mode):
    def fn(x):
        with td.GradientTape() as tape:
            tape.watch(x)
            idx = td.argmax(x)
            y = td.cast(idx, td.float32) * td.reduce_sum(x)
        return tape.gradient(y, x)
    assert_close(run(mode, fn, td.constant([1.0, 3.0, 2.0])), [1.0, 1.0, 1.0])


@pytest.mark.parametrize("mode", MODES)
def test_output_gradients(mode):
    def fn(x):
        with td.GradientTape() as tape:
            tape.watch(x)
            y = x * x
        return tape.gradient(y, x, output_gradients=td.constant([1.0, 10.0]))
    assert_close(run(mode, fn, td.constant([1.0, 2.0])), [2.0, 40.0])


@pytest.mark.parametrize("mode", MODES)
def test_nested_tapes_second_and_third_derivatives(mode):
    def fn(x):
        with td.GradientTape() as t3:
            t3.watch(x)
            with td.GradientTape() as t2:
                t2.watch(x)
                with td.GradientTape() as t1:
                    t1.watch(x)
                    y = x * x * x * x
                d1 = t1.gradient(y, x)
            d2 = t2.gradient(d1, x)
        d3 = t3.gradient(d2, x)
        return d1, d2, d3
    d1, d2, d3 = run(mode, fn, td.constant(2.0))
    assert_close(d1, 32.0)
    assert_close(d2, 48.0)
    assert_close(d3, 48.0)


@pytest.mark.parametrize("mode", MODES)
def test_stop_recording(mode):
    def fn(x):
        with td.GradientTape() as tape:
            tape.watch(x)
            y = x * x
            with tape.stop_recording():
                z = y * 100.0
            w = y + z
        return tape.gradient(w, x)
    assert_close(run(mode, fn, td.constant(3.0)), 6.0)


def test_watch_rejects_non_tensors():
    with td.GradientTape() as tape:
        with pytest.raises(ValueError, match="not tf.Tensor or tf.Variable"):
            tape.watch("x")


def test_same_source_twice_and_target_is_source():
    x = td.constant(2.0)
    with td.GradientTape() as tape:
        tape.watch(x)
    gx1, gx2 = tape.gradient(x, [x, x])
    assert_close(gx1, 1.0)
    assert_close(gx2, 1.0)


def test_gradient_inside_the_recording_context():
    x = td.constant(2.0)
    with td.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x
        g = tape.gradient(y, x)  # not recorded on the same tape
        z = y * 3.0
    assert_close(g, 4.0)
    assert_close(tape.gradient(z, x), 12.0)


def test_captured_eager_tensor_watched_outside_function():
    x = td.constant([1.0, 2.0])
    w = td.Variable([3.0, 4.0])

    @td.function
    def f():
        return td.reduce_sum(x * x * w)

    with td.GradientTape() as tape:
        tape.watch(x)
        y = f()
    gx, gw = tape.gradient(y, [x, w])
    assert_close(gx, [6.0, 16.0])
    assert_close(gw, [1.0, 4.0])


def test_watching_an_outer_tensor_inside_a_function():
    x = td.constant([1.0, 2.0])

    @td.function
    def f():
        with td.GradientTape() as tape:
            tape.watch(x)
            y = td.reduce_sum(td.exp(x))
        return tape.gradient(y, x)
    assert_close(f(), np.exp([1.0, 2.0]), rtol=1e-6)


def test_training_step_is_one_graph():
    w = td.Variable(np.ones((3, 2), np.float32))
    opt = td.optimizers.SGD(0.1)

    @td.function
    def step(x):
        with td.GradientTape() as tape:
            loss = td.reduce_sum(td.tanh(td.matmul(x, w)))
        opt.apply_gradients(zip(tape.gradient(loss, [w]), [w]))
        return loss

    x = td.constant(np.ones((4, 3), np.float32))
    step(x)
    graph = step.get_concrete_function(x).graph
    types = [op.type for op in graph.operations]
    assert types.count("MatMul") == 2  # forward and the gradient with respect to w (not x)
    assert "AssignSubVariableOp" in types
    assert not any(t.endswith("PartitionedCall") for t in types)


def test_module_trainable_variables():
    class Dense(td.Module):
        def __init__(self):
            super().__init__()
            self.w = td.Variable([[1.0], [2.0]])
            self.b = td.Variable([0.5])
            self.scale = td.Variable(3.0, trainable=False)

        def __call__(self, x):
            return (td.matmul(x, self.w) + self.b) * self.scale

    m = Dense()
    x = td.constant([[1.0, 1.0]])
    with td.GradientTape() as tape:
        y = td.reduce_sum(m(x))
    variables = m.trainable_variables
    grads = tape.gradient(y, variables)
    assert len(grads) == 2
    for v, g in zip(variables, grads):
        assert_close(g, [3.0] if v is m.b else [[3.0], [3.0]])


def test_gradient_through_eager_operators_and_indexing():
    x = td.constant([[1.0, 2.0], [3.0, 4.0]])
    with td.GradientTape() as tape:
        tape.watch(x)
        y = (-x[0] * 2.0 + abs(x[1]) / 2.0 - 1.0) ** 2.0
        z = td.reduce_sum(td.reshape(y, [1, 2]) @ td.constant([[1.0], [1.0]]))
    g = tape.gradient(z, x)
    a = -np.array([1.0, 2.0]) * 2 + np.array([3.0, 4.0]) / 2 - 1
    assert_close(g, np.stack([2 * a * -2.0, 2 * a * 0.5]))


def test_operators_fast_path_is_restored_after_tapes():
    from treadle.framework import op_execution as ops
    with td.GradientTape():
        assert ops.op_recorders
    assert not ops.op_recorders
    x = td.constant([1.0])
    assert_close(x + x, [2.0])
