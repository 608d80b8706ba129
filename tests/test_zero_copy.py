"""Zero-copy exchange with NumPy (buffer protocol, views) and any DLPack
producer or consumer: shared memory, lifetimes, read-only views, and clear
errors for tensors treadle cannot wrap."""

import ctypes
import gc
import weakref

import numpy as np
import pytest

import treadle as td
from treadle import _core
from treadle.experimental import dlpack

DTYPES = [np.float32, np.float64, np.int32, np.int64, np.bool_]
SHAPES = [(), (0,), (5,), (2, 3), (2, 1, 4), (3, 0, 2)]


def _ptr(arr):
    return arr.__array_interface__["data"][0]


def _sample(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    if dtype == np.bool_:
        return np.asarray(rng.random(shape) > 0.5)
    return np.asarray(rng.standard_normal(shape) * 100).astype(dtype)


# ------------------------------------------------------------- NumPy views


@pytest.mark.parametrize("dtype", DTYPES)
def test_asarray_is_a_read_only_view(dtype):
    t = td.constant(_sample((3, 4), dtype))
    view = np.asarray(t)
    assert _ptr(view) == t._data_ptr()
    assert not view.flags.writeable
    with pytest.raises(ValueError):
        view[0, 0] = view[1, 1]
    np.testing.assert_array_equal(view, t.numpy())


def test_numpy_method_copies():
    t = td.constant([[1.0, 2.0], [3.0, 4.0]])
    copy = t.numpy()
    assert _ptr(copy) != t._data_ptr()
    copy[0, 0] = 100.0  # writable, and the tensor is unchanged
    assert t.numpy()[0, 0] == 1.0


def test_view_outlives_tensor():
    t = td.constant(np.arange(12, dtype=np.float32).reshape(3, 4))
    view = np.asarray(t)
    del t
    gc.collect()
    np.testing.assert_array_equal(view, np.arange(12, dtype=np.float32).reshape(3, 4))


def test_tensor_from_numpy_without_copy_shares_and_keeps_array_alive():
    arr = np.arange(10, dtype=np.int64)
    ref = weakref.ref(arr)
    t = _core.tensor_from_numpy(arr, copy=False)
    assert t._data_ptr() == _ptr(arr)
    del arr
    gc.collect()
    assert ref() is not None, "the tensor must keep the array alive"
    np.testing.assert_array_equal(t.numpy(), np.arange(10))
    np.testing.assert_array_equal((t + 1).numpy(), np.arange(1, 11))
    del t
    gc.collect()
    assert ref() is None, "the array must be released with the last tensor"


def test_tensor_from_numpy_copies_non_contiguous_arrays():
    arr = np.arange(12, dtype=np.float32).reshape(3, 4).T
    t = _core.tensor_from_numpy(arr, copy=False)
    assert t._data_ptr() != _ptr(arr)
    np.testing.assert_array_equal(t.numpy(), arr)


# ------------------------------------------------------------- DLPack: treadle -> consumer


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_np_from_dlpack_shares_memory(dtype, shape):
    t = td.constant(_sample(shape, dtype))
    arr = np.from_dlpack(t)
    assert arr.dtype == dtype and arr.shape == shape
    np.testing.assert_array_equal(arr, t.numpy())
    if arr.size:
        assert _ptr(arr) == t._data_ptr()
    assert not arr.flags.writeable, "treadle tensors are immutable: DLPack 1.0 marks them read-only"


def test_dlpack_device_is_cpu():
    assert td.constant([1.0]).__dlpack_device__() == (1, 0)


def test_np_from_dlpack_outlives_tensor():
    t = td.constant(np.arange(6, dtype=np.float64))
    arr = np.from_dlpack(t)
    del t
    gc.collect()
    np.testing.assert_array_equal(arr, np.arange(6, dtype=np.float64))


def test_dlpack_copy_true_gives_an_independent_writable_array():
    t = td.constant([1.0, 2.0, 3.0])
    arr = np.from_dlpack(t, copy=True)
    assert _ptr(arr) != t._data_ptr()
    arr[0] = 7.0
    assert t.numpy()[0] == 1.0


def test_to_dlpack_returns_a_legacy_capsule_that_round_trips():
    t = td.constant([[1, 2], [3, 4]], dtype=td.int64)
    capsule = dlpack.to_dlpack(t)
    assert "dltensor" in repr(capsule)
    back = dlpack.from_dlpack(capsule)
    assert back._data_ptr() == t._data_ptr()
    np.testing.assert_array_equal(back.numpy(), [[1, 2], [3, 4]])
    with pytest.raises(ValueError, match="already consumed"):
        dlpack.from_dlpack(capsule)


def test_versioned_capsule_round_trips():
    t = td.constant([True, False, True])
    capsule = t.__dlpack__(max_version=(1, 0))
    assert "dltensor_versioned" in repr(capsule)
    back = dlpack.from_dlpack(capsule)
    assert back._data_ptr() == t._data_ptr()
    np.testing.assert_array_equal(back.numpy(), [True, False, True])


def test_unconsumed_capsule_releases_the_memory_it_holds():
    arr = np.arange(4, dtype=np.float32)
    ref = weakref.ref(arr)
    t = dlpack.from_dlpack(arr)
    capsule = dlpack.to_dlpack(t)
    del arr, t
    gc.collect()
    assert ref() is not None, "the capsule holds the tensor, which holds the array"
    del capsule
    gc.collect()
    assert ref() is None


def test_export_errors():
    with pytest.raises(BufferError, match="string"):
        td.constant(["a", "b"]).__dlpack__()
    with pytest.raises(BufferError, match="string"):
        dlpack.to_dlpack(td.constant("abc"))
    t = td.constant([1.0])
    with pytest.raises(ValueError, match="stream must be None"):
        t.__dlpack__(stream=1)
    with pytest.raises(BufferError, match="CPU"):
        t.__dlpack__(dl_device=(2, 0))
    with pytest.raises(TypeError, match="eager tensor"):
        dlpack.to_dlpack(np.zeros(3))


# ------------------------------------------------------------- DLPack: producer -> treadle


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_from_dlpack_of_numpy_shares_memory(dtype, shape):
    arr = _sample(shape, dtype, seed=1)
    t = dlpack.from_dlpack(arr)
    assert t.dtype == td.as_dtype(dtype)
    assert tuple(t.shape) == shape
    np.testing.assert_array_equal(t.numpy(), arr)
    if arr.size:
        assert t._data_ptr() == _ptr(arr)


def test_from_dlpack_keeps_the_producer_alive():
    arr = np.arange(8, dtype=np.float32).reshape(2, 4)
    ref = weakref.ref(arr)
    t = dlpack.from_dlpack(arr)
    del arr
    gc.collect()
    assert ref() is not None
    np.testing.assert_array_equal((t * 2).numpy(), np.arange(8, dtype=np.float32).reshape(2, 4) * 2)
    del t
    gc.collect()
    assert ref() is None


def test_from_dlpack_sees_writes_through_the_producer():
    # Zero-copy means zero-copy: documented as "do not modify", but observable.
    arr = np.zeros(3, dtype=np.int32)
    t = dlpack.from_dlpack(arr)
    arr[1] = 5
    np.testing.assert_array_equal(t.numpy(), [0, 5, 0])


def test_from_dlpack_accepts_read_only_and_size_one_strided_arrays():
    ro = np.arange(4.0)
    ro.flags.writeable = False
    assert dlpack.from_dlpack(ro)._data_ptr() == _ptr(ro)
    col = np.arange(6, dtype=np.int32).reshape(6, 1)[:, :]
    odd = col[:, :, None]  # size-1 dims may carry any stride
    np.testing.assert_array_equal(dlpack.from_dlpack(odd).numpy(), odd)


def test_from_dlpack_of_sliced_array_uses_its_offset():
    base = np.arange(20, dtype=np.float64)
    part = base[5:9]
    t = dlpack.from_dlpack(part)
    assert t._data_ptr() == _ptr(part)
    np.testing.assert_array_equal(t.numpy(), [5, 6, 7, 8])


def test_from_dlpack_of_treadle_tensor():
    t = td.constant([[1.5, 2.5]])
    u = dlpack.from_dlpack(t)
    assert u._data_ptr() == t._data_ptr()
    np.testing.assert_array_equal(u.numpy(), t.numpy())


@pytest.mark.parametrize("arr, what", [
    (np.arange(6.0).reshape(2, 3).T, "not C-contiguous"),
    (np.arange(10.0)[::2], "not C-contiguous"),
    (np.zeros(3, dtype=np.uint16), "uint16"),
    (np.zeros(3, dtype=np.complex64), "complex64"),
    (np.zeros(3, dtype=np.int16), "int16"),
])
def test_from_dlpack_rejects_what_treadle_cannot_wrap(arr, what):
    with pytest.raises(td.errors.InvalidArgumentError, match=what):
        dlpack.from_dlpack(arr)


def test_from_dlpack_rejects_invalid_bools():
    raw = np.array([0, 1, 2], dtype=np.uint8).view(np.bool_)
    with pytest.raises(td.errors.InvalidArgumentError, match="byte value 2"):
        dlpack.from_dlpack(raw)


def test_from_dlpack_rejects_non_producers():
    with pytest.raises(TypeError, match="__dlpack__"):
        dlpack.from_dlpack([1, 2, 3])
    with pytest.raises(TypeError, match="not a capsule"):
        dlpack.from_dlpack(_Producer(lambda **kw: "not a capsule"))


def test_from_dlpack_checks_the_producer_device():
    producer = _Producer(lambda **kw: np.zeros(2).__dlpack__(**kw), device=(2, 0))
    with pytest.raises(td.errors.InvalidArgumentError, match="only reads CPU"):
        dlpack.from_dlpack(producer)


def test_from_dlpack_falls_back_for_pre_1_0_producers():
    arr = np.arange(3.0)

    def legacy(stream=None):  # no max_version keyword
        return arr.__dlpack__()

    t = dlpack.from_dlpack(_Producer(legacy))
    assert t._data_ptr() == _ptr(arr)


class _Producer:
    def __init__(self, export, device=(1, 0)):
        self._export = export
        self._device = device

    def __dlpack__(self, **kwargs):
        return self._export(**kwargs)

    def __dlpack_device__(self):
        return self._device


# ------------------------------------------------------------- hand-made (hostile) DLPack tensors


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class _DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p)]


