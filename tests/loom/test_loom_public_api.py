"""The Loom's public edges: a Weaver as a td.function argument (one trace),
loaded looms and functions with public variables and real named ops,
fine-tuning a loaded loom, and tags that name one type shape."""

import warnings

import numpy as np
import pytest

import treadle as td
from loom_testlib import VEC3, BinaryLoomOp, vector_loom


def schedule(loom, value):
    w = loom.make_weaver()
    w.add_output(w.add(w.mul(w.x, w.y), w.constant(np.full(3, value))))
    return w


def expected(x, y, value):
    return x.numpy() * y.numpy() + value


# ------------------------------------------------------------------ a Weaver as an argument

def test_a_weaver_argument_traces_once():
    loom, x, y = vector_loom()

    @td.function
    def run(w):
        return loom.output_tensor(VEC3, w)

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no retracing warning either
        for value in range(6):
            np.testing.assert_allclose(run(schedule(loom, float(value))).numpy(), [expected(x, y, value)])
    assert run.experimental_get_tracing_count() == 1
    assert "Schedule[loom" in run.pretty_printed_concrete_signatures()


def test_weavers_of_another_loom_get_their_own_trace():
    loom, _, _ = vector_loom()
    other = td.loom.Loom(named_tensors={"x": np.zeros(3), "y": np.zeros(3)},
                         named_ops={"add": BinaryLoomOp(VEC3, td.add), "mul": BinaryLoomOp(VEC3, td.multiply),
                                    "sub": BinaryLoomOp(VEC3, td.subtract)})
    assert other.fingerprint != loom.fingerprint
    calls = []

    @td.function
    def run(lm, w):
        calls.append(1)
        return lm.output_tensor(VEC3, w)

    run(loom, schedule(loom, 1.0))
    np.testing.assert_allclose(run(other, schedule(other, 2.0)).numpy(), [[2.0, 2.0, 2.0]])
    run(loom, schedule(loom, 3.0))
    assert run.experimental_get_tracing_count() == 2


def test_gradients_through_a_weaver_argument_match_eager():
    loom, x, y = vector_loom()

    @td.function
    def grads(w):
        with td.GradientTape() as tape:
            loss = td.reduce_sum(loom.output_tensor(VEC3, w) ** 2)
        return tape.gradient(loss, [x, y])

    for value in (0.5, -2.0):
        w = schedule(loom, value)
        gx, gy = grads(w)
        with td.GradientTape() as tape:
            loss = td.reduce_sum(loom.output_tensor(VEC3, w) ** 2)
        ex, ey = tape.gradient(loss, [x, y])
        np.testing.assert_allclose(gx.numpy(), ex.numpy())
        np.testing.assert_allclose(gy.numpy(), ey.numpy())
        out = expected(x, y, value)
        np.testing.assert_allclose(gx.numpy(), 2 * out * y.numpy())  # d/dx sum((x*y+c)^2)
    assert grads.experimental_get_tracing_count() == 1


def test_serialized_schedules_share_a_trace_as_string_tensors():
    loom, x, y = vector_loom()

    @td.function(input_signature=[td.TensorSpec([], td.string)])
    def run(message):
        return loom.output_tensor(VEC3, message)

    for value in range(3):
        got = run(schedule(loom, float(value)).serialize())  # bytes, cast to the declared string tensor
        np.testing.assert_allclose(got.numpy(), [expected(x, y, value)])
    assert run.experimental_get_tracing_count() == 1


# ------------------------------------------------------------------ loaded looms and functions

def test_a_loaded_loom_has_its_variables_and_ops(tmp_path):
    loom, x, y = vector_loom()
    assert [v.name for v in loom.variables] == [x.name, y.name]
    td.save(loom, str(tmp_path / "v.loom"))
    loaded = td.load(str(tmp_path / "v.loom"))
    assert sorted(v.name for v in loaded.trainable_variables) == sorted([x.name, y.name])
    np.testing.assert_array_equal(loaded.variables[0].numpy(), x.numpy())
    ops = loaded.named_ops
    assert sorted(ops) == ["add", "mul"]
    assert all(isinstance(op, td.loom.LoomOp) for op in ops.values())
    assert ops["mul"].input_type_shapes == [VEC3, VEC3] and ops["mul"].output_type_shapes == [VEC3]
    a, b = np.arange(6.0).reshape(2, 3), np.full((2, 3), -1.5)
    np.testing.assert_array_equal(ops["mul"].instantiate_batch([a, b])[0].numpy(), a * b)

    @td.function
    def traced(batch):
        return ops["mul"].instantiate_batch([batch, batch])

    # Its saved function joins the traced graph's library (test_loom_library_functions.py).
    np.testing.assert_array_equal(traced(td.constant(a))[0].numpy(), a * a)


