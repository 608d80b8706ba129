"""The input kinds treadle reads, each with its valid seeds, its structure-aware
mutation and the code that consumes an input the way a user's program would
(load it, then run it), with an oracle for inputs that are accepted.

A consumer returns normally (accepted), raises one of REJECTIONS (rejected:
a Python exception saying what was wrong), or raises anything else, e.g.
Wrong from an oracle (wrong). Crashes and hangs are seen by the supervisor
(fuzz/run.py), which runs consumers in a worker process."""

import os
import random
import struct
import tempfile
import zlib

import numpy as np

import treadle as td
from treadle import _core, graph_pb2, loom_pb2, saved_pb2, tensor_pb2
from treadle.io.container import MAGIC
from treadle.loom import saving as loom_saving

# fuzz.targets' names for the supervisor, the worker and the tests, defined in fuzz.base
from fuzz.base import (DEADLINE_S, REJECTIONS, Kind, KnownFinding, Wrong, frame_records, mutate_records,  # noqa: F401
                       split_records)
from fuzz.cache_file import CacheFileKind
from fuzz.gzip_members import GzipMembersKind, inflate_all
from fuzz.pipelines import PipelineKind
from fuzz.saved_files import CheckpointKind, SavedModelKind
from fuzz.weave_faults import WeaveFaultsKind
from fuzz.mutate import Mutator, mutate_message_bytes

VEC = td.loom.TypeShape("float64", (3,))


class _Binary(td.loom.LoomOp):
    def __init__(self, fn):
        self._fn = fn
        super().__init__([VEC, VEC], [VEC])

    def instantiate_batch(self, inputs):
        return [self._fn(inputs[0], inputs[1])]


def fixture_loom(max_depth=None):
    """The loom that WeaverMessages, schedule files and LoomDefs are read against."""
    return td.loom.Loom(max_depth=max_depth,
                        named_tensors={"x": np.array([1.0, 2.0, 3.0]), "y": np.array([-1.0, 0.5, 2.0])},
                        named_ops={"add": _Binary(td.add), "mul": _Binary(td.multiply)},
                        batch_inputs={VEC: np.arange(12.0).reshape(4, 3)})


_LOOMS = {}


def _loom(max_depth=None):
    if max_depth not in _LOOMS:
        _LOOMS[max_depth] = fixture_loom(max_depth)
    return _LOOMS[max_depth]


def _weavers(loom):
    out = []
    w = loom.make_weaver()
    x, y = w.named_tensor("x"), w.named_tensor("y")
    a = w.op("add", [x, w.constant(np.array([0.5, -1.0, 2.0]))])[0]
    b = w.op("mul", [a, w.batch_input(VEC, 3)])[0]
    w.add_output(w.op("mul", [b, x])[0])
    w.add_output(a)
    w.add_output(y)
    out.append(w)
    w = loom.make_weaver()
    r = w.batch_input(VEC, 0)
    for i in range(5):
        r = w.op("add" if i % 2 else "mul", [r, w.named_tensor("x")])[0]
        w.add_output(r)
    out.append(w)
    w = loom.make_weaver()
    w.add_output(w.named_tensor("x"))
    out.append(w)
    return out


def _check_loom_outputs(loom, outputs):
    for ts, value in outputs.items():
        arr = value.numpy()
        if arr.dtype != np.dtype(ts.dtype.as_numpy_dtype) or arr.shape[1:] != tuple(ts.shape):
            raise Wrong(f"loom output of {ts} is {arr.dtype} {arr.shape}")


def _exercise_loom(loom):
    """Weaves what the loom's structure allows (its named tensors, each op on
    them) and runs it."""
    w = loom.make_weaver()
    by_ts = {}
    for name in loom.named_tensors:
        r = w.named_tensor(name)
        w.add_output(r)
        by_ts.setdefault(w.get_type_shape(r), []).append(r)
    for name in list(loom.named_ops)[:8]:
        ins = loom._metadata.ops[loom._op_index(name)].input_type_shapes
        try:
            args = [by_ts[loom.type_shapes[i]][0] for i in ins]
        except (KeyError, IndexError):
            continue
        for r in w.op(name, args):
            w.add_output(r)
    _check_loom_outputs(loom, loom(w))


# ---------------------------------------------------------------- files