class _DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32), ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p), ("flags", ctypes.c_uint64), ("dl_tensor", _DLTensor)]


_PyCapsule_New = ctypes.pythonapi.PyCapsule_New
_PyCapsule_New.restype = ctypes.py_object
_PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]


def _hand_made_capsule(shape, strides=None, code=2, bits=32, device=1, data=None, versioned=None,
                       name=b"dltensor", byte_offset=0):
    """A capsule over a ctypes DLManagedTensor with no deleter; `keep` holds
    every ctypes object alive for as long as the test needs them."""
    storage = (ctypes.c_double * 16)()
    shape_arr = (ctypes.c_int64 * max(len(shape), 1))(*shape)
    strides_arr = (ctypes.c_int64 * max(len(strides), 1))(*strides) if strides is not None else None
    dl = _DLTensor(
        data=ctypes.addressof(storage) if data is None else data, device=_DLDevice(device, 0), ndim=len(shape),
        dtype=_DLDataType(code, bits, 1), shape=shape_arr,
        strides=ctypes.cast(strides_arr, ctypes.POINTER(ctypes.c_int64)) if strides_arr is not None else None,
        byte_offset=byte_offset)
    if versioned is None:
        managed = _DLManagedTensor(dl_tensor=dl, manager_ctx=None, deleter=None)
    else:
        managed = _DLManagedTensorVersioned(major=versioned[0], minor=versioned[1], manager_ctx=None,
                                            deleter=None, flags=0, dl_tensor=dl)
    capsule = _PyCapsule_New(ctypes.addressof(managed), name, None)
    return capsule, (storage, shape_arr, strides_arr, managed)


