"""Traced graphs as C++ objects and, on request, as protobuf.

A finished function is a snapshot of its FuncGraph's C++ builder, a
_core.LibraryFunction, which Executables take as it is. Protobuf (GraphDef,
FunctionDef) is written by C++ only when asked for: td.save, as_graph_def(),
function_def(), printing."""

from treadle import _core, graph_pb2, tensor_pb2

GRAPH_VERSION = _core.GRAPH_VERSION
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


def library_function(graph, name, outputs):
    """The _core.LibraryFunction of `graph` as it is now: its placeholders
    (graph.inputs) as arguments, `outputs` (tensors of the graph) as results,
    its stateful ops run even when no result needs them."""
    for t in outputs:
        if getattr(t, "graph", None) is not graph:
            raise ValueError(f"function {name} returns {t!r}, which is not a tensor of its graph {graph.name}")
    if graph._rewritten_ops:
        graph._retype_rewritten()
    # Without automatic control dependencies, as in TensorFlow, the ops the
    # outputs do not need are pruned.
    ops = (graph.operations if graph.automatic_control_dependencies
           else ops_needed(graph, [t.op for t in outputs], given=[t.op for t in graph.inputs]))
    return graph._builder.make_function(
        name, [op._node for op in ops], [t.op._node for t in graph.inputs], outputs,
        [(t.dtype, t.shape.dims) for t in outputs], [op._node for op in graph.control_outputs], bool(graph.stateful_ops))


def ops_needed(graph, roots, given=()):
    """The ops of `graph` that the ops `roots` need, through inputs and control
    inputs, in graph order; the search stops at the ops `given` (and keeps them)."""
    needed = {id(op) for op in given}
    stack = list(roots)
    while stack:
        op = stack.pop()
        if id(op) in needed:
            continue
        needed.add(id(op))
        stack.extend(t.op for t in op.inputs)
        stack.extend(op.control_inputs)
    return [op for op in graph.operations if id(op) in needed]


def library_functions(roots=(), graph=None):
    """The LibraryFunctions of `roots` (objects with .name, .graph and
    .library_function(), as ConcreteFunction) and of every function they or
    `graph` call, each once, callers before callees."""
    out, seen = [], set()

    def visit(fn):
        if fn.name not in seen:
            seen.add(fn.name)
            out.append(fn.library_function())
            visit_graph(fn.graph)

    def visit_graph(g):
        for fn in g.functions.values():
            visit(fn)

    for root in roots:
        visit(root)
    if graph is not None:
        visit_graph(graph)
    return out


def graph_def(graph):
    """A GraphDef of every node of `graph` plus the library functions it uses."""
    if graph._rewritten_ops:
        graph._retype_rewritten()
    data = graph._builder.graph_def([op._node for op in graph.operations], library_functions(graph=graph))
    return graph_pb2.GraphDef.FromString(data)


def library_graph_def(*roots):
    """A GraphDef with no top-level nodes whose library holds `roots` and every
    function they call."""
    return graph_pb2.GraphDef.FromString(_core.library_graph_def(library_functions(roots)))


def merge_function_library(dst, src, seen=None):
    """Appends to FunctionDefLibrary `dst` each function of `src` whose name is
    not in `seen` (a set of names, updated; by default the names `dst` has):
    the one place function libraries are merged."""
    if seen is None:
        seen = {f.signature.name for f in dst.function}
    for fdef in src.function:
        if fdef.signature.name not in seen:
            seen.add(fdef.signature.name)
            dst.function.append(fdef)


__all__ = ["graph_def", "library_function", "library_functions", "library_graph_def", "merge_function_library",
           "shape_to_proto", "tensor_pb2"]
