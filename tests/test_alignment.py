"""Every buffer treadle allocates is 64-byte aligned, small ones included:
DLPack consumers (JAX among them) copy anything less aligned instead of
sharing it. The small-block cache behind that is per thread and reuses blocks."""

import threading

import numpy as np
import pytest

import treadle as td

DTYPES = [np.float32, np.float64, np.int32, np.int64, np.bool_]
# Element counts across the small classes (up to 256 bytes), the middle range and the large cached blocks.
COUNTS = [0, 1, 2, 3, 7, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 1000, 5000, 40000]


def aligned(t):
    return t._data_ptr() % 64 == 0


def fresh_results(dtype, count):
    """Tensors the kernels allocate: a copy made by td.constant and an op's output."""
    value = np.arange(count).astype(dtype)
    t = td.constant(value)
    return [t, td.identity(t) if hasattr(td, "identity") else td.reshape(t, [-1]),
            td.concat([t, t], axis=0), td.zeros([count], dtype=td.as_dtype(dtype))]


@pytest.mark.parametrize("dtype", DTYPES)
def test_tensors_are_64_byte_aligned(dtype):
    for count in COUNTS:
        for t in fresh_results(dtype, count):
            if t.shape.num_elements():
                assert aligned(t), (dtype, count, t.shape)


def test_reused_small_blocks_stay_aligned_and_hold_the_right_values():
    rng = np.random.default_rng(0)
    kept = []
    for i in range(2000):  # allocate and free in a churn, keeping some alive
        n = int(rng.integers(1, 64))
        a = rng.standard_normal(n).astype(np.float32)
        t = td.constant(a) * 2.0
        assert aligned(t)
        np.testing.assert_array_equal(t.numpy(), a * 2.0)
        if i % 7 == 0:
            kept.append((t, a))
    for t, a in kept:
        np.testing.assert_array_equal(t.numpy(), a * 2.0)


def test_alignment_in_other_threads_and_across_threads():
    made, errors = [], []

    def work():
        try:
            for n in (1, 5, 16, 60, 200):
                t = td.constant(np.ones(n, np.float64)) + 1.0
                made.append(t)
                if not aligned(t):
                    errors.append(n)
        except Exception as e:  # reported below, in the test's thread
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert errors == []
    for t in made:  # freed here, in another thread than the one that allocated them
        np.testing.assert_array_equal(t.numpy(), np.full(t.shape[0], 2.0))
    made.clear()
    assert aligned(td.constant(np.ones(3, np.float32)) + 1.0)


def test_dlpack_consumers_see_aligned_memory():
    for n in (1, 3, 33):
        t = td.constant(np.arange(n, dtype=np.float32)) + 0.0
        arr = np.from_dlpack(t)
        assert arr.__array_interface__["data"][0] % 64 == 0
        assert arr.__array_interface__["data"][0] == t._data_ptr()


def test_jax_shares_treadle_tensors_without_copying():
    """JAX copies a DLPack tensor that is not 64-byte aligned; every one of these is shared."""
    import os
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    jnp = pytest.importorskip("jax.numpy")
    for dtype in [np.float32, np.int32, np.bool_]:
        for shape in [(), (1,), (3,), (2, 3), (5, 7), (64, 64)]:
            value = (np.arange(int(np.prod(shape))).reshape(shape) % 3).astype(dtype)
            t = td.constant(value)
            j = jnp.from_dlpack(t)
            assert j.unsafe_buffer_pointer() == t._data_ptr(), (dtype, shape)
            np.testing.assert_array_equal(np.asarray(j), value)
