"""The single entry point every op call goes through: `execute` (eagerly, or
by adding a node to the graph being traced), the registry handles it uses,
and the recorders (tapes, numeric checks) that see each call."""

from treadle import _core
from treadle.framework import context

_handles = {}

# While a GradientTape records (treadle/autodiff/tape.py), each function here
# sees every op call: (op_name, inputs, attrs, outputs, graph). The list is
# empty otherwise, so an op call pays one truth test for it.
op_recorders = []


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
        outputs = _core.execute(op_handle(op_name), inputs, attrs)
    else:
        outputs = graph.create_op(op_name, inputs, attrs, name=name)
    if op_recorders:
        for record in op_recorders:
            record(op_name, inputs, attrs, outputs, graph)
    return outputs


def _symbolic_execute(op_name, inputs, attrs, name, offender):
    graph = getattr(offender, "graph", None)
    if graph is None:
        raise TypeError(f"{op_name}: expected tensors as inputs, got {offender!r}")
    if getattr(graph, "finalized", False):  # a tensor that escaped a finished trace, used eagerly
        raise TypeError(graph.escaped_tensor_message(offender))
    outputs = graph.create_op(op_name, inputs, attrs, name=name)
    if op_recorders:
        for record in op_recorders:
            record(op_name, inputs, attrs, outputs, graph)
    return outputs
