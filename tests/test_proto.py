"""The wire format in both languages: TensorProtos made in Python parse in
C++ and back, for every dtype and edge shape; malformed protos raise clear
Python exceptions; the Python protobuf runtime accepts the generated code."""

import numpy as np
import pytest

import treadle as td
from treadle import _core, graph_pb2, tensor_pb2

NUMERIC = [(td.float32, np.float32), (td.float64, np.float64), (td.int32, np.int32),
           (td.int64, np.int64), (td.bool, np.bool_)]
SHAPES = [(), (0,), (1,), (7,), (2, 3), (2, 0, 3), (1, 1, 1, 2)]


def _values(shape, np_dtype, seed):
    rng = np.random.default_rng(seed)
    if np_dtype == np.bool_:
        return np.asarray(rng.random(shape) > 0.5)
    if np.issubdtype(np_dtype, np.integer):
        info = np.iinfo(np_dtype)
        return np.asarray(rng.integers(info.min, info.max, size=shape, endpoint=True, dtype=np_dtype))
    return np.asarray(rng.standard_normal(shape) * 1e3).astype(np_dtype)


def _strings(shape, seed):
    rng = np.random.default_rng(seed)
    pool = [b"", b"a", b"treadle", b"\x00nul\x00", b"\xff\xfe not utf-8", "héllo".encode(), b"x" * 300]
    flat = [pool[i] for i in rng.integers(0, len(pool), size=int(np.prod(shape, dtype=np.int64)))]
    arr = np.empty(len(flat), dtype=object)
    arr[:] = flat
    return arr.reshape(shape)


def _decode_in_python(data):
    """Reads a TensorProto with the Python runtime alone (no treadle code)."""
    proto = tensor_pb2.TensorProto.FromString(data)
    shape = tuple(d.size for d in proto.shape.dim)
    if proto.dtype == tensor_pb2.DT_STRING:
        arr = np.empty(len(proto.string_val), dtype=object)
        arr[:] = list(proto.string_val)
        return proto, arr.reshape(shape)
    wire = {tensor_pb2.DT_FLOAT: "<f4", tensor_pb2.DT_DOUBLE: "<f8", tensor_pb2.DT_INT32: "<i4",
            tensor_pb2.DT_INT64: "<i8", tensor_pb2.DT_BOOL: "?"}[proto.dtype]
    return proto, np.frombuffer(proto.tensor_content, dtype=wire).reshape(shape)


# ------------------------------------------------------------- the generated code


def test_python_runtime_accepts_generated_code():
    import google.protobuf
    assert tensor_pb2.TensorProto.DESCRIPTOR.full_name == "treadle.proto.TensorProto"
    assert tensor_pb2.TensorShapeProto.DESCRIPTOR.full_name == "treadle.proto.TensorShapeProto"
    assert tensor_pb2.DataType.DESCRIPTOR.full_name == "treadle.proto.DataType"
    assert graph_pb2.GraphDef.DESCRIPTOR.full_name == "treadle.proto.GraphDef"
    # graph.proto imports tensor.proto: its messages use the same classes.
    attr = graph_pb2.AttrValue(tensor=td.make_tensor_proto([1.0, 2.0]))
    assert type(attr.tensor) is tensor_pb2.TensorProto
    major = int(google.protobuf.__version__.split(".")[0])
    assert 4 <= major < 8, "pyproject pins protobuf>=4.21.12,<8; update the pin after testing a new major"


def test_dtype_numbering_matches_the_core():
    for dtype, _ in NUMERIC + [(td.string, object)]:
        name = tensor_pb2.DataType.Name(dtype.as_datatype_enum)
        assert name.startswith("DT_")
        t = td.constant(np.zeros(0, dtype=dtype.as_numpy_dtype) if dtype != td.string else [b"x"])
        assert tensor_pb2.TensorProto.FromString(_core.tensor_to_proto_bytes(t)).dtype == dtype.as_datatype_enum


