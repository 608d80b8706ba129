"""FuncGraph: the graph a Python function is traced into.

While a FuncGraph is the current graph (framework/context.py), every op call
adds an Operation instead of running: shapes and dtypes come from the C++
registry's inference, eager tensors from outside become captured inputs, and
constants made during tracing become Const nodes."""

import itertools

from treadle import _core, errors
from treadle.framework import context, dtypes
from treadle.framework.graph_tensor import Operation, SymbolicTensor
from treadle.framework.op_execution import op_handle
from treadle.framework.op_def_library import SIGNATURES
from treadle.framework.tensor import EagerTensor, Tensor
from treadle.framework.tensor_shape import TensorShape

_OUT_OF_SCOPE = ("{t!r} is out of scope and cannot be used here. Use return values, explicit Python locals or "
                 "treadle collections to access it. A tensor created inside a td.function exists only while "
                 "that function is being traced.")


class FuncGraph:
    """A graph under construction, and once finished, the body of a function."""

    def __init__(self, name, outer_graph=None):
        self.name = name
        self.outer_graph = outer_graph
        self.operations = []
        self.inputs = []            # placeholders of the arguments, then of the captures
        self.outputs = []
        self.structured_outputs = None
        self.captures = {}          # id(external) -> (external tensor, internal placeholder)
        self.stateful_ops = []
        self.functions = {}         # name -> object with .function_def() and .library_functions()
        self.finalized = False
        self._names = {}
        self._const_cache = {}
        self.variables = []
        self._control_dependencies = []  # lists of ops, one per open td.control_dependencies block

    # -------------------------------------------------------------- naming
    def unique_name(self, base):
        base = base.replace("/", "_") or "node"
        n = self._names.get(base)
        if n is None:
            self._names[base] = 1
            return base
        while True:
            candidate = f"{base}_{n}"
            n += 1
            if candidate not in self._names:
                self._names[base] = n
                self._names[candidate] = 1
                return candidate

    # -------------------------------------------------------------- scoping
    def __enter__(self):
        context.push_graph(self)
        return self

    def __exit__(self, *exc):
        context.pop_graph(self)
        return False

    def is_ancestor_of(self, graph):
        while graph is not None:
            if graph is self:
                return True
            graph = graph.outer_graph
        return False

    def _encloses_graph_of(self, value):
        """True when `value` was made in a graph nested (at any depth) in this
        graph or in one of the graphs enclosing it (not made in an enclosing
        graph itself, which it may capture)."""
        if value.graph.is_ancestor_of(self):
            return False
        inner = value.graph.outer_graph
        while inner is not None:
            if inner.is_ancestor_of(self):
                return True
            inner = inner.outer_graph
        return False

    # -------------------------------------------------------------- nodes
    def add_placeholder(self, dtype, shape, name="arg"):
        dtype = dtypes.as_dtype(dtype)
        op = Operation(self, self.unique_name(name), "Placeholder", [], {"dtype": dtype, "shape": TensorShape(shape).dims})
        t = SymbolicTensor(op, 0, dtype, shape)
        op.outputs = [t]
        self.operations.append(op)
        self.inputs.append(t)
        return t

    def constant(self, value):
        """A Const node holding the EagerTensor `value`. Small numeric
        constants are shared by value (`x * 0.5` a hundred times makes one node)."""
        key = _constant_key(value)
        cached = self._const_cache.get(key)
        if cached is not None and (type(key) is tuple or cached[0] is value):
            return cached[1]
        op = Operation(self, self.unique_name("Const"), "Const", [], {"value": value, "dtype": value.dtype})
        op.value = value
        t = SymbolicTensor(op, 0, value.dtype, value._shape_tuple())
        op.outputs = [t]
        self.operations.append(op)
        self._const_cache[key] = (value, t)
        return t

    capture_constant = constant

    def capture(self, value, name=None):
        """The placeholder standing for an outside tensor (an eager tensor, or a
        tensor of an enclosing graph) inside this graph; made once per tensor."""
        if isinstance(value, SymbolicTensor) and value.graph is not self.outer_graph:
            if self._encloses_graph_of(value):
                # Made in a graph nested in this one or in one enclosing it (a loop
                # body or branch): as TensorFlow, InaccessibleTensorError, a ValueError.
                raise errors.InaccessibleTensorError(_OUT_OF_SCOPE.format(t=value))
            if value.graph.finalized or not value.graph.is_ancestor_of(self.outer_graph):
                raise TypeError(_OUT_OF_SCOPE.format(t=value))
            # Thread it through the graphs in between: this graph captures (and
            # keys) the enclosing graph's placeholder for it.
            value = self.outer_graph.capture(value)
        key = id(value)
        entry = self.captures.get(key)
        if entry is not None and entry[0] is value:
            return entry[1]
        placeholder = self.add_placeholder(value.dtype, value.shape, name or "capture")
        self.captures[key] = (value, placeholder)
        return placeholder

    def _graph_input(self, t):
        if isinstance(t, SymbolicTensor):
            if t.op.graph is self:
                if self.finalized:
                    raise TypeError(_OUT_OF_SCOPE.format(t=t))
                return t
            return self.capture(t)
        if type(t) is EagerTensor:
            return self.capture(t)
        if isinstance(t, Tensor):
            return t
        raise TypeError(f"expected a tensor, got {t!r}")

    def create_op(self, op_type, inputs, attrs=None, name=None):
        """Adds an op and returns its output tensors (dtypes and shapes from the registry)."""
        if self.finalized:
            raise RuntimeError(f"graph {self.name} is finished; no ops can be added to it")
        inputs = [self._graph_input(t) for t in inputs]
        values = [t.op.value if t.op.type == "Const" else None for t in inputs]
        out_dtypes, out_shapes, canonical = _core.infer(
            op_handle(op_type), [t.dtype for t in inputs], [t.shape.as_tuple() for t in inputs], values,
            attrs or {})
        sig = SIGNATURES[op_type]
        control = []
        if sig.stateful:
            if self.stateful_ops:
                control.append(self.stateful_ops[-1])
        for ops in self._control_dependencies:
            control.extend(op for op in ops if op not in control)
        op = Operation(self, self.unique_name(name or op_type), op_type, inputs, canonical, control)
        op.outputs = [SymbolicTensor(op, i, d, s) for i, (d, s) in enumerate(zip(out_dtypes, out_shapes))]
        self.operations.append(op)
        if sig.stateful:
            self.stateful_ops.append(op)
        return op.outputs

    def create_noop(self, name="NoOp"):
        """A NoOp node (with the control inputs of the open control_dependencies
        blocks): what td.group returns."""
        control = []
        for ops in self._control_dependencies:
            control.extend(op for op in ops if op not in control)
        op = Operation(self, self.unique_name(name), "NoOp", [], {}, control)
        self.operations.append(op)
        return op

    def as_graph_def(self):
        """The graph as a GraphDef protobuf message (placeholders as nodes, with its function library)."""
        from treadle.framework import graph_serialization
        return graph_serialization.graph_def(self)

    def get_operations(self):
        return list(self.operations)

    def add_function(self, fn):
        """Makes a library function (a ConcreteFunction or a control-flow body) available to this graph."""
        self.functions[fn.name] = fn

    def __repr__(self):
        return f"<FuncGraph {self.name}: {len(self.operations)} ops>"


_SMALL_CONSTANT = 16


def _constant_key(value):
    """Value key for small numeric tensors, identity otherwise."""
    dtype = value.dtype
    if (dtype.is_numeric or dtype == dtypes.bool) and value._num_elements() <= _SMALL_CONSTANT:
        return (dtype.as_datatype_enum, value._shape_tuple(), value._numpy_view().tobytes())
    return id(value)


_counter = itertools.count()


def unique_function_name(base):
    """A process-unique library function name."""
    base = "".join(c if c.isalnum() or c == "_" else "_" for c in base)
    return f"__inference_{base}_{next(_counter)}"