def container(kind_version, payload):
    return struct.pack("<4sIQI", MAGIC, kind_version, len(payload), zlib.crc32(payload) & 0xFFFFFFFF) + payload


def _uncontain(data):
    if len(data) < 20:
        return None, None
    _, version, _, _ = struct.unpack("<4sIQI", data[:20])
    return version, data[20:]


def _write_temp(data, suffix):
    fd, path = tempfile.mkstemp(suffix=suffix)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    return path


def _saved_bytes(obj, suffix):
    """The bytes td.save writes for `obj` (through a temporary file)."""
    path = _write_temp(b"", suffix)
    try:
        td.save(obj, path)
        with open(path, "rb") as f:
            return f.read()
    finally:
        os.unlink(path)


def _mutate_container(rng, data, proto_cls):
    version, payload = _uncontain(data)
    if version is None or rng.random() < 0.05:
        return Mutator(rng).damage(data)
    mutant = mutate_message_bytes(rng, proto_cls, payload)
    r = rng.random()
    if r < 0.9:
        return container(version, mutant)
    head = bytearray(container(version, mutant))
    if r < 0.95:  # a length field that lies (the CRC stays that of the payload)
        head[8:16] = struct.pack("<Q", rng.choice([0, 1, len(mutant) + 1, 2 ** 31, 2 ** 34, 2 ** 34 + 1]))
    else:
        head[4:8] = struct.pack("<I", rng.choice([0, 1, 2, 0x101, 0x201, 0x102, 0xFFFFFFFF]))
    return bytes(head)


def _zeros_for(spec):
    """An argument for `spec`: zeros, or for strings a schedule of the fixture
    loom (the string inputs of the seeds are loom schedules)."""
    shape = [1 if d is None else d for d in (spec.shape.as_list() if spec.shape.rank is not None else [])]
    if spec.dtype == td.string:
        message = _weavers(_loom())[0].serialize()
        return td.constant(np.full(shape, message, dtype=object), dtype=td.string)
    if spec.dtype in (td.resource, td.variant):
        raise Unfeedable(spec)
    return td.zeros(shape, spec.dtype)


class Unfeedable(ValueError):
    """A graph input the harness cannot make a value for (a resource handle)."""


def _call_loaded(loaded):
    from treadle.util import nest
    for fn in loaded.functions:
        args, kwargs = fn.structured_input_signature
        values = nest.map_structure(lambda s: _zeros_for(s) if isinstance(s, td.TensorSpec) else s, (args, kwargs))
        result = fn(*values[0], **values[1])
        declared = [s for s in nest.flatten(fn.structured_outputs) if isinstance(s, td.TensorSpec)]
        got = [t for t in nest.flatten(result) if isinstance(t, td.Tensor)]
        if len(got) != len(declared):
            raise Wrong(f"{len(got)} outputs, {len(declared)} declared")
        for t, s in zip(got, declared):
            if t.dtype != s.dtype or not s.shape.is_compatible_with(t.shape):
                raise Wrong(f"output {t.dtype.name} {t.shape} where {s} is declared")


def _parse(proto_cls, data, what=None):
    """The harness's own parse (Python's protobuf, upb). With `what`, bytes it
    refuses are treadle's to refuse (the C++ reader parses them next).
    Without, treadle accepted them already; libprotobuf (C++) and upb differ
    on a few malformed encodings (a tag beyond 32 bits), so None then: the
    oracle checks what both parse."""
    msg = proto_cls()
    try:
        msg.ParseFromString(data)
    except Exception:  # protobuf's DecodeError
        if what is None:
            return None
        _core.Executable.from_function(data, "")  # raises treadle's DataLossError
        raise Wrong("treadle parsed a GraphDef protobuf cannot") from None
    return msg


# ---------------------------------------------------------------- kinds

class TensorProtoKind(Kind):
    name, proto = "tensor_proto", tensor_pb2.TensorProto

    def seeds(self):
        values = [np.arange(6, dtype=np.float32).reshape(2, 3), np.array([1, -2, 2 ** 40], np.int64),
                  np.array([True, False]), np.array([b"a", b"", b"xyz"], dtype=object), np.float64(2.5),
                  np.zeros((0, 3), np.int32), np.arange(24, dtype=np.int32).reshape(2, 3, 4)]
        return [td.make_tensor_proto(v).SerializeToString() for v in values]

    def consume(self, data):
        arr = np.array(_core.tensor_from_proto_bytes(data), copy=True)
        proto = _parse(tensor_pb2.TensorProto, data)
        if proto is None:
            return
        dims = tuple(d.size for d in proto.shape.dim)
        if arr.shape != dims:
            raise Wrong(f"shape {arr.shape}, declared {dims}")


