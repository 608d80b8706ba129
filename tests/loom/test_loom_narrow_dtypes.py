"""Looms over float16, bfloat16 and int8 type shapes: forward against NumPy
(each op computed in float32 / int32 and rounded once, as NumPy's float16
arithmetic does), backward for the 16-bit floats against the same loom in
float32, and schedules and saved looms that round-trip them."""

import numpy as np
import pytest

import treadle as td
from loom_testlib import BinaryLoomOp

try:
    import ml_dtypes
except ImportError:
    ml_dtypes = None


class DenseTanh(td.loom.LoomOp):
    """tanh(a @ w + b): one argument and two captured variables."""

    def __init__(self, ts, w, b):
        self._w, self._b = w, b
        super().__init__([ts], [ts])

    def instantiate_batch(self, inputs):
        return [td.tanh(td.matmul(inputs[0], self._w) + self._b)]


def make_loom(dtype, seed=0):
    np_dtype = dtype.as_numpy_dtype
    rng = np.random.default_rng(seed)
    ts = td.loom.TypeShape(dtype, (3,))
    x = td.Variable(rng.uniform(-1, 1, 3).astype(np.float32).astype(np_dtype), name="x")
    y = td.Variable(rng.uniform(-1, 1, 3).astype(np.float32).astype(np_dtype), name="y")
    w = td.Variable(rng.uniform(-1, 1, (3, 3)).astype(np.float32).astype(np_dtype), name="w")
    b = td.Variable(rng.uniform(-1, 1, 3).astype(np.float32).astype(np_dtype), name="b")
    loom = td.loom.Loom(named_tensors={"x": x, "y": y},
                        named_ops={"add": BinaryLoomOp(ts, td.add), "mul": BinaryLoomOp(ts, td.multiply),
                                   "dense": DenseTanh(ts, w, b)})
    return loom, ts, (x, y, w, b), np_dtype


def weave(loom, np_dtype):
    wv = loom.make_weaver()
    a = wv.add(wv.x, wv.constant(np.array([0.5, -1.0, 2.0], dtype=np_dtype)))
    m = wv.mul(a, wv.y)
    wv.add_output(wv.dense(m))
    wv.add_output(wv.add(wv.dense(wv.dense(a)), m))
    return wv


def reference(x, y, w, b, c, np_dtype):
    """The same computation in NumPy, each op rounded to np_dtype."""
    r = lambda v: np.asarray(v, dtype=np.float32).astype(np_dtype)  # noqa: E731
    f = lambda v: v.astype(np.float32)  # noqa: E731
    dense = lambda v: r(np.tanh(f(r(f(r(f(v) @ f(w))) + f(b)))))  # noqa: E731
    a = r(f(x) + f(c))
    m = r(f(a) * f(y))
    return np.stack([dense(m), r(f(dense(dense(a))) + f(m))])


def test_float16_loom_forward_matches_numpy():
    loom, ts, (x, y, w, b), np_dtype = make_loom(td.float16)
    out = loom.output_tensor(ts, weave(loom, np_dtype))
    assert out.dtype == td.float16
    want = reference(x.numpy(), y.numpy(), w.numpy(), b.numpy(), np.array([0.5, -1.0, 2.0], np.float16), np.float16)
    # tanh in float32 may differ from NumPy's in its last float32 bit: at most one float16 step.
    np.testing.assert_allclose(out.numpy().astype(np.float32), want.astype(np.float32), rtol=2.0**-10, atol=2.0**-14)


@pytest.mark.parametrize("dtype", [td.float16, td.bfloat16], ids=lambda d: d.name)
def test_16_bit_loom_gradients_match_the_float32_loom(dtype):
    if dtype == td.bfloat16 and ml_dtypes is None:
        pytest.skip("ml_dtypes is not installed")
    loom, ts, variables, np_dtype = make_loom(dtype)
    loom32, ts32, variables32, _ = make_loom(td.float32)
    for v, v32 in zip(variables, variables32):
        v32.assign(v.numpy().astype(np.float32))  # the same (16-bit) values
    grads = []
    for lm, t, vs, nd in [(loom, ts, variables, np_dtype), (loom32, ts32, variables32, np.float32)]:
        with td.GradientTape() as tape:
            loss = td.reduce_sum(td.square(lm.output_tensor(t, weave(lm, nd))))
        grads.append(tape.gradient(loss, list(vs)))
    tol = 2e-2 if dtype == td.float16 else 1e-1
    for g, g32 in zip(*grads):
        assert g.dtype == dtype
        np.testing.assert_allclose(g.numpy().astype(np.float32), g32.numpy(), rtol=tol, atol=tol)


def test_int8_loom_wraps_like_numpy():
    ts = td.loom.TypeShape(td.int8, (4,))
    loom = td.loom.Loom(named_ops={"add": BinaryLoomOp(ts, td.add), "mul": BinaryLoomOp(ts, td.multiply)})
    a = np.array([100, -100, 7, 127], dtype=np.int8)
    c = np.array([100, -100, -3, 1], dtype=np.int8)
    wv = loom.make_weaver()
    wv.add_output(wv.mul(wv.add(wv.constant(a), wv.constant(c)), wv.constant(c)))
    got = loom.output_tensor(ts, wv)
    assert got.dtype == td.int8
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(got.numpy(), [(a + c) * c])


def test_float16_schedules_and_saved_looms_round_trip(tmp_path):
    loom, ts, _, np_dtype = make_loom(td.float16)
    wv = weave(loom, np_dtype)
    want = loom.output_tensor(ts, wv).numpy()
    path = tmp_path / "schedules.tfrecord"
    td.loom.write_schedules(str(path), [wv, wv.serialize()])
    np.testing.assert_array_equal(loom.output_tensor(ts, td.loom.read_schedules(str(path))).numpy(),
                                  np.concatenate([want, want]))
    td.save(loom, str(tmp_path / "loom.td"))
    loaded = td.load(str(tmp_path / "loom.td"))
    assert ts in loaded.type_shapes
    np.testing.assert_array_equal(loaded.output_tensor(ts, wv.serialize()).numpy(), want)


@pytest.mark.skipif(ml_dtypes is None, reason="ml_dtypes is not installed")
def test_bfloat16_constants_one_at_a_time_and_in_bulk():
    ts = td.loom.TypeShape(td.bfloat16, (2,))
    loom = td.loom.Loom(named_ops={"add": BinaryLoomOp(ts, td.add)})
    values = np.array([[1.5, -2.0], [3.25, 1e30]], dtype=ml_dtypes.bfloat16)
    wv = loom.make_weaver()
    first, second = wv.constants(values, ts)
    wv.add_output(wv.add(first, wv.constant(values[1])))
    wv.add_output(second)
    got = loom.output_tensor(ts, wv).numpy()
    want = np.stack([(values[0].astype(np.float32) + values[1].astype(np.float32)).astype(ml_dtypes.bfloat16),
                     values[1]])
    np.testing.assert_array_equal(got.view(np.uint16), want.view(np.uint16))


def test_type_shapes_take_the_narrow_dtypes():
    for name in ("float16", "bfloat16", "int8", "uint8"):
        ts = td.loom.TypeShape(name, (2,))
        assert ts.dtype.name == name
    with pytest.raises(TypeError, match="cannot be a loom type"):
        td.loom.TypeShape(td.string, (2,))
