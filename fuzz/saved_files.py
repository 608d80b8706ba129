"""The fuzz kinds of checkpoint files (td.train.Checkpoint) and saved models
(td.save of a td.Module: attributes, signatures, namedtuple and dict
structures). Their mutations work on the decoded SavedFile (the fields a
reader validates after the checksum: variable entries, tensor values,
declared shapes, structures, input signatures) and write the container
again with valid checksums, so every mutant gets past the CRC check.

Oracles. Checkpoint: a restore that fails changes no variable and creates no
optimizer slot, and its error names the file; a restore that succeeds gives
each tracked variable the value its entry holds. Saved model: what loads is
called with arguments for its declared signatures and must return what it
declares (fuzz.targets' saved-function oracle); a file refused is refused
with a treadle error that names it."""

import collections
import os
import tempfile

import numpy as np

import treadle as td
from treadle import _core, saved_pb2
from treadle.io.container import KIND_CHECKPOINT, KIND_FUNCTION, version_field

from fuzz.base import Kind, Wrong
from fuzz.mutate import INTERESTING_INTS, Mutator, mutate_message_bytes

CHECKPOINT_VERSION = version_field(KIND_CHECKPOINT, 1)
FUNCTION_VERSION = version_field(KIND_FUNCTION, 1)


def _container(version, payload):
    from fuzz.targets import container  # the one definition of the container's framing
    return container(version, payload)


def _payload(data):
    if len(data) < 20:
        return None
    return data[20:]


# ---------------------------------------------------------------- field-level mutation

_DTYPES = [1, 2, 3, 4, 5, 6, 7, 9, 10, 0, 20, 21, 999, -1]  # float, double, int32, ..., invalid enums
_FIELD_NAMES = ["x", "y", "class", "_x", "", "a b", "w", "w"]


def _mutate_tensor(rng, t):
    r = rng.random()
    if r < 0.25:
        t.dtype = rng.choice(_DTYPES) if rng.random() < 0.9 else t.dtype
    elif r < 0.5:
        dims = t.shape.dim
        if dims and rng.random() < 0.6:
            dims[rng.randrange(len(dims))].size = rng.choice(INTERESTING_INTS + [0, 1, 2, 3])
        elif dims and rng.random() < 0.5:
            del dims[rng.randrange(len(dims))]
        else:
            dims.add().size = rng.choice([0, 1, 2, 2 ** 31])
    elif r < 0.8:
        content = t.tensor_content
        cut = rng.randrange(len(content) + 1) if content else 0
        t.tensor_content = rng.choice([content[:cut], content + content[:rng.randint(1, 8)], b"", content * 2])
    else:
        t.ClearField(rng.choice(["tensor_content", "shape", "dtype", "string_val"]))


def _mutate_variable(rng, saved):
    if not saved.variables:
        return
    sv = saved.variables[rng.randrange(len(saved.variables))]
    r = rng.random()
    if r < 0.5:
        _mutate_tensor(rng, sv.value)
    elif r < 0.6:
        sv.ClearField("value")
    elif r < 0.75:
        dims = sv.shape.dim
        if dims:
            dims[rng.randrange(len(dims))].size = rng.choice([-2, -1, 0, 1, 5, 2 ** 40])
        else:
            dims.add().size = rng.choice([1, 3])
    elif r < 0.9:
        sv.name = rng.choice([v.name for v in saved.variables] + ["", "model/w/x", "optimizer/slots/w"])
    else:
        saved.variables.add().CopyFrom(sv)  # an entry twice


def _mutate_structure(rng, value):
    """One change somewhere in a StructuredValue tree."""
    kind = value.WhichOneof("kind")
    children = []
    if kind in ("tuple_value", "list_value"):
        children = getattr(value, kind).values
    elif kind == "dict_value":
        children = value.dict_value.values
    elif kind == "named_tuple_value":
        children = value.named_tuple_value.values
    if children and rng.random() < 0.6:
        return _mutate_structure(rng, children[rng.randrange(len(children))])
    r = rng.random()
    if kind == "named_tuple_value":
        n = value.named_tuple_value
        if r < 0.3 and n.fields:
            n.fields[rng.randrange(len(n.fields))] = rng.choice(_FIELD_NAMES)
        elif r < 0.5:
            n.name = rng.choice(["Pair", "not a name", "def", "_P", ""])
        elif r < 0.7:
            n.fields.append(rng.choice(_FIELD_NAMES))
        elif n.values:
            del n.values[rng.randrange(len(n.values))]
    elif kind == "dict_value":
        d = value.dict_value
        if r < 0.4 and d.keys:
            d.keys.append(d.keys[0])
        elif d.values:
            del d.values[rng.randrange(len(d.values))]
    elif kind == "tensor_spec_value":
        s = value.tensor_spec_value
        if r < 0.4:
            s.dtype = rng.choice(_DTYPES) if rng.random() < 0.8 else s.dtype
        elif r < 0.8:
            s.shape.dim.add().size = rng.choice([-2, -1, 0, 3, 2 ** 40])
        else:
            s.shape.unknown_rank = True
    elif kind in ("tuple_value", "list_value"):
        holder = getattr(value, kind)
        items = [saved_pb2.StructuredValue().FromString(v.SerializeToString()) for v in holder.values]
        value.Clear()
        target = value.list_value if kind == "tuple_value" else value.tuple_value  # a tuple made a list
        if items and r < 0.5:
            del items[rng.randrange(len(items))]
        target.SetInParent()
        target.values.extend(items)
    else:
        value.none_value.SetInParent()