def test_core_reports_its_libprotobuf_version():
    assert _core.protobuf_version() >= 3021000


# ------------------------------------------------------------- round trips


@pytest.mark.parametrize("dtype, np_dtype", NUMERIC)
@pytest.mark.parametrize("shape", SHAPES)
def test_python_proto_parses_in_cpp(dtype, np_dtype, shape):
    values = _values(shape, np_dtype, seed=len(shape))
    proto = td.make_tensor_proto(values, dtype=dtype)
    assert proto.dtype == dtype.as_datatype_enum
    assert [d.size for d in proto.shape.dim] == list(shape)
    t = _core.tensor_from_proto_bytes(proto.SerializeToString())
    assert t.dtype == dtype
    assert tuple(t.shape) == shape
    np.testing.assert_array_equal(np.asarray(t), values)


@pytest.mark.parametrize("dtype, np_dtype", NUMERIC)
@pytest.mark.parametrize("shape", SHAPES)
def test_cpp_proto_parses_in_python(dtype, np_dtype, shape):
    values = _values(shape, np_dtype, seed=10 + len(shape))
    t = td.constant(values)
    proto, decoded = _decode_in_python(_core.tensor_to_proto_bytes(t))
    assert proto.dtype == dtype.as_datatype_enum
    assert decoded.shape == shape
    np.testing.assert_array_equal(decoded, values)
    np.testing.assert_array_equal(td.make_ndarray(proto), values)


@pytest.mark.parametrize("shape", SHAPES)
def test_string_round_trips(shape):
    values = _strings(shape, seed=len(shape))
    proto = td.make_tensor_proto(values)
    assert proto.dtype == tensor_pb2.DT_STRING
    assert list(proto.string_val) == list(values.ravel())
    t = _core.tensor_from_proto_bytes(proto.SerializeToString())
    assert t.dtype == td.string and tuple(t.shape) == shape
    back = np.asarray(t)
    assert back.shape == shape and list(back.ravel()) == list(values.ravel())
    _, decoded = _decode_in_python(_core.tensor_to_proto_bytes(t))
    assert list(decoded.ravel()) == list(values.ravel())
    made = td.make_ndarray(proto)
    assert made.dtype == object and made.shape == shape and list(made.ravel()) == list(values.ravel())


def test_str_values_are_utf8_and_bytes_are_kept_exactly():
    proto = td.make_tensor_proto([["é", b"a\x00"], ["", b"\xff"]])
    assert list(proto.string_val) == ["é".encode(), b"a\x00", b"", b"\xff"]
    assert [d.size for d in proto.shape.dim] == [2, 2]


def test_python_defaults_match_td_constant():
    assert td.make_tensor_proto(3).dtype == tensor_pb2.DT_INT32
    assert td.make_tensor_proto(3.5).dtype == tensor_pb2.DT_FLOAT
    assert td.make_tensor_proto(True).dtype == tensor_pb2.DT_BOOL
    assert td.make_tensor_proto(np.float64(1)).dtype == tensor_pb2.DT_DOUBLE
    assert td.make_tensor_proto([2**40]).dtype == tensor_pb2.DT_INT64
    assert td.make_tensor_proto("s").dtype == tensor_pb2.DT_STRING


def test_make_tensor_proto_from_tensor_and_proto():
    t = td.constant([[1, 2]], dtype=td.int64)
    proto = td.make_tensor_proto(t)
    np.testing.assert_array_equal(td.make_ndarray(proto), [[1, 2]])
    assert td.make_tensor_proto(proto) is proto


def test_make_tensor_proto_dtype_conversion():
    proto = td.make_tensor_proto([1, 2], dtype=td.float64)
    np.testing.assert_array_equal(td.make_ndarray(proto), np.array([1.0, 2.0]))
    assert td.make_ndarray(proto).dtype == np.float64
    with pytest.raises(TypeError):
        td.make_tensor_proto([1.5], dtype=td.int32)
    with pytest.raises(ValueError, match="out of range"):
        td.make_tensor_proto([2**40], dtype=td.int32)
    with pytest.raises(TypeError):
        td.make_tensor_proto([1, 2], dtype=td.string)
    with pytest.raises(TypeError):
        td.make_tensor_proto(np.zeros(3, dtype=np.uint16))