def test_hand_made_capsule_is_read_correctly():
    capsule, keep = _hand_made_capsule([2, 3], strides=[3, 1], code=2, bits=64)
    storage = keep[0]
    for i in range(6):
        storage[i] = i * 1.5
    t = dlpack.from_dlpack(capsule)
    assert t._data_ptr() == ctypes.addressof(storage)
    np.testing.assert_array_equal(t.numpy(), np.arange(6).reshape(2, 3) * 1.5)


@pytest.mark.parametrize("kwargs, message", [
    (dict(shape=[2, -3]), "negative dimension"),
    (dict(shape=[2**40, 2**40]), "2\\^40"),
    (dict(shape=[1] * 65), "rank 65"),
    (dict(shape=[4], device=2), "device type 2"),
    (dict(shape=[4], code=2, bits=8), "float8"),
    (dict(shape=[4], code=1, bits=32), "uint32"),
    (dict(shape=[4], code=0, bits=16), "int16"),
    (dict(shape=[2, 2], strides=[1, 2]), "not C-contiguous"),
    (dict(shape=[3], data=0), "null data pointer"),
    (dict(shape=[3], byte_offset=2), "not aligned"),
    (dict(shape=[3], versioned=(2, 0), name=b"dltensor_versioned"), "version 2.0"),
])
def test_hand_made_capsule_errors(kwargs, message):
    capsule, keep = _hand_made_capsule(**kwargs)
    with pytest.raises(td.errors.InvalidArgumentError, match=message):
        dlpack.from_dlpack(capsule)
    del keep


def test_capsule_with_another_name_is_rejected():
    capsule, keep = _hand_made_capsule([3], name=b"something_else")
    with pytest.raises(TypeError, match="something_else"):
        dlpack.from_dlpack(capsule)
    del keep


def test_failed_import_leaves_the_capsule_usable():
    # Validation happens before ownership moves: a rejected capsule is not consumed.
    arr = np.arange(6.0).reshape(2, 3).T
    capsule = arr.__dlpack__()
    with pytest.raises(td.errors.InvalidArgumentError):
        dlpack.from_dlpack(capsule)
    assert "used" not in repr(capsule)


# ------------------------------------------------------------- PyTorch, when installed


def test_torch_interop():
    torch = pytest.importorskip("torch")
    x = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    t = dlpack.from_dlpack(x)
    assert t._data_ptr() == x.data_ptr()
    np.testing.assert_array_equal(t.numpy(), x.numpy())
    y = torch.from_dlpack(td.constant([[1.0, 2.0]]))
    assert y.tolist() == [[1.0, 2.0]]
