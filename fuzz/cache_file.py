"""The fuzz kind of Dataset.cache(filename)'s files (src/cpp/data/cache_file.cc):
`<filename>.index`, one TFRecord record "treadle-cache v1\\n<count>\\n<dtype
names>", and `<filename>.data`, one record per element holding, per
component, its TensorProto's length (8 bytes, little-endian) and bytes.

An input is [dataset byte][index length: 4 bytes LE][index file][data file]:
the byte picks which fixture dataset reads the cache (mutating it reads a
cache against a dataset whose element_spec differs). The oracle decodes the
files on its own (Python's protobuf): an accepted cache must yield as many
elements as its index and its data file hold, each with the dataset's dtypes
and shapes and the values the TensorProtos hold, and reading must write
nothing."""

import os
import re
import struct
import tempfile

import numpy as np

import treadle as td
from treadle import tensor_pb2

from fuzz.base import Kind, Wrong, frame_records, mutate_records, split_records
from fuzz.mutate import INTERESTING_INTS, Mutator, mutate_message_bytes

_MAGIC = b"treadle-cache v1"
_DTYPE_NAMES = ["float32", "float64", "int32", "int64", "bool", "string", "int8", "uint8", "float16", "resource",
                "variant", "complex64", "", "float32float32", "\x00"]


def _fixtures():
    """The datasets a cache is read against; their element_specs differ in
    dtypes, shapes (known, unknown dimensions) and structure."""
    matrix = np.arange(6.0).reshape(2, 3)
    return [
        td.data.Dataset.range(5).map(lambda x: (x, td.cast(x, td.float32) * 0.5, td.fill([x], x))),
        td.data.Dataset.from_tensor_slices((["a", "bb", "ccc"], [[1, 2], [3, 4], [5, 6]])).batch(2),
        td.data.Dataset.range(0),
        td.data.Dataset.from_tensors({"m": matrix, "b": np.array([True, False, True])}).repeat(3),
        td.data.Dataset.range(3).map(lambda x: td.cast(td.fill([2, 3], x), td.float64)),
    ]


_DATASETS = []


def _dataset(which):
    if not _DATASETS:
        _DATASETS.extend(_fixtures())
    return _DATASETS[which % len(_DATASETS)]


def pack(which, index, data):
    return bytes([which % 256]) + struct.pack("<I", len(index)) + index + data


def unpack(data):
    """(dataset byte, index file, data file); a length that lies is bounded by the bytes there are."""
    if len(data) < 5:
        return (data[0] if data else 0), b"", b""
    n = min(struct.unpack("<I", data[1:5])[0], len(data) - 5)
    return data[0], data[5:5 + n], data[5 + n:]


def _components(record):
    """The length-prefixed components of a data record (None when the prefixes do not add up)."""
    out, at = [], 0
    while at < len(record):
        if len(record) - at < 8:
            return None
        n = struct.unpack("<Q", record[at:at + 8])[0]
        if n > len(record) - at - 8:
            return None
        out.append(record[at + 8:at + 8 + n])
        at += 8 + n
    return out


def _join(components):
    return b"".join(struct.pack("<Q", len(c)) + c for c in components)


# ---------------------------------------------------------------- mutation

def _mutate_index(rng, index):
    records = split_records(index)
    if not records or rng.random() < 0.1:
        return Mutator(rng).damage(index)
    lines = records[0].split(b"\n")
    r = rng.random()
    if r < 0.35 and len(lines) > 1:
        count = lines[1]
        choices = [str(rng.choice(INTERESTING_INTS)).encode(), b"-1", b"18446744073709551615",
                   b"18446744073709551616", b"", b"x", b" 3", b"3x", b"0x10", b"1e3"]
        if count.isdigit():
            choices += [str(int(count) + d).encode() for d in (-1, 1)]
        lines[1] = rng.choice(choices)
    elif r < 0.75 and len(lines) > 2:
        names = lines[2].split()
        op = rng.random()
        if names and op < 0.4:
            names[rng.randrange(len(names))] = rng.choice(_DTYPE_NAMES).encode()
        elif names and op < 0.6:
            del names[rng.randrange(len(names))]
        else:
            names.insert(rng.randrange(len(names) + 1), rng.choice(_DTYPE_NAMES).encode())
        lines[2] = b" ".join(names) + rng.choice([b" ", b"", b"\n", b"\t"])
    elif r < 0.85:
        lines[0] = rng.choice([_MAGIC[:-1], _MAGIC + b" ", b"treadle-cache v2", b""])
    else:
        lines.insert(rng.randrange(len(lines) + 1), rng.choice([b"", b"7", b"int64"]))
    text = b"\n".join(lines)
    return frame_records([text, text] if rng.random() < 0.05 else [text])


def _mutate_component(rng, component):
    r = rng.random()
    if r < 0.7:
        return mutate_message_bytes(rng, tensor_pb2.TensorProto, component)
    proto = tensor_pb2.TensorProto()
    try:
        proto.ParseFromString(component)
        dtype = td.as_dtype(proto.dtype) if proto.dtype else td.float32
        shape = [rng.randrange(4) for _ in range(rng.randrange(3))]
        value = np.full(shape, b"s", object) if dtype == td.string else np.zeros(shape, dtype.as_numpy_dtype)
        return td.make_tensor_proto(value).SerializeToString()  # the same dtype, likely another shape
    except Exception:  # noqa: BLE001 - a component already damaged, or a dtype NumPy has no zeros of
        return Mutator(rng).damage(component)