def _mutate_function(rng, saved):
    if not saved.functions:
        return
    fn = saved.functions[rng.randrange(len(saved.functions))]
    r = rng.random()
    if r < 0.45:
        _mutate_structure(rng, fn.input_signature)
    elif r < 0.85:
        _mutate_structure(rng, fn.output_structure)
    elif r < 0.95 and fn.captures:
        cap = fn.captures[rng.randrange(len(fn.captures))]
        if cap.WhichOneof("kind") == "variable":
            cap.variable = rng.choice([-1, 0, 1, len(saved.variables), 2 ** 31 - 1])
        else:
            _mutate_tensor(rng, cap.constant)
    else:
        fn.parameter_names.append(rng.choice(_FIELD_NAMES))


def mutate_saved(rng, data, version, targeted):
    """A mutant of a treadle file holding a SavedFile: field-level changes of
    the decoded message (`targeted`: the functions that pick the fields a
    reader validates; otherwise any field, through the descriptors), written
    back with a valid checksum; one time in twenty the bytes are damaged."""
    payload = _payload(data)
    saved = saved_pb2.SavedFile()
    try:
        saved.ParseFromString(payload or b"")
    except Exception:  # protobuf's DecodeError: a mutant whose bytes were damaged
        return Mutator(rng).damage(data)
    if rng.random() < 0.05:
        return Mutator(rng).damage(data)
    if rng.random() < 0.7:
        for _ in range(rng.choice([1, 1, 2])):
            rng.choice(targeted)(rng, saved)
        return _container(version, saved.SerializeToString())
    return _container(version, mutate_message_bytes(rng, saved_pb2.SavedFile, payload, damage=0.02))


def _temp_path(data, suffix):
    fd, path = tempfile.mkstemp(suffix=suffix)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    return path


def _file_bytes(write, suffix):
    fd, path = tempfile.mkstemp(suffix=suffix)
    os.close(fd)
    try:
        write(path)
        with open(path, "rb") as f:
            return f.read()
    finally:
        os.unlink(path)


# ---------------------------------------------------------------- checkpoints

class _Dense(td.Module):
    def __init__(self):
        super().__init__()
        self.w = td.Variable(np.zeros((2, 3), np.float32))
        self.b = td.Variable(np.zeros(3, np.float32))
        self.steps = [td.Variable(np.int64(0)), td.Variable(np.zeros(4, np.int32))]


def _objects():
    """A fresh tree of objects to restore into: a module, an optimizer (no slots yet), a float64 variable."""
    model, opt = _Dense(), td.optimizers.Adam(0.1)
    extra = td.Variable(np.zeros(5, np.float64))
    ckpt = td.train.Checkpoint(model=model, optimizer=opt, extra=extra)
    return ckpt, model, opt


def _trained(slots):
    ckpt, model, opt = _objects()
    model.w.assign(np.arange(6, dtype=np.float32).reshape(2, 3) - 2.5)
    model.b.assign(np.array([0.5, -1.0, 2.0], np.float32))
    model.steps[0].assign(np.int64(7))
    model.steps[1].assign(np.array([1, -2, 3, 2 ** 30], np.int32))
    ckpt.extra.assign(np.linspace(-1, 1, 5))
    if slots:
        with td.GradientTape() as tape:
            loss = td.reduce_sum(model.w * model.w) + td.reduce_sum(model.b)
        opt.apply_gradients(zip(tape.gradient(loss, [model.w, model.b]), [model.w, model.b]))
    return ckpt


def _values(ckpt):
    walk = ckpt._walk()
    return {path: np.array(v.numpy(), copy=True) for path, v in list(walk.variables.items()) + walk.slots()}