def test_make_tensor_proto_shape():
    np.testing.assert_array_equal(td.make_ndarray(td.make_tensor_proto(7, shape=[2, 2])), np.full((2, 2), 7))
    np.testing.assert_array_equal(td.make_ndarray(td.make_tensor_proto([1, 2, 3, 4], shape=(2, 2))),
                                  [[1, 2], [3, 4]])
    np.testing.assert_array_equal(td.make_ndarray(td.make_tensor_proto([1, 2], shape=[3, 2], allow_broadcast=True)),
                                  [[1, 2]] * 3)
    assert [d.size for d in td.make_tensor_proto(1.0, shape=[]).shape.dim] == []
    with pytest.raises(ValueError, match="takes 6 elements, but 4"):
        td.make_tensor_proto([1, 2, 3, 4], shape=[2, 3])
    with pytest.raises(TypeError, match="shape"):
        td.make_tensor_proto([1, 2, 3, 4], shape=[4, 1], verify_shape=True)
    with pytest.raises(ValueError, match="broadcast"):
        td.make_tensor_proto([1, 2, 3], shape=[2, 2], allow_broadcast=True)
    with pytest.raises(ValueError, match="fully defined"):
        td.make_tensor_proto([1], shape=[None])
    with pytest.raises(ValueError, match="2\\*\\*40"):
        td.make_tensor_proto(1, shape=[2**30, 2**30, 2])


def test_make_ndarray_returns_an_independent_array():
    proto = td.make_tensor_proto([1.0, 2.0])
    arr = td.make_ndarray(proto)
    assert arr.flags.writeable
    arr[0] = 5.0
    np.testing.assert_array_equal(td.make_ndarray(proto), [1.0, 2.0])
    scalar = td.make_ndarray(td.make_tensor_proto(4))
    assert isinstance(scalar, np.ndarray) and scalar.shape == () and scalar == 4
    with pytest.raises(TypeError, match="TensorProto"):
        td.make_ndarray(b"bytes")


def test_big_endian_input_is_written_little_endian():
    values = np.arange(4, dtype=">i4")
    proto = td.make_tensor_proto(values)
    assert proto.tensor_content == np.arange(4, dtype="<i4").tobytes()


# ------------------------------------------------------------- malformed input


def _proto(dtype=tensor_pb2.DT_FLOAT, dims=(2,), content=None, strings=None, unknown_rank=False):
    p = tensor_pb2.TensorProto()
    p.dtype = dtype
    for d in dims:
        p.shape.dim.add().size = d
    p.shape.unknown_rank = unknown_rank
    if content is not None:
        p.tensor_content = content
    if strings is not None:
        p.string_val.extend(strings)
    return p