def _mutate_record(rng, record):
    components = _components(record)
    if not components or rng.random() < 0.1:
        return Mutator(rng).damage(record)
    i = rng.randrange(len(components))
    r = rng.random()
    if r < 0.6:
        components[i] = _mutate_component(rng, components[i])
    elif r < 0.75:
        del components[i]
    elif r < 0.85:
        components.insert(i, components[rng.randrange(len(components))])
    else:  # a length prefix that lies
        lie = rng.choice([0, len(components[i]) + 1, len(components[i]) - 1, 2 ** 31, 2 ** 63, 2 ** 64 - 1])
        joined = _join(components)
        at = sum(8 + len(c) for c in components[:i])
        return joined[:at] + struct.pack("<Q", max(lie, 0)) + joined[at + 8:]
    return _join(components)


def _mutate_data(rng, data):
    return mutate_records(rng, data, _mutate_record)


# ---------------------------------------------------------------- the oracle

def _index_count(index):
    """The element count the index file states, as Python reads it (None if it
    states none): after the magic line, whitespace-separated tokens, the
    count first."""
    records = split_records(index)
    if not records or len(records) != 1:
        return None
    magic, _, rest = records[0].partition(b"\n")
    tokens = rest.split()
    if magic != _MAGIC or not tokens or not re.fullmatch(rb"\+?[0-9]+", tokens[0]):
        return None
    return int(tokens[0])


def _decoded_elements(data):
    """The data file's elements as NumPy arrays, decoded by Python's protobuf
    (None where it parses something the C++ reader accepted differently: the
    two protobuf parsers differ on a few malformed encodings)."""
    records = split_records(data)
    if records is None:
        raise Wrong("the cache was read, but its data file's framing is broken")
    out = []
    for record in records:
        components = _components(record)
        if components is None:
            raise Wrong("the cache was read, but a record's component lengths do not add up")
        element = []
        for c in components:
            proto = tensor_pb2.TensorProto()
            try:
                proto.ParseFromString(c)
                element.append(td.make_ndarray(proto))
            except Exception:  # noqa: BLE001 - protobuf's DecodeError, or a proto make_ndarray refuses
                return None
        out.append(element)
    return out


def _same(a, b):
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype == object:
        return a.tolist() == b.tolist()
    return np.array_equal(a, b, equal_nan=a.dtype.kind in "fc")


def _check(got, specs, index, data):
    count = _index_count(index)
    if count is None:
        raise Wrong("the cache was read, but its index states no count")
    if len(got) != count:
        raise Wrong(f"{len(got)} elements read from a cache whose index says {count}")
    for k, element in enumerate(got):
        for c, (t, spec) in enumerate(zip(element, specs)):
            if t.dtype != spec.dtype or not spec.shape.is_compatible_with(t.shape):
                raise Wrong(f"element {k} component {c} is {t.dtype.name} {t.shape}, the dataset's spec {spec}")
    want = _decoded_elements(data)
    if want is None:
        return
    if len(want) != len(got):
        raise Wrong(f"{len(got)} elements read from a data file of {len(want)} records")
    for k, (element, expected) in enumerate(zip(got, want)):
        if len(element) != len(expected) or not all(_same(t.numpy(), e) for t, e in zip(element, expected)):
            raise Wrong(f"element {k} differs from what its record holds")


class CacheFileKind(Kind):
    name = "cache_file"

    def seeds(self):
        out = []
        for which in range(len(_fixtures())):
            with tempfile.TemporaryDirectory() as d:
                prefix = os.path.join(d, "cache")
                list(_dataset(which).cache(prefix))
                with open(prefix + ".index", "rb") as f:
                    index = f.read()
                with open(prefix + ".data", "rb") as f:
                    data = f.read()
            out.append(pack(which, index, data))
        return out

    def mutate(self, rng, data):
        which, index, body = unpack(data)
        r = rng.random()
        if r < 0.05:
            which = rng.randrange(256)  # the cache read against another dataset
        elif r < 0.1:
            return Mutator(rng).damage(data)
        elif r < 0.35:
            index = _mutate_index(rng, index)
        else:
            body = _mutate_data(rng, body)
        return pack(which, index, body)

    def consume(self, data):
        which, index, body = unpack(data)
        dataset = _dataset(which)
        specs = td.nest.flatten(dataset.element_spec)
        with tempfile.TemporaryDirectory() as d:
            prefix = os.path.join(d, "cache")
            for suffix, content in ((".index", index), (".data", body)):
                with open(prefix + suffix, "wb") as f:
                    f.write(content)
            got = [td.nest.flatten(element) for element in dataset.cache(prefix)]
            if sorted(os.listdir(d)) != ["cache.data", "cache.index"]:
                raise Wrong(f"reading the cache left {sorted(os.listdir(d))}")
        _check(got, specs, index, body)