class WeaverMessageKind(Kind):
    name, proto = "weaver_message", loom_pb2.WeaverMessage

    def seeds(self):
        return [w.serialize() for w in _weavers(_loom())]

    def consume(self, data):
        loom = _loom()
        w = loom.deserialize_weaver(data)
        _check_loom_outputs(loom, loom(w))
        unrolled = _loom(6)
        _check_loom_outputs(unrolled, unrolled(data))


class ScheduleFileKind(Kind):
    name = "schedule_file"

    def seeds(self):
        msgs = [w.serialize() for w in _weavers(_loom())]
        return [frame_records(msgs[:1]), frame_records(msgs), frame_records([])]

    def mutate(self, rng, data):
        return mutate_records(rng, data, lambda rng, record: mutate_message_bytes(rng, loom_pb2.WeaverMessage, record))

    def consume(self, data):
        loom = _loom()
        path = _write_temp(data, ".tfrecord")
        try:
            records = td.loom.read_schedules(path)
            if len(records) > len(data) // 16:
                raise Wrong(f"{len(records)} records in {len(data)} bytes")
            reader = _core.LoomScheduleReader(path)
            while True:
                batch = reader.read_batch(loom._spec, 2)
                if batch is None:
                    break
                _check_loom_outputs(loom, loom(batch[0]))
        finally:
            os.unlink(path)


def _saved_function_seeds():
    v = td.Variable(np.array([1.0, -2.0], np.float32), name="v")

    @td.function
    def arith(x):
        return x * 2.0 + v, {"sum": td.reduce_sum(x)}

    @td.function
    def loop(n):
        i, acc = td.constant(0), td.constant(0.0)
        while i < n:
            acc += td.cast(i, td.float32)
            i += 1
        return acc

    @td.function
    def branch(x):
        if td.reduce_sum(x) > 0:
            return td.tanh(x)
        return -x

    unrolled = _loom(6)
    message = _weavers(unrolled)[0].serialize()

    @td.function
    def loom_run(schedule):
        return unrolled._run(schedule)

    calls = [(arith, (td.constant([1.0, 2.0]),)), (loop, (td.constant(5),)),
             (branch, (td.constant([[1.0, -3.0]]),)), (loom_run, (td.constant(message),))]
    return calls


class SavedFunctionKind(Kind):
    name = "saved_function"

    def seeds(self):
        out = []
        for fn, args in _saved_function_seeds():
            fn(*args)
            out.append(_saved_bytes(fn, ".td"))
        return out

    def mutate(self, rng, data):
        return _mutate_container(rng, data, saved_pb2.SavedFile)

    def consume(self, data):
        path = _write_temp(data, ".td")
        try:
            loaded = td.load(path)
        finally:
            os.unlink(path)
        if isinstance(loaded, td.loom.Loom):
            _exercise_loom(loaded)
        else:
            _call_loaded(loaded)


class SavedLoomKind(Kind):
    name = "saved_loom"

    def seeds(self):
        return [_saved_bytes(loom, ".loom") for loom in (_loom(), _loom(6))]

    def mutate(self, rng, data):
        return _mutate_container(rng, data, loom_pb2.SavedLoom)

    consume = SavedFunctionKind.consume


class GraphDefKind(Kind):
    name, proto = "graph_def", graph_pb2.GraphDef

    def seeds(self):
        out = []
        for fn, args in _saved_function_seeds():
            out.append(fn.get_concrete_function(*args).library_graph_def().SerializeToString())
        return out

    def consume(self, data):
        g = _parse(graph_pb2.GraphDef, data, "GraphDef")
        for name in [f.signature.name for f in g.library.function][:4]:
            try:
                ex = _core.Executable.from_function(data, name)
            except REJECTIONS:
                continue
            try:
                args = [_zeros_for(td.TensorSpec(shape, dtype)) for dtype, shape in ex.input_signature]
            except Unfeedable:
                continue
            outs = ex.run(args)
            for t, (dtype, shape) in zip(outs, ex.output_signature):
                if t.dtype != dtype or not td.TensorShape(shape).is_compatible_with(t.shape):
                    raise Wrong(f"output {t.dtype.name} {t.shape} where the graph declares {dtype.name} {shape}")


