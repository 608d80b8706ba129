"""FuncGraph: the graph a Python function is traced into.

While a FuncGraph is the current graph (framework/context.py), every op call
adds a node to the graph's C++ builder (_core.GraphBuilder), which infers its
dtypes and shapes once, from the registry, and keeps its canonical attributes;
the Operation and SymbolicTensors Python sees are handles on that node. Eager
tensors from outside become captured inputs, and constants made during
tracing become Const nodes."""

import itertools
import linecache
import os
import sys

from treadle import _core, errors
from treadle.framework import context, dtypes, graph_serialization
from treadle.framework.graph_tensor import Operation, SymbolicTensor
from treadle.framework.op_execution import op_handle
from treadle.framework.op_def_library import SIGNATURES
from treadle.framework.tensor import EagerTensor, Tensor, convert_to_tensor
from treadle.framework.tensor_shape import TensorShape

_OUT_OF_SCOPE = ("{t!r} is out of scope and cannot be used here. Use return values, explicit Python locals or "
                 "treadle collections to access it. A tensor created inside a td.function exists only while "
                 "that function is being traced.")
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


_OWN_FILES = set()  # file names of treadle's modules met so far (a set test is cheaper than startswith)
_getframe = sys._getframe
_USER_DEPTH = {}  # op type -> (depth below _add_node of its user frame, treadle code that frame called) last time


def _is_own(frame):
    filename = frame.f_code.co_filename
    if filename in _OWN_FILES:
        return True
    if filename.startswith(_PACKAGE_DIR):
        _OWN_FILES.add(filename)
        return True
    return False


def _user_frame(frame):
    """The innermost frame at or above `frame` outside treadle's own modules
    (converted code keeps the user's file and line numbers), or None."""
    while frame is not None and _is_own(frame):
        frame = frame.f_back
    return frame


def _user_frame_of_op(op_type):
    """_user_frame of _add_node's caller, for an op of `op_type`. Each frame
    object a walk touches is made on demand (Python 3.11 makes them lazily),
    which is most of a walk's cost. An op type is mostly made along the same
    path, so the path it took last time is tried first, touching two frames:
    the user's at the same depth, called into the same treadle function."""
    last = _USER_DEPTH.get(op_type)
    if last is not None:
        depth, entry = last
        try:
            frame = _getframe(depth)
            filename = frame.f_code.co_filename
            if (filename not in _OWN_FILES and _getframe(depth - 1).f_code is entry
                    and not filename.startswith(_PACKAGE_DIR)):
                return frame
        except ValueError:  # the stack is shallower this time
            pass
    frame, depth, inner = _getframe(2), 2, None
    while frame is not None and _is_own(frame):
        frame, depth, inner = frame.f_back, depth + 1, frame
    if inner is not None:
        _USER_DEPTH[op_type] = (depth, inner.f_code)
    return frame


def _site_text(filename, lineno, function):
    line = linecache.getline(filename, lineno).strip()
    text = f'  File "{filename}", line {lineno}, in {function}'
    return text + (f"\n    {line}" if line else "")


def _out_of_scope_message(t):
    """The out-of-scope error for tensor `t`, as TensorFlow's: where `t` was
    defined (the user's line whose op made it), the graph it belongs to, and
    the user's line that used it."""
    message = _OUT_OF_SCOPE.format(t=t)
    return message + _defined_and_used_here(t)


def _defined_and_used_here(t):
    message = ""
    origin = t.op.origin if isinstance(t, SymbolicTensor) else None
    if origin is not None:
        message += f"\n\n{t!r} was defined here:\n{_site_text(*origin)}"
    graph = getattr(t, "graph", None)
    if graph is not None:
        message += (f"\n\nThe tensor {t!r} cannot be accessed from here, because it was defined in "
                    f"FuncGraph(name={graph.name}), which is out of scope.")
    frame = _user_frame(sys._getframe(1))
    if frame is not None:
        code = frame.f_code
        message += "\n\nIt is used here:\n" + _site_text(code.co_filename, frame.f_lineno, code.co_name)
    return message


