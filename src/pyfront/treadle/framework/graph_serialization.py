"""FuncGraph -> protobuf: GraphDef (Placeholders as nodes) for inspection and
saving, FunctionDef (Placeholders as arguments) for execution."""

from treadle import _core, graph_pb2, tensor_pb2
from treadle.framework import dtypes
from treadle.framework.op_def_library import SIGNATURES
from treadle.framework.tensor import EagerTensor

GRAPH_VERSION = 1
MIN_CONSUMER = 1


def shape_to_proto(shape, proto):
    """Fills a TensorShapeProto from a list of ints/None, or None for unknown rank."""
    proto.Clear()
    if shape is None:
        proto.unknown_rank = True
        return proto
    for d in shape:
        proto.dim.add().size = -1 if d is None else int(d)
    return proto


def tensor_to_proto(t, proto):
    proto.ParseFromString(_core.tensor_to_proto_bytes(t))
    return proto


def _set_attr(proto, attr_type, value):
    """Writes one attribute value into an AttrValue proto according to its registry type."""
    if attr_type == "int":
        proto.i = int(value)
    elif attr_type == "float":
        proto.f = float(value)
    elif attr_type == "bool":
        proto.b = bool(value)
    elif attr_type == "string":
        proto.s = value.encode() if isinstance(value, str) else bytes(value)
    elif attr_type == "type":
        proto.type = dtypes.as_dtype(value).as_datatype_enum
    elif attr_type == "shape":
        shape_to_proto(value if not hasattr(value, "dims") else value.dims, proto.shape)
    elif attr_type == "list(int)":
        proto.list.SetInParent()
        proto.list.i.extend(int(v) for v in value)
    elif attr_type == "list(type)":
        proto.list.SetInParent()
        proto.list.type.extend(dtypes.as_dtype(v).as_datatype_enum for v in value)
    elif attr_type == "list(shape)":
        proto.list.SetInParent()
        for s in value:
            shape_to_proto(s, proto.list.shape.add())
    elif attr_type == "tensor":
        if not isinstance(value, EagerTensor):
            raise TypeError(f"a tensor attribute needs an eager tensor value, got {value!r}")
        tensor_to_proto(value, proto.tensor)
    elif attr_type == "func":
        proto.func.name = value if isinstance(value, str) else value.name
    else:
        raise TypeError(f"unknown attribute type {attr_type}")


def _attr_types(op_type):
    return {a["name"]: a["type"] for a in SIGNATURES[op_type].attrs}


def _tensor_ref(t, arg_names):
    op = t.op
    if arg_names is not None and op.name in arg_names:
        return op.name
    return op.name if t.value_index == 0 else f"{op.name}:{t.value_index}"


def node_def(op, arg_names=None):
    """The NodeDef of an Operation. Inside a FunctionDef, placeholders are
    arguments and are referred to by name (`arg_names`)."""
    nd = graph_pb2.NodeDef(name=op.name, op=op.type)
    nd.input.extend(_tensor_ref(t, arg_names) for t in op.inputs)
    nd.input.extend("^" + c.name for c in op.control_inputs)
    types = _attr_types(op.type)
    for key, value in op.attrs.items():
        _set_attr(nd.attr[key], types[key], value)
    return nd


def _collect_library(graph, library, seen):
    for fn in graph.functions.values():
        if fn.name in seen:
            continue
        seen.add(fn.name)
        library.function.append(fn.function_def())
        _collect_library(fn.graph, library, seen)


def graph_def(graph):
    """A GraphDef of every node of `graph` plus the library functions it uses."""
    gd = graph_pb2.GraphDef()
    gd.versions.producer = GRAPH_VERSION
    gd.versions.min_consumer = MIN_CONSUMER
    for op in graph.operations:
        gd.node.append(node_def(op))
    _collect_library(graph, gd.library, set())
    return gd


def function_def(graph, name, outputs, is_stateful=None):
    """The FunctionDef of `graph` taking its placeholders (graph.inputs) as
    arguments and returning `outputs` (symbolic tensors of the graph)."""
    fd = graph_pb2.FunctionDef()
    fd.signature.name = name
    arg_names = set()
    for t in graph.inputs:
        arg = fd.signature.input_arg.add(name=t.op.name, type=t.dtype.as_datatype_enum)
        shape_to_proto(t.shape.dims, arg.shape)
        arg_names.add(t.op.name)
    for i, t in enumerate(outputs):
        out_name = f"output_{i}"
        arg = fd.signature.output_arg.add(name=out_name, type=t.dtype.as_datatype_enum)
        shape_to_proto(t.shape.dims, arg.shape)
        fd.ret[out_name] = _tensor_ref(t, arg_names)
    fd.signature.is_stateful = bool(graph.stateful_ops) if is_stateful is None else is_stateful
    for op in graph.operations:
        if op.type != "Placeholder":
            fd.node_def.append(node_def(op, arg_names))
    fd.control_ret.extend(op.name for op in graph.stateful_ops)
    return fd


def library_graph_def(root):
    """A GraphDef with no top-level nodes whose library holds `root` (an object
    with .name, .graph and .function_def()) and every function it calls."""
    gd = graph_pb2.GraphDef()
    gd.versions.producer = GRAPH_VERSION
    gd.versions.min_consumer = MIN_CONSUMER
    gd.library.function.append(root.function_def())
    _collect_library(root.graph, gd.library, {root.name})
    return gd


__all__ = ["graph_def", "function_def", "library_graph_def", "node_def", "shape_to_proto", "tensor_pb2"]