def test_fine_tuning_a_loaded_loom_through_its_public_variables(tmp_path):
    loom, x, y = vector_loom()
    td.save(loom, str(tmp_path / "v.loom"))
    loaded = td.load(str(tmp_path / "v.loom"))
    w = loaded.deserialize_weaver(schedule(loom, 1.0).serialize())
    optimizer = td.optimizers.SGD(0.05)
    losses = []
    for _ in range(30):
        with td.GradientTape() as tape:
            loss = td.reduce_sum(loaded.output_tensor(VEC3, w) ** 2)
        grads = tape.gradient(loss, loaded.trainable_variables)
        optimizer.apply_gradients(zip(grads, loaded.trainable_variables))
        losses.append(float(loss))
    assert losses[-1] < 0.1 * losses[0]
    np.testing.assert_array_equal(x.numpy(), [1.0, 2.0, 3.0])  # the original loom is untouched


def test_a_loaded_function_has_public_variables(tmp_path):
    v = td.Variable(np.array([1.0, 2.0], np.float32), name="scale")
    frozen = td.Variable(np.array([0.5, 0.5], np.float32), name="frozen", trainable=False)

    @td.function(input_signature=[td.TensorSpec([2], td.float32)])
    def f(t):
        return t * v + frozen

    td.save(f, str(tmp_path / "f.td"))
    loaded = td.load(str(tmp_path / "f.td"))
    assert sorted(var.name for var in loaded.variables) == sorted([v.name, frozen.name])
    assert [var.name for var in loaded.trainable_variables] == [v.name]
    loaded.trainable_variables[0].assign([3.0, 4.0])
    np.testing.assert_allclose(loaded(np.ones(2, np.float32)).numpy(), [3.5, 4.5])


# ------------------------------------------------------------------ tags

def test_a_tag_names_one_type_shape():
    a = td.loom.TypeShape(td.float32, (3,), "hidden")
    b = td.loom.TypeShape(td.float32, (4,), "hidden")
    c = td.loom.TypeShape(td.float64, (3,), "hidden")
    for other in (b, c):
        with pytest.raises(TypeError, match="share the tag 'hidden'"):
            td.loom.Loom(named_ops={"p": td.loom.PassThroughLoomOp(a)}, extra_type_shapes=[other])
    untagged = [td.loom.TypeShape(td.float32, (3,)), td.loom.TypeShape(td.float32, (4,))]
    loom = td.loom.Loom(named_ops={"p": td.loom.PassThroughLoomOp(a)}, extra_type_shapes=untagged, dry_run=True)
    assert len(loom.type_shapes) == 3


def test_as_dtype_takes_a_datatype_number_as_tensorflow_does():
    assert td.as_dtype(1) is td.float32 and td.as_dtype(2) is td.float64 and td.as_dtype(9 - 3) is td.string
    with pytest.raises(TypeError, match="no DataType has that number"):
        td.as_dtype(99)


# ------------------------------------------------------------------ TensorFlow Fold's keyword arguments

def test_back_prop_false_stops_gradients_eagerly_and_in_functions():
    loom, x, y = vector_loom(back_prop=False)
    w = schedule(loom, 1.0)
    with td.GradientTape() as tape:
        loss = td.reduce_sum(loom.output_tensor(VEC3, w) * x)
    gx, gy = tape.gradient(loss, [x, y])
    np.testing.assert_allclose(gx.numpy(), expected(x, y, 1.0))  # only through the direct use of x
    assert gy is None

    @td.function
    def grads(w):
        with td.GradientTape() as tape:
            loss = td.reduce_sum(loom.output_tensor(VEC3, w))
        return tape.gradient(loss, [x, y])

    assert grads(w) == [None, None]
    np.testing.assert_allclose(loom.output_tensor(VEC3, w).numpy(), [expected(x, y, 1.0)])


@pytest.mark.parametrize("kwargs", [dict(parallel_iterations=None), dict(parallel_iterations=1),
                                    dict(swap_memory=False), dict(direct_feed_dict=False), dict(back_prop=True),
                                    dict(back_prop=None)])
def test_fold_keyword_arguments_with_a_meaning_are_accepted(kwargs):
    loom, x, y = vector_loom(**kwargs)
    np.testing.assert_allclose(loom.output_tensor(VEC3, schedule(loom, 2.0)).numpy(), [expected(x, y, 2.0)])


@pytest.mark.parametrize("kwargs, why", [
    (dict(parallel_iterations=10), "depths run one after another"),
    (dict(swap_memory=True), "no GPU memory to swap"),
    (dict(direct_feed_dict=True), "no feed dicts"),
    (dict(back_prop="no"), "back_prop must be True, False or None"),
    (dict(loom_input_tensor=None), "not needed in treadle: pass the schedule"),
    (dict(weaver_op=None), "not needed in treadle: weave with loom.make_weaver"),
    (dict(no_such_argument=1), "unexpected keyword argument 'no_such_argument'"),
])
def test_fold_keyword_arguments_without_one_are_refused_saying_why(kwargs, why):
    with pytest.raises(TypeError, match=why):
        vector_loom(**kwargs)