class LoomDefKind(Kind):
    name, proto = "loom_def", loom_pb2.LoomDef

    def seeds(self):
        return [_loom().loom_def.SerializeToString(), _loom(6).loom_def.SerializeToString()]

    def consume(self, data):
        loom_def = _parse(loom_pb2.LoomDef, data)
        if loom_def is None:
            return
        capture_specs = loom_saving.check_loom_def(loom_def)
        md = loom_def.metadata
        from treadle.framework import dtypes
        try:
            ts = [td.loom.TypeShape(dtypes._ALL[t.dtype], tuple(t.shape), t.tag) for t in md.type_shapes]
        except (KeyError, IndexError):
            raise Wrong("check_loom_def accepted a LoomDef with an invalid type shape") from None
        try:
            named = [td.zeros(ts[n.type_shape].shape, ts[n.type_shape].dtype) for n in md.named_tensors]
            batch = [td.zeros((4,) + ts[i].shape, ts[i].dtype) for i in md.batch_input_type_shapes]
        except IndexError:
            raise Wrong("check_loom_def accepted a LoomDef with an invalid type shape index") from None
        captures = [td.zeros([1 if d is None else d for d in (shape or [])], dtype)
                    for _, dtype, shape in capture_specs]
        loom = loom_saving.restore_loom(loom_def, named, batch, captures)
        _exercise_loom(loom)


# ---------------------------------------------------------------- compressed record files

_COMPRESSIONS = ("GZIP", "ZLIB", "")  # the first byte of an input selects the one it is read with


def _compress(records, compression):
    framed = frame_records(records)
    if compression == "GZIP":
        import gzip
        return gzip.compress(framed, mtime=0)
    return zlib.compress(framed) if compression == "ZLIB" else framed


class CompressedRecordFileKind(Kind):
    """TFRecord files inside a GZIP or ZLIB stream, read by td.data and
    read_schedules with the compression the input's first byte names (the
    mutations sometimes change it: reading with the wrong compression must be
    refused, saying so)."""

    name = "compressed_record_file"

    def seeds(self):
        msgs = [w.serialize() for w in _weavers(_loom())]
        out = []
        for i, compression in enumerate(("GZIP", "ZLIB")):
            out.append(bytes([i]) + _compress(msgs, compression))
            out.append(bytes([i]) + _compress(msgs[:1] + [b"x" * 70000], compression))  # > one inflate chunk
            out.append(bytes([i]) + _compress([], compression))
        return out

    def mutate(self, rng, data):
        if not data:
            return bytes([rng.randrange(3)])
        which, body = data[0] % 3, data[1:]
        compression = _COMPRESSIONS[which]
        r = rng.random()
        if r < 0.05:
            return bytes([rng.randrange(3)]) + body  # read with another compression
        if r < 0.45:
            return data[:1] + Mutator(rng).damage(body)  # the compressed bytes damaged or cut
        plain = inflate_all(body, compression)
        records = split_records(plain) if plain is not None else None
        if records is None:
            return data[:1] + Mutator(rng).damage(body)
        # records changed, lengths that lie
        mutated = split_records(ScheduleFileKind().mutate(rng, frame_records(records)))
        framed = ScheduleFileKind().mutate(rng, frame_records(records)) if mutated is None else frame_records(mutated)
        if compression == "GZIP":
            import gzip
            body = gzip.compress(framed, mtime=0)
        else:
            body = zlib.compress(framed, rng.choice([0, 1, 6, 9])) if compression else framed
        if rng.random() < 0.1:
            body += Mutator(rng).damage(body[:16])  # trailing bytes after the stream
        return data[:1] + body

    def consume(self, data):
        if not data:
            return
        compression = _COMPRESSIONS[data[0] % 3]
        body = data[1:]
        path = _write_temp(body, ".tfrecord")
        try:
            got = [bytes(r.numpy()) for r in td.data.TFRecordDataset(path, compression_type=compression or None)]
            again = td.loom.read_schedules(path, compression_type=compression or None)
        finally:
            os.unlink(path)
        if got != list(again):
            raise Wrong("TFRecordDataset and read_schedules read different records")
        if not body:
            if got:
                raise Wrong("records read from an empty file")
            return
        plain = inflate_all(body, compression)
        if plain is None:
            raise Wrong(f"treadle read {len(got)} records from a {compression} file zlib refuses, finds cut short "
                        f"or finds bytes after")
        if split_records(plain) != got:
            raise Wrong("the records read differ from the decompressed file's framing")


