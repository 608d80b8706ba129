"""td.save / td.load for looms: one file (the treadle container, kind 2) with
the loom's metadata, its ops' batched functions and the values it reads
(variables saved as variables), so a saved loom runs without its Python code."""

import struct

from treadle import _core, errors, loom_pb2
from treadle.framework import graph_serialization
from treadle.framework.tensor import EagerTensor
from treadle.framework.variables import Variable
from treadle.io.container import MAGIC, read_container, write_container

KIND_LOOM = 2
FORMAT_VERSION = 1


def save_loom(loom, path):
    if loom._dry_run:
        raise ValueError("td.save: a loom built with dry_run=True has no functions to save")
    saved = loom_pb2.SavedLoom()
    saved.loom.ParseFromString(loom._loom_def)
    variable_index = {}

    def add(value, field):
        cap = field.add()
        if isinstance(value, Variable):
            if id(value) not in variable_index:
                variable_index[id(value)] = len(saved.variables)
                sv = saved.variables.add(name=value._name, trainable=value.trainable)
                graph_serialization.tensor_to_proto(value.read_value(), sv.value)
                graph_serialization.shape_to_proto(value.shape.dims, sv.shape)
            cap.variable = variable_index[id(value)]
        elif type(value) is EagerTensor:
            graph_serialization.tensor_to_proto(value, cap.constant)
        else:
            raise TypeError(f"td.save: cannot save the loom input {value!r}")

    for _, value, _ in loom._named:
        add(value, saved.named_tensors)
    for ts in loom._batch_input_order:
        add(loom._batch_inputs[ts], saved.batch_inputs)
    for value in loom._captures:
        add(value, saved.captures)
    write_container(path, (KIND_LOOM << 8) | FORMAT_VERSION, saved.SerializeToString())


def _file_kind(path):
    with open(path, "rb") as f:
        head = f.read(8)
    if len(head) < 8 or head[:4] != MAGIC:
        raise errors.DataLossError(None, None, f"{path}: not a treadle file")
    return struct.unpack("<I", head[4:8])[0] >> 8


def load_loom(path):
    """A td.loom.Loom from a file written by td.save(loom, path)."""
    from treadle.loom.loom import Loom
    kind = _file_kind(path)
    if kind != KIND_LOOM:
        raise errors.DataLossError(None, None, f"{path}: not a saved loom (file kind {kind})")
    payload = read_container(path, (KIND_LOOM << 8) | FORMAT_VERSION)
    saved = loom_pb2.SavedLoom()
    try:
        saved.ParseFromString(payload)
    except Exception as e:  # protobuf's DecodeError
        raise errors.DataLossError(None, None, f"{path}: not a valid SavedLoom: {e}") from None
    variables = [Variable(_core.tensor_from_proto_bytes(sv.value.SerializeToString()), trainable=sv.trainable,
                          name=sv.name or None) for sv in saved.variables]

    def value(cap, what):
        kind = cap.WhichOneof("kind")
        if kind == "variable":
            if not 0 <= cap.variable < len(variables):
                raise errors.DataLossError(None, None, f"{path}: {what} refers to variable {cap.variable} of "
                                                       f"{len(variables)}")
            return variables[cap.variable]
        if kind == "constant":
            return _core.tensor_from_proto_bytes(cap.constant.SerializeToString())
        raise errors.DataLossError(None, None, f"{path}: {what} has no value")

    md = saved.loom.metadata
    if len(saved.named_tensors) != len(md.named_tensors) or \
            len(saved.batch_inputs) != len(md.batch_input_type_shapes):
        raise errors.DataLossError(None, None, f"{path}: the saved values do not match the loom's metadata")
    named = [value(c, f"named tensor {i}") for i, c in enumerate(saved.named_tensors)]
    batch = [value(c, f"batch input {i}") for i, c in enumerate(saved.batch_inputs)]
    captures = [value(c, f"captured value {i}") for i, c in enumerate(saved.captures)]
    return Loom._restore(saved.loom, named, batch, captures)
