"""ResourceScatterAdd / ResourceScatterSub (and Variable.scatter_add/sub):
row updates of a variable, duplicates accumulating, checked against NumPy;
bad operands raise errors naming the op and leave the variable unchanged; a
value read before an update never changes."""

import numpy as np
import pytest

import treadle as td

rng = np.random.default_rng(11)


def numpy_scatter(ref, indices, updates, sign):
    out = ref.copy()
    upd = np.broadcast_to(updates, np.shape(indices) + ref.shape[1:]) if np.ndim(updates) == 0 else updates
    np.add.at(out, np.asarray(indices), sign * upd)
    return out


OPS = [("ResourceScatterAdd", 1), ("ResourceScatterSub", -1)]


@pytest.mark.parametrize("op,sign", OPS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
@pytest.mark.parametrize("shape,indices", [((5,), [4, 0, 4]), ((4, 3), [[1, 3], [1, 1]]), ((3, 2, 2), [2]),
                                           ((3, 2), np.zeros((0,), np.int32))])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_matches_numpy(op, sign, dtype, shape, indices, index_dtype):
    start = (rng.normal(size=shape) * 10).astype(dtype)
    ids = np.asarray(indices, index_dtype)
    updates = (rng.normal(size=ids.shape + shape[1:]) * 10).astype(dtype)
    var = td.Variable(start)
    getattr(td.raw_ops, op)(resource=var.handle, indices=td.constant(ids), updates=td.constant(updates))
    np.testing.assert_array_equal(var.numpy(), numpy_scatter(start, ids, updates, sign))


@pytest.mark.parametrize("op,sign", OPS)
def test_scalar_updates_apply_to_every_selected_row(op, sign):
    start = rng.normal(size=(4, 2))
    var = td.Variable(start)
    getattr(td.raw_ops, op)(resource=var.handle, indices=td.constant([3, 0, 3]), updates=td.constant(1.5, td.float64))
    np.testing.assert_array_equal(var.numpy(), numpy_scatter(start, [3, 0, 3], 1.5, sign))


@pytest.mark.parametrize("op,sign", OPS)
def test_inside_a_function(op, sign):
    start = rng.normal(size=(4, 3))
    var = td.Variable(start)
    updates = rng.normal(size=(2, 3))

    @td.function
    def step(ids, upd):
        before = var.read_value()
        getattr(td.raw_ops, op)(resource=var.handle, indices=ids, updates=upd)
        return before, var.read_value()

    before, after = step(td.constant([2, 2]), td.constant(updates))
    np.testing.assert_array_equal(before.numpy(), start)  # read before the update, in program order
    want = numpy_scatter(start, [2, 2], updates, sign)
    np.testing.assert_array_equal(after.numpy(), want)
    np.testing.assert_array_equal(var.numpy(), want)


def test_variable_methods():
    var = td.Variable(np.zeros((3, 2), np.float32))
    out = var.scatter_add(td.IndexedSlices(np.ones((2, 2), np.float32), [1, 1]))
    assert out is var
    var.scatter_sub(td.IndexedSlices(td.constant([[0.5, 0.5]]), td.constant([2])))
    np.testing.assert_array_equal(var.numpy(), [[0, 0], [2, 2], [-0.5, -0.5]])
    with pytest.raises(TypeError, match="not IndexedSlices"):
        var.scatter_add(td.constant([[1.0, 1.0]]))
    with pytest.raises((TypeError, ValueError)):
        var.scatter_add(td.IndexedSlices(td.constant(np.ones((1, 2))), [0]))  # float64 into float32


def test_values_read_before_an_update_do_not_change():
    source = rng.normal(size=(4, 2))
    kept = source.copy()
    var = td.Variable(source)
    read = var.read_value()
    as_numpy = var.numpy()
    var.scatter_add(td.IndexedSlices(td.constant(np.ones((1, 2))), [0]))
    np.testing.assert_array_equal(read.numpy(), kept)
    np.testing.assert_array_equal(as_numpy, kept)
    np.testing.assert_array_equal(source, kept)  # the array the variable was made from
    np.testing.assert_array_equal(var.numpy()[0], kept[0] + 1)
    # Unshared again: later updates go in place and keep accumulating.
    var.scatter_add(td.IndexedSlices(td.constant(np.ones((1, 2))), [0]))
    np.testing.assert_array_equal(var.numpy()[0], kept[0] + 2)
    np.testing.assert_array_equal(read.numpy(), kept)


# ---------------------------------------------------------------- bad operands

def _raw(op, var, indices, updates):
    getattr(td.raw_ops, op)(resource=var.handle, indices=indices, updates=updates)


@pytest.mark.parametrize("op", ["ResourceScatterAdd", "ResourceScatterSub"])
@pytest.mark.parametrize("bad", [5, 4, -1])
def test_out_of_range_index(op, bad):
    start = rng.normal(size=(4, 2))
    var = td.Variable(start)
    with pytest.raises(td.errors.InvalidArgumentError, match=rf"{op}: indices\[1\] = {bad} is not in \[0, 4\)"):
        _raw(op, var, td.constant([0, bad]), td.constant(np.ones((2, 2))))
    np.testing.assert_array_equal(var.numpy(), start)  # checked before any write


@pytest.mark.parametrize("op", ["ResourceScatterAdd", "ResourceScatterSub"])
def test_wrong_updates_dtype(op):
    var = td.Variable(np.zeros((3, 2)))
    with pytest.raises(td.errors.InvalidArgumentError, match=f"{op}: updates has dtype float32 but variable"):
        _raw(op, var, td.constant([0]), td.constant(np.ones((1, 2), np.float32)))
    with pytest.raises((td.errors.InvalidArgumentError, TypeError), match="Tindices"):
        _raw(op, var, td.constant([0.0]), td.constant(np.ones((1, 2))))


@pytest.mark.parametrize("op", ["ResourceScatterAdd", "ResourceScatterSub"])
@pytest.mark.parametrize("updates_shape", [(2, 3), (1, 2), (2,), (2, 2, 1)])
def test_wrong_updates_shape(op, updates_shape):
    start = np.zeros((3, 2))
    var = td.Variable(start)
    with pytest.raises(td.errors.InvalidArgumentError, match=f"{op}: updates must be a scalar or of shape"):
        _raw(op, var, td.constant([0, 1]), td.constant(np.ones(updates_shape)))
    np.testing.assert_array_equal(var.numpy(), start)


def test_wrong_updates_shape_found_while_tracing():
    var = td.Variable(np.zeros((3, 2)))

    @td.function
    def f():
        _raw("ResourceScatterAdd", var, td.constant([0, 1]), td.constant(np.ones((3, 2))))

    with pytest.raises(ValueError, match="ResourceScatterAdd: updates must be a scalar or of shape"):
        f()


def test_errors_when_running_a_function():
    var = td.Variable(np.zeros((3, 2)))

    @td.function
    def f(ids):
        _raw("ResourceScatterSub", var, ids, td.constant(np.ones((1, 2))))

    with pytest.raises(td.errors.InvalidArgumentError, match=r"ResourceScatterSub: indices\[0\] = 3"):
        f(td.constant([3]))


def test_scalar_variable_is_rejected():
    var = td.Variable(1.0)
    with pytest.raises(td.errors.InvalidArgumentError, match="ResourceScatterAdd: .* must be at least 1-D"):
        _raw("ResourceScatterAdd", var, td.constant([0]), td.constant([1.0]))


def test_not_differentiable_but_recordable():
    var = td.Variable(np.ones((3, 2)))
    with td.GradientTape() as tape:
        var.scatter_add(td.IndexedSlices(td.constant(np.ones((1, 2))), [1]))
        loss = td.reduce_sum(var * 1.0)
    np.testing.assert_array_equal(tape.gradient(loss, var).numpy(), np.ones((3, 2)))