MALFORMED = [
    ("content too short", _proto(content=b"\x00" * 7), "needs 8 bytes of content, got 7"),
    ("content too long", _proto(content=b"\x00" * 9), "needs 8 bytes of content, got 9"),
    ("content missing", _proto(), "needs 8 bytes of content, got 0"),
    ("int64 content of int32 size", _proto(tensor_pb2.DT_INT64, (2,), b"\x00" * 8), "needs 16 bytes"),
    ("invalid dtype enum", _proto(dtype=99, content=b"\x00" * 8), "invalid dtype enum value 99"),
    ("DT_INVALID", _proto(dtype=tensor_pb2.DT_INVALID, content=b""), "invalid dtype enum value 0"),
    ("negative dim", _proto(dims=(2, -5), content=b""), "dimension -5 is invalid"),
    ("unknown dim", _proto(dims=(-1,), content=b""), "fully defined shape"),
    ("unknown rank", _proto(dims=(), unknown_rank=True, content=b""), "fully defined shape"),
    ("rank over 64", _proto(dims=(1,) * 65, content=b"\x00" * 4), "rank 65 exceeds 64"),
    ("huge dims overflow", _proto(dims=(2**62, 2**62, 4), content=b""), "2\\^40"),
    ("dims just past the limit", _proto(dims=(2**20, 2**20, 2), content=b""), "2\\^40"),
    ("string count short", _proto(tensor_pb2.DT_STRING, (3,), strings=[b"a", b"b"]), "needs 3 string_val entries, got 2"),
    ("string count long", _proto(tensor_pb2.DT_STRING, (1,), strings=[b"a", b"b"]), "needs 1 string_val entries, got 2"),
    ("string with content", _proto(tensor_pb2.DT_STRING, (1,), content=b"x", strings=[b"a"]),
     "1 bytes of tensor_content"),
    ("numbers in string_val", _proto(tensor_pb2.DT_FLOAT, (2,), content=b"\x00" * 8, strings=[b"a"]),
     "has 1 string_val entries; only a string tensor"),
    ("bool byte 2", _proto(tensor_pb2.DT_BOOL, (3,), content=b"\x00\x01\x02"), "element 2 has byte value 2"),
    ("bool byte 255", _proto(tensor_pb2.DT_BOOL, (1,), content=b"\xff"), "byte value 255"),
]


@pytest.mark.parametrize("name, proto, message", MALFORMED, ids=[m[0] for m in MALFORMED])
def test_malformed_proto_raises_invalid_argument(name, proto, message):
    data = proto.SerializeToString()
    with pytest.raises(td.errors.InvalidArgumentError, match=message):
        _core.tensor_from_proto_bytes(data)
    with pytest.raises(td.errors.InvalidArgumentError, match=message):
        td.make_ndarray(proto)


@pytest.mark.parametrize("data", [b"\xff\xff\xff\xff", b"garbage that is not a proto", b"\x0a\xff\x01",
                                  b"\x1a\x10short"])
def test_garbage_bytes_raise_data_loss(data):
    with pytest.raises(td.errors.DataLossError, match="not a valid serialized TensorProto"):
        _core.tensor_from_proto_bytes(data)


def test_truncated_message_raises():
    data = td.make_tensor_proto(np.arange(100, dtype=np.float64)).SerializeToString()
    for cut in (1, 7, len(data) // 2, len(data) - 1):
        with pytest.raises((td.errors.DataLossError, td.errors.InvalidArgumentError)):
            _core.tensor_from_proto_bytes(data[:cut])


def test_empty_bytes_are_an_invalid_dtype():
    # Every field at its default: dtype DT_INVALID.
    with pytest.raises(td.errors.InvalidArgumentError, match="invalid dtype"):
        _core.tensor_from_proto_bytes(b"")


def test_random_bytes_never_crash():
    rng = np.random.default_rng(1234)
    valid = td.make_tensor_proto(np.arange(6, dtype=np.int32).reshape(2, 3)).SerializeToString()
    for i in range(400):
        if i % 2:
            data = rng.integers(0, 256, size=int(rng.integers(0, 64)), dtype=np.uint8).tobytes()
        else:  # flip bytes of a valid message: reaches deeper into the parser
            buf = bytearray(valid)
            for _ in range(int(rng.integers(1, 4))):
                buf[int(rng.integers(0, len(buf)))] = int(rng.integers(0, 256))
            data = bytes(buf)
        try:
            t = _core.tensor_from_proto_bytes(data)
        except td.errors.OpError:
            continue
        assert t.dtype in (td.float32, td.float64, td.int32, td.int64, td.bool, td.string)
        np.asarray(t)  # the parsed tensor is readable


def test_non_bytes_argument_is_a_type_error():
    with pytest.raises(TypeError):
        _core.tensor_from_proto_bytes("a str, not bytes")
