"""Hand-built GraphDefs for the executor tests: a tiny builder over
treadle.graph_pb2 that writes nodes, attrs and library functions directly, so
the C++ loader and executor are tested without the Python tracer."""

import numpy as np

import treadle as td
from treadle import _core, graph_pb2

F32, F64, I32, I64, BOOL, STRING = 1, 2, 3, 4, 5, 6
_NP_TO_ENUM = {np.float32: F32, np.float64: F64, np.int32: I32, np.int64: I64, np.bool_: BOOL}


class Shape:
    """A shape attr value: a list of ints/None, or None for unknown rank."""

    def __init__(self, dims):
        self.dims = dims


class Func:
    """A func attr value: the name of a library function."""

    def __init__(self, name):
        self.name = name


class DT:
    """A type attr value (a DataType enum number)."""

    def __init__(self, enum):
        self.enum = enum


def shape_proto(dims, proto):
    proto.Clear()
    if dims is None:
        proto.unknown_rank = True
    else:
        for d in dims:
            proto.dim.add().size = -1 if d is None else d
    return proto


def tensor_proto(value, proto):
    if isinstance(value, (bytes, str)) or (isinstance(value, np.ndarray) and value.dtype.kind in "OSU"):
        t = td.constant(value)
    else:
        t = td.constant(np.asarray(value))
    proto.ParseFromString(_core.tensor_to_proto_bytes(t))
    return proto


def set_attr(proto, value):
    """Writes a Python value into an AttrValue by its Python type."""
    if isinstance(value, DT):
        proto.type = value.enum
    elif isinstance(value, Shape):
        shape_proto(value.dims, proto.shape)
    elif isinstance(value, Func):
        proto.func.name = value.name
    elif isinstance(value, bool):
        proto.b = value
    elif isinstance(value, int):
        proto.i = value
    elif isinstance(value, float):
        proto.f = value
    elif isinstance(value, (str, bytes)):
        proto.s = value.encode() if isinstance(value, str) else value
    elif isinstance(value, np.ndarray) or np.isscalar(value):
        tensor_proto(value, proto.tensor)
    elif isinstance(value, list):
        proto.list.SetInParent()
        for v in value:
            if isinstance(v, DT):
                proto.list.type.append(v.enum)
            elif isinstance(v, Shape):
                shape_proto(v.dims, proto.list.shape.add())
            elif isinstance(v, int):
                proto.list.i.append(v)
            else:
                raise TypeError(f"unsupported list element {v!r}")
    else:
        raise TypeError(f"unsupported attr value {value!r}")


def types(*enums):
    return [DT(e) for e in enums]


class Body:
    """Adds nodes to a GraphDef or a FunctionDef (both have repeated NodeDefs)."""

    def __init__(self, nodes):
        self._nodes = nodes

    def node(self, name, op, inputs=(), **attrs):
        n = self._nodes.add()
        n.name, n.op = name, op
        n.input.extend(inputs)
        for key, value in attrs.items():
            set_attr(n.attr[key], value)
        return name

    def const(self, name, value):
        value = np.asarray(value)
        enum = STRING if value.dtype.kind in "OSU" else _NP_TO_ENUM[value.dtype.type]
        return self.node(name, "Const", value=value, dtype=DT(enum))

    def unary(self, op, x, name):
        return self.node(name, op, [x])

    def binary(self, op, x, y, name):
        return self.node(name, op, [x, y])


class GraphBuilder(Body):
    def __init__(self):
        self.gd = graph_pb2.GraphDef()
        self.gd.versions.producer = _core.GRAPH_VERSION
        super().__init__(self.gd.node)

    def placeholder(self, name, dtype=F32, shape=...):
        """shape: a list of ints/None, None for unknown rank, or left out (unknown)."""
        attrs = {"dtype": DT(dtype)}
        if shape is not ...:
            attrs["shape"] = Shape(shape)
        return self.node(name, "Placeholder", **attrs)

    def function(self, name, inputs, outputs, stateful=False):
        """Starts a library function. `inputs` / `outputs`: lists of
        (name, dtype) or (name, dtype, dims). Returns a FunctionBuilder."""
        fd = self.gd.library.function.add()
        fd.signature.name = name
        fd.signature.is_stateful = stateful
        for spec in inputs:
            _add_arg(fd.signature.input_arg, spec)
        for spec in outputs:
            _add_arg(fd.signature.output_arg, spec)
        return FunctionBuilder(fd)

    def bytes(self):
        return self.gd.SerializeToString()

    def executable(self, inputs, outputs):
        return _core.Executable(self.bytes(), inputs, outputs)

    def function_executable(self, name):
        return _core.Executable.from_function(self.bytes(), name)


def _add_arg(args, spec):
    arg = args.add()
    arg.name, arg.type = spec[0], spec[1]
    if len(spec) > 2:
        shape_proto(spec[2], arg.shape)


class FunctionBuilder(Body):
    def __init__(self, fd):
        self.fd = fd
        super().__init__(fd.node_def)

    def ret(self, **rets):
        for key, value in rets.items():
            self.fd.ret[key] = value
        return self

    def control_ret(self, *names):
        self.fd.control_ret.extend(names)
        return self


def tensor(value, dtype=None):
    return td.constant(np.asarray(value, dtype=dtype))


def run(exe, *args):
    """Runs an Executable on NumPy-convertible args; returns NumPy results."""
    return [r.numpy() for r in exe.run([a if isinstance(a, _core.EagerTensor) else tensor(a) for a in args])]