# ---------------------------------------------------------------- Weaver.weave's bulk input

_CSR_FIELDS = ("node_op", "arg_splits", "arg_input", "arg_source", "arg_value", "arg_output", "outputs",
               "output_index")
_WEAVE_OPS = ("add", "mul")
_INT32_FIELDS = ("node_op", "arg_input", "arg_source", "arg_output", "output_index")  # int32 in the C++ Weaver


def _pack_csr(arrays):
    out = bytearray()
    for name in _CSR_FIELDS:
        a = np.asarray(arrays[name], np.int64).reshape(-1)
        out += struct.pack("<I", len(a)) + a.astype("<i8").tobytes()
    return bytes(out)


def _unpack_csr(data):
    """The arrays of an input; a length field is bounded by the bytes left
    (the harness must not allocate what the input claims: treadle must)."""
    arrays, at = {}, 0
    for name in _CSR_FIELDS:
        n = struct.unpack("<I", data[at:at + 4])[0] if at + 4 <= len(data) else 0
        at += 4
        n = min(n, max(0, (len(data) - at) // 8))
        arrays[name] = np.frombuffer(data[at:at + 8 * n], "<i8").copy() if n else np.zeros(0, np.int64)
        at += 8 * n
    return arrays


def _csr_seeds():
    """Two forests over the fixture loom: add/mul nodes on batch-input rows and named tensors."""
    nd = _sources()
    # nodes: 0 = add(b0, x); 1 = mul(n0, b2); 2 = add(n1, n0); 3 = mul(y, b3)
    first = {"node_op": [0, 1, 0, 1], "arg_splits": [0, 2, 4, 6, 8],
             "arg_input": [0, 1, 0, 1, 0, 1, 0, 1],
             "arg_source": [nd["BATCH_INPUT"], nd["NAMED_TENSOR"], nd["NODE"], nd["BATCH_INPUT"], nd["NODE"],
                            nd["NODE"], nd["NAMED_TENSOR"], nd["BATCH_INPUT"]],
             "arg_value": [0, 0, 0, 2, 1, 0, 1, 3], "arg_output": [0] * 8, "outputs": [2, 3, 1],
             "output_index": [0, 0, 0]}
    chain = {"node_op": [i % 2 for i in range(6)], "arg_splits": list(range(0, 13, 2)),
             "arg_input": [0, 1] * 6,
             "arg_source": [nd["BATCH_INPUT"], nd["BATCH_INPUT"]] + [nd["NODE"], nd["NAMED_TENSOR"]] * 5,
             "arg_value": [1, 2] + [v for i in range(5) for v in (i, i % 2)], "arg_output": [0] * 12,
             "outputs": [5, 0], "output_index": [0, 0]}
    return [first, chain]


def _sources():
    """Weaver.weave's argument sources by name."""
    return {k: getattr(td.loom.Weaver, k) for k in ("NODE", "BATCH_INPUT", "CONSTANT", "NAMED_TENSOR")}


class WeaveCsrKind(Kind):
    """Weaver.weave's bulk description (compressed sparse rows): arrays of
    wrong lengths, out-of-range ids and sources, arguments that refer to
    later nodes (cycles), huge offsets. An accepted description must run to
    the same outputs as the same nodes woven one Weaver call at a time."""

    name = "weave_csr"

    def seeds(self):
        return [_pack_csr(a) for a in _csr_seeds()]

    def mutate(self, rng, data):
        arrays = _unpack_csr(data)
        for _ in range(rng.choice([1, 1, 1, 2, 3])):
            name = rng.choice(_CSR_FIELDS)
            a = list(arrays[name])
            r = rng.random()
            if r < 0.35 and a:
                a[rng.randrange(len(a))] = rng.choice(INTERESTING + [len(a), len(a) - 1, -1, 4, 5])
            elif r < 0.5 and a:
                del a[rng.randrange(len(a))]
            elif r < 0.65:
                a.insert(rng.randrange(len(a) + 1), rng.choice(INTERESTING))
            elif r < 0.8 and name in ("arg_value", "arg_source") and a:
                a[rng.randrange(len(a))] = rng.randrange(-1, 8)  # a node later than its user: a cycle
            elif r < 0.9 and a:
                i, j = rng.randrange(len(a)), rng.randrange(len(a))
                a[i], a[j] = a[j], a[i]
            else:
                a = a + a  # doubled: lengths that disagree with the others
            arrays[name] = a
        out = _pack_csr(arrays)
        if rng.random() < 0.05:
            return Mutator(rng).damage(out)
        return out

    def consume(self, data):
        arrays = _unpack_csr(data)
        loom = _loom()
        w = loom.make_weaver()
        first = w.weave(list(_WEAVE_OPS), arrays["node_op"], arrays["arg_splits"], arrays["arg_input"],
                        arrays["arg_source"], arrays["arg_value"], arrays["arg_output"], arrays["outputs"],
                        arrays["output_index"])
        wide = [n for n in _INT32_FIELDS if arrays[n].size and (arrays[n].min() < -2 ** 31 or
                                                                 arrays[n].max() > 2 ** 31 - 1)]
        if wide:  # fuzz/regressions/weave_csr/int32-wraparound-*: they wrapped around once
            raise Wrong(f"weave accepted values of {', '.join(wide)} beyond int32")
        if len(first) != len(arrays["node_op"]):
            raise Wrong(f"{len(first)} node results for {len(arrays['node_op'])} nodes")
        got = loom(w)
        _check_loom_outputs(loom, got)
        want = loom(_weave_per_node(loom, arrays))
        for ts, value in want.items():
            if not np.array_equal(value.numpy(), got[ts].numpy()):
                raise Wrong(f"bulk weaving and per-node weaving differ for {ts}")


INTERESTING = [0, 1, -1, 2, 3, 7, 255, 2 ** 31 - 1, 2 ** 31, 2 ** 32, 2 ** 40, 2 ** 62, -2 ** 31, -2 ** 63]


def _weave_per_node(loom, a):
    """The oracle: the accepted description woven one Weaver call per node."""
    nd = _sources()
    w = loom.make_weaver()
    names = sorted(loom.named_tensors)
    results = []
    for i, op in enumerate(a["node_op"]):
        args = []
        for e in range(a["arg_splits"][i], a["arg_splits"][i + 1]):
            source, value = a["arg_source"][e], int(a["arg_value"][e])
            if source == nd["NODE"]:
                args.append(results[value][int(a["arg_output"][e])])
            elif source == nd["BATCH_INPUT"]:
                args.append(w.batch_input(VEC, value))
            elif source == nd["NAMED_TENSOR"]:
                args.append(w.named_tensor(names[value]))
            else:
                raise Wrong(f"weave accepted a {source} argument for a float64 vector input")
        results.append(w.op(_WEAVE_OPS[op], args))
    for node, k in zip(a["outputs"], a["output_index"]):
        w.add_output(results[int(node)][int(k)])
    return w


KINDS = {k.name: k for k in (TensorProtoKind(), WeaverMessageKind(), ScheduleFileKind(), SavedFunctionKind(),
                             SavedLoomKind(), GraphDefKind(), LoomDefKind(), CompressedRecordFileKind(),
                             WeaveCsrKind(), CacheFileKind(), CheckpointKind(), SavedModelKind(), PipelineKind(),
                             WeaveFaultsKind(), GzipMembersKind())}


def consume(kind, data):
    """Runs one input; returns 'accepted' or 'rejected: <exception type>', raises otherwise."""
    k = KINDS[kind]
    try:
        if k.deadline_s is None:
            k.consume(data)
        else:
            with td.experimental.deadline(k.deadline_s):
                k.consume(data)
    except k.rejections as e:
        return f"rejected: {type(e).__name__}"
    except KnownFinding as e:
        return f"known: {e}"
    return "accepted"


def rng_for(seed, kind):
    return random.Random(f"{seed}:{kind}")
