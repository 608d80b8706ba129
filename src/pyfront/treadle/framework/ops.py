"""The single entry point every op call goes through."""

from treadle import _core
from treadle.framework import context

_handles = {}


def op_handle(op_name):
    """The C++ registry handle of `op_name` (cached)."""
    h = _handles.get(op_name)
    if h is None:
        h = _handles[op_name] = _core.lookup_op(op_name)
    return h


def execute(op_name, inputs, attrs=None, name=None):
    """Runs op `op_name` on `inputs` (tensors) with `attrs`, eagerly or by
    adding a node to the graph being built. Returns the list of outputs."""
    graph = context.current_graph()
    if graph is None:
        for t in inputs:
            if type(t) is not _core.EagerTensor:
                return _symbolic_execute(op_name, inputs, attrs, name, t)
        return _core.execute(op_handle(op_name), inputs, attrs)
    return graph.create_op(op_name, inputs, attrs, name=name)


def _symbolic_execute(op_name, inputs, attrs, name, offender):
    graph = getattr(offender, "graph", None)
    if graph is None:
        raise TypeError(f"{op_name}: expected tensors as inputs, got {offender!r}")
    return graph.create_op(op_name, inputs, attrs, name=name)