class CheckpointKind(Kind):
    name = "checkpoint"
    seconds_share = 0.5  # half the CI run's time of the other kinds

    def seeds(self):
        return [_file_bytes(_trained(slots).write, ".ckpt") for slots in (False, True)]

    def mutate(self, rng, data):
        return mutate_saved(rng, data, CHECKPOINT_VERSION, [_mutate_variable, _mutate_variable, _mutate_function])

    def consume(self, data):
        ckpt, _, opt = _objects()
        before = _values(ckpt)
        path = _temp_path(data, ".ckpt")
        try:
            try:
                ckpt.restore(path)
            except MemoryError:
                raise
            except Exception as e:
                after = _values(ckpt)
                if opt._slots or set(after) != set(before) or any(
                        not np.array_equal(after[k], before[k]) for k in before):
                    raise Wrong(f"a failed restore ({type(e).__name__}) changed variables or made slots") from None
                if path not in str(e):
                    raise Wrong(f"the restore's error does not name the file: {e}") from None
                raise
            self._check_restored(ckpt, data)
        finally:
            os.unlink(path)

    @staticmethod
    def _check_restored(ckpt, data):
        saved = saved_pb2.SavedFile()
        saved.ParseFromString(_payload(data))
        entries = {sv.name: sv for sv in saved.variables}
        for path, value in _values(ckpt).items():
            sv = entries.get(path)
            if sv is None:
                continue
            want = _core.tensor_from_proto_bytes(sv.value.SerializeToString()).numpy()
            if want.dtype != value.dtype or want.shape != value.shape or not np.array_equal(
                    want, value, equal_nan=want.dtype.kind == "f"):
                raise Wrong(f"'{path}' restored as {value.dtype} {value.shape}, the file holds {want.dtype} "
                            f"{want.shape}")


# ---------------------------------------------------------------- saved models

Prediction = collections.namedtuple("Prediction", ["scores", "total"])


class _Model(td.Module):
    def __init__(self):
        super().__init__()
        self.w = td.Variable(np.array([[1.0, -2.0], [0.5, 3.0]], np.float32))
        self.bias = td.Variable(np.array([0.25, -0.25], np.float32))

    @td.function
    def __call__(self, x):
        y = td.matmul(x, self.w) + self.bias
        return Prediction(y, td.reduce_sum(y))

    @td.function
    def pair(self, inputs, scale=2.0):
        return {"sum": inputs["a"] + inputs["b"] * scale, "a": inputs["a"]}

    @td.function(input_signature=[td.TensorSpec([None, 2], td.float32)])
    def serve(self, x):
        return {"out": td.tanh(td.matmul(x, self.w))}


def _model_seeds():
    model = _Model()
    model(td.constant([[1.0, 2.0]]))
    model.pair({"a": td.constant([1.0]), "b": td.constant([2.0])})
    out = [_file_bytes(lambda p: td.save(model, p, signatures={"serving_default": model.serve}), ".td")]
    out.append(_file_bytes(lambda p: td.save(model, p), ".td"))
    return out


class SavedModelKind(Kind):
    name = "saved_model"
    seconds_share = 0.5  # half the CI run's time of the other kinds

    def seeds(self):
        return _model_seeds()

    def mutate(self, rng, data):
        return mutate_saved(rng, data, FUNCTION_VERSION, [_mutate_function, _mutate_function, _mutate_variable])

    def consume(self, data):
        from fuzz.targets import _call_loaded  # the saved-function oracle, defined once
        path = _temp_path(data, ".td")
        try:
            loaded = td.load(path)
        except td.errors.OpError as e:
            if path not in str(e):
                raise Wrong(f"the load error does not name the file: {e}") from None
            raise
        except MemoryError:
            raise
        except Exception as e:
            raise Wrong(f"the load raised {type(e).__name__}, not a treadle error naming the file: {e}") from None
        finally:
            os.unlink(path)
        try:
            _call_loaded(loaded)
        except (TypeError, ValueError) as e:  # a run-time error of the graph is an OpError
            raise Wrong(f"loaded, but a call with its declared signature fails: {type(e).__name__}: {e}") from None
        for key, signature in getattr(loaded, "signatures", {}).items():
            args, kwargs = signature.structured_input_signature
            if args and all(isinstance(s, td.TensorSpec) for s in args) and not kwargs:
                from fuzz.targets import _zeros_for
                result = signature(*[_zeros_for(s) for s in args])
                if not isinstance(result, dict):
                    raise Wrong(f"signature {key!r} returned a {type(result).__name__}, not a dict")