def escaped_tensor_message(t):
    """The error for an op run eagerly on a tensor of a finished trace (as
    TensorFlow's, with where that tensor was defined)."""
    return ('An op outside of the function building code is being passed a "Graph" tensor. A tensor created '
            "inside a td.function exists only while that function is being traced: return it instead of keeping "
            f"it in a Python object.{_defined_and_used_here(t)}")


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
        # Whether stateful ops are ordered one after another and all run, needed by
        # a result or not (TensorFlow's automatic control dependencies).
        self.automatic_control_dependencies = True
        self.functions = {}         # name -> ConcreteFunction (.library_function(), .graph) it calls
        self.finalized = False
        self._builder = _core.GraphBuilder()  # the nodes, in C++; names are made unique there
        self._rewritten_ops = []  # ops changed in place since their node was last typed
        self._constants = {}  # node index -> tensor, of the small constants (shared by value)
        self._const_cache = {}  # id(value) -> (value, tensor), of the other constants
        self._literals = {}  # (Python number, its type, dtype hint) -> tensor (literal)
        self.variables = ()  # the td.Variables the function uses, set when its tracing ends
        self.trainable_variables = ()
        self._control_dependencies = []  # lists of ops, one per open td.control_dependencies block
        self.name_scope_prefix = ""  # the open td.name_scope's full name ("outer/inner/"), prefixed to op names
        self.used_scope_names = {}  # lowercased scope name -> times opened (td.name_scope makes them unique)

    @property
    def control_outputs(self):
        """The ops the function runs for their effects, needed by a result or not."""
        return list(self.stateful_ops) if self.automatic_control_dependencies else []

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
    def _add_node(self, name, op_type, inputs, attrs, control, handle=None):
        """Adds a node to the builder (inferred there) and its Operation here."""
        if self.name_scope_prefix:
            name = self.name_scope_prefix + name
        if self._rewritten_ops:
            self._retype_rewritten()
        index, name, out_dtypes, out_shapes = self._builder.add_node(
            name, handle or op_handle(op_type), inputs, attrs, [c._node for c in control] if control else ())
        op = Operation(self, index, name, op_type, inputs, control)
        # Where the user's code made it, for errors about its tensors later; the
        # code object and instruction offset only (the line is found on demand).
        frame = _user_frame_of_op(op_type)
        if frame is not None:
            op._origin = (frame.f_code, frame.f_lasti)
        if len(out_dtypes) == 1:  # most ops
            op.outputs = [SymbolicTensor(op, 0, out_dtypes[0], out_shapes[0])]
        else:
            op.outputs = [SymbolicTensor(op, i, d, s) for i, (d, s) in enumerate(zip(out_dtypes, out_shapes))]
        self.operations.append(op)
        return op

    def add_placeholder(self, dtype, shape, name="arg"):
        dtype = dtypes.as_dtype(dtype)
        t = self._add_node(name, "Placeholder", [], {"dtype": dtype, "shape": TensorShape(shape).dims}, []).outputs[0]
        self.inputs.append(t)
        return t

    def constant(self, value):
        """A Const node holding the EagerTensor `value`. Small numeric
        constants are shared by value (`x * 0.5` a hundred times makes one node)."""
        index = self._builder.find_constant(value)
        if index >= 0:
            return self._constants[index]
        cached = self._const_cache.get(id(value))
        if cached is not None and cached[0] is value:
            return cached[1]
        op = self._add_node("Const", "Const", [], {"value": value, "dtype": value.dtype}, [])
        op.value = value
        t = op.outputs[0]
        self._constants[op._node] = t
        self._builder.share_constant(op._node)
        self._const_cache[id(value)] = (value, t)
        return t

    capture_constant = constant

    def literal(self, value, dtype):
        """convert_to_tensor(value, dtype_hint=dtype) for a Python int or float
        `value` while this graph is built, remembered per graph: the conversion
        depends on nothing else, and a small constant is one node anyway."""
        key = (value, type(value), dtype)
        t = self._literals.get(key)
        if t is None:
            t = convert_to_tensor(value, dtype_hint=dtype)
            if value or type(value) is int:  # 0.0 == -0.0, but they are distinct constants
                self._literals[key] = t
        return t

    def capture(self, value, name=None):
        """The placeholder standing for an outside tensor (an eager tensor, or a
        tensor of an enclosing graph) inside this graph; made once per tensor."""
        if isinstance(value, SymbolicTensor) and value.graph is not self.outer_graph:
            if self._encloses_graph_of(value):
                # Made in a graph nested in this one or in one enclosing it (a loop
                # body or branch): as TensorFlow, InaccessibleTensorError, a ValueError.
                raise errors.InaccessibleTensorError(_out_of_scope_message(value))
            if value.graph.finalized or not value.graph.is_ancestor_of(self.outer_graph):
                raise TypeError(_out_of_scope_message(value))
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
                    raise TypeError(_out_of_scope_message(t))
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
        # Tensors of this graph (the usual case) go straight in; others are captured.
        inputs = [t if type(t) is SymbolicTensor and t.op.graph is self else self._graph_input(t) for t in inputs]
        kind = _op_kinds.get(op_type) or _op_kind(op_type)
        stateful = kind[1]
        control = []
        if stateful and self.stateful_ops and self.automatic_control_dependencies:
            control.append(self.stateful_ops[-1])
        for ops in self._control_dependencies:
            control.extend(op for op in ops if op not in control)
        op = self._add_node(name or op_type, op_type, inputs, attrs, control, kind[0])
        if stateful:
            self.stateful_ops.append(op)
        return op.outputs

    def create_noop(self, name="NoOp"):
        """A NoOp node (with the control inputs of the open control_dependencies
        blocks): what td.group returns."""
        control = []
        for ops in self._control_dependencies:
            control.extend(op for op in ops if op not in control)
        return self._add_node(name, "NoOp", [], None, control)

    def _rewritten(self, op):
        """Notes that `op` is being rewritten in place (Operation.attrs was set)."""
        if op not in self._rewritten_ops:
            self._rewritten_ops.append(op)

    def _retype_rewritten(self):
        """Re-types in the builder the nodes of ops rewritten in place, from
        their new inputs and attrs, and checks their Python outputs agree."""
        ops, self._rewritten_ops = self._rewritten_ops, []
        for op in ops:
            _, _, out_dtypes, _ = self._builder.replace_node(op._node, op.inputs, op.attrs,
                                                             [c._node for c in op.control_inputs])
            if [t.dtype for t in op.outputs] != list(out_dtypes):
                raise TypeError(f"rewriting {op!r} gave it outputs {[t.dtype.name for t in op.outputs]}, but its "
                                f"inputs and attrs give {[d.name for d in out_dtypes]}")

    def _refine_shape(self, tensor):
        """Tells the builder a tensor's shape was narrowed (Tensor.set_shape)."""
        if self._rewritten_ops:
            self._retype_rewritten()
        self._builder.refine_shape(tensor.op._node, tensor.value_index, tensor.shape.dims)

    def as_graph_def(self):
        """The graph as a GraphDef protobuf message (placeholders as nodes, with its function library)."""
        return graph_serialization.graph_def(self)

    def get_operations(self):
        return list(self.operations)

    def add_function(self, fn):
        """Makes a library function (a ConcreteFunction or a control-flow body) available to this graph."""
        self.functions[fn.name] = fn

    escaped_tensor_message = staticmethod(escaped_tensor_message)

    def __repr__(self):
        return f"<FuncGraph {self.name}: {len(self.operations)} ops>"


_op_kinds = {}  # op type -> (registry handle, stateful)


def _op_kind(op_type):
    """What create_op needs of op `op_type`, looked up once per op type."""
    kind = _op_kinds[op_type] = (op_handle(op_type), SIGNATURES[op_type].stateful)
    return kind


_counter = itertools.count()


def unique_function_name(base):
    """A process-unique library function name."""
    base = "".join(c if c.isalnum() or c == "_" else "_" for c in base)
    return f"__inference_{base}_{next(_counter)}"
